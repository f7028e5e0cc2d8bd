"""Running a jaxpr through XLA: static segments, host-driven control flow, executable caches.

A ``Program`` plans a jaxpr once:

* ``Segment``: a run of equations that is one static XLA program once its integer inputs
  are baked in. It is lowered once (dynamic StableHLO), then specialized and compiled per
  concrete signature -- the shapes of its array inputs and the values of its *needed*
  integer inputs -- and cached in memory (and on disk, by the runtime).
* ``HostStep``: control flow whose carried shapes change between iterations (or whose
  branches produce different shapes). The host runs the loop or picks the branch, and
  the nested program runs as its own ``Program`` (compiled once per distinct shapes).

Most programs are a single segment; then the call path is: compute the key, look up
the executable, execute.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ..core.primitive import impl_rules
from .analysis import _FOLDABLE, dims_of, foldable_vars, is_scalar, needed_vars, statically_compilable
from .lru import BoundedCache
from .size_checks import check_sizes


class Stats:
    """Counters a ``qjit`` function reports through ``cache_info()``, and the size of the
    executable cache of each of its segments (``cache_size``)."""

    def __init__(self, cache_size: Optional[int] = None):
        self.cache_size = cache_size
        self.lowerings = 0
        self.specializations = 0
        self.compilations = 0
        self.disk_hits = 0
        self.host_steps = 0


def _is_int_scalar(v) -> bool:
    return v.aval.shape == () and np.issubdtype(v.aval.dtype, np.integer)


class Segment:
    """A jaxpr that compiles to one static executable per concrete signature."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], stats: Stats, describe_input=None):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.stats = stats
        need = needed_vars(jaxpr)
        self.baked = [i for i, v in enumerate(jaxpr.invars) if _is_int_scalar(v) and id(v) in need]
        baked = set(self.baked)
        self.runtime = [i for i in range(len(jaxpr.invars)) if i not in baked]
        self.lowered, self.host_eqns, self.host_vars = _host_sizes(jaxpr, [jaxpr.invars[i] for i in self.baked])
        self.describe_input = describe_input or (lambda i: f"input {i}")
        self._module_text: Optional[str] = None
        self._lowering_lock = threading.Lock()
        self.cache = BoundedCache(stats.cache_size)
        # introspection only (f.mlir_specialized, f.hlo): never read on a call path
        self.last_specialized: Optional[str] = None
        self.last_executable = None

    @property
    def module_text(self) -> str:
        if self._module_text is None:
            with self._lowering_lock:
                if self._module_text is None:
                    from ..lowering import module_text
                    self._module_text = module_text(ClosedJaxpr(self.lowered, self.consts))
                    self.stats.lowerings += 1
        return self._module_text

    def executable(self, args: Sequence[Any]):
        """The executable for concrete inputs, chosen by the runtime inputs' shapes and the
        baked integers' values (compiled once per such key, whatever the threads)."""
        key = (tuple([np.shape(args[i]) for i in self.runtime]), tuple([int(args[i]) for i in self.baked]))
        exe = self.cache.get(key)
        if exe is None:
            exe = self.cache.get_or_fill(key, lambda: self._compile(args))
        self.last_executable = exe
        return exe

    def run(self, args: Sequence[Any]) -> List[np.ndarray]:
        """Run on concrete inputs (see ``executable``)."""
        return self.executable(args)(*[args[i] for i in self.runtime])

    def _compile(self, args):
        from .. import runtime
        baked_values = {i: int(args[i]) for i in self.baked}
        check_sizes(self.jaxpr, {id(self.jaxpr.invars[i]): v for i, v in baked_values.items()},
                    self.describe_input, {id(self.jaxpr.invars[i]): i for i in baked_values})
        arg_types = [None] * len(self.lowered.invars)
        for i in self.runtime:
            v = self.jaxpr.invars[i]
            arg_types[i] = runtime.static_type_string(np.shape(args[i]), v.aval.dtype)
        n = len(self.jaxpr.invars)
        host = _evaluate(self.host_eqns, {id(self.jaxpr.invars[i]): v for i, v in baked_values.items()})
        baked_values.update({n + j: host[id(v)] for j, v in enumerate(self.host_vars)})
        text = runtime.specialize(self.module_text, arg_types, baked_values)
        self.stats.specializations += 1
        exe, hit = runtime.compile_cached(text, return_hit=True)
        if hit:
            self.stats.disk_hits += 1
        else:
            self.stats.compilations += 1
        self.last_specialized = text
        return exe


def _host_sizes(jaxpr: Jaxpr, baked: Sequence[Var]):
    """Integer scalars computed from the baked inputs (sizes, slice bounds, ...) are computed
    on the host and baked as well: the lowered jaxpr takes them as extra trailing inputs
    instead of computing them, so specialization never has to fold their arithmetic (shape
    refinement folds only some scalar ops: ``neg``, ``select_n``, float->int converts stay).

    Returns ``(lowered jaxpr, the equations to evaluate on the host, the promoted vars)``."""
    from ..core.staging import live_equations
    known = {id(v) for v in baked}
    host_eqns, promoted = [], []
    for eqn in jaxpr.eqns:
        if eqn.primitive in _FOLDABLE and all(is_scalar(v) for v in eqn.outvars) and all(
                isinstance(a, Literal) or id(a) in known for a in eqn.invars):
            host_eqns.append(eqn)
            known.update(id(v) for v in eqn.outvars)
            promoted += [v for v in eqn.outvars if _is_int_scalar(v)]
    if not promoted:
        return jaxpr, [], []
    done = {id(v) for v in promoted}
    rest = [e for e in jaxpr.eqns if not all(id(v) in done for v in e.outvars)]
    rest = live_equations(rest, jaxpr.outvars)
    used = {id(a) for e in rest for a in e.invars} | {id(v) for v in jaxpr.outvars}
    for e in rest:
        for v in list(e.invars) + list(e.outvars):
            used.update(id(d) for d in dims_of(v.aval))
    promoted = [v for v in promoted if id(v) in used]
    lowered = Jaxpr(jaxpr.constvars, list(jaxpr.invars) + promoted, rest, jaxpr.outvars)
    return lowered, host_eqns, promoted


def _evaluate(eqns, env: Dict[int, int]) -> Dict[int, int]:
    """Run scalar equations on the host with their numpy impls (``env``: var id -> value)."""
    env = dict(env)
    for eqn in eqns:
        vals = [a.val if isinstance(a, Literal) else env[id(a)] for a in eqn.invars]
        outs = impl_rules[eqn.primitive](*[np.asarray(x) for x in vals], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = np.asarray(x).item()
    return env


def _owned(x: np.ndarray, borrowed: Sequence[np.ndarray]) -> np.ndarray:
    """``x``, or a copy of it when it shares memory with an argument or a constant of the
    program (a loop that ran zero times, a branch returning its input): results never
    alias what the caller passed in, nor the program's own constants."""
    if any(np.may_share_memory(x, b) for b in borrowed):
        return x.copy()
    return x


class HostStep:
    """A control-flow equation driven from the host."""

    def __init__(self, eqn, stats: Stats):
        self.eqn = eqn
        self.stats = stats
        self.programs: Dict[int, "Program"] = {}
        self._lock = threading.Lock()

    def program(self, jaxpr: Jaxpr) -> "Program":
        p = self.programs.get(id(jaxpr))
        if p is None:
            with self._lock:
                p = self.programs.get(id(jaxpr))
                if p is None:
                    p = self.programs[id(jaxpr)] = Program(jaxpr, [], self.stats)
        return p

    def run(self, invals: List[Any]) -> List[Any]:
        from ..control_flow.primitives import cond_p, for_loop_p, scan_p, while_loop_p
        self.stats.host_steps += 1
        eqn, p = self.eqn, self.eqn.params
        if eqn.primitive is for_loop_p:
            nc = p["body_nconsts"]
            consts = invals[:nc]
            lower, upper, step = (int(x) for x in invals[nc:nc + 3])
            carries = list(invals[nc + 4:])
            if step == 0:
                raise ValueError("for_loop: step must not be zero (the loop would never end)")
            body = self.program(p["body_jaxpr"])
            i = lower
            while (i < upper) if step > 0 else (i > upper):
                carries = body.run([*consts, np.int64(i), *carries])
                i += step
            return carries
        if eqn.primitive is while_loop_p:
            cc, bc = p["cond_nconsts"], p["body_nconsts"]
            cconsts, bconsts, carries = invals[:cc], invals[cc:cc + bc], list(invals[cc + bc:])
            cond, body = self.program(p["cond_jaxpr"]), self.program(p["body_jaxpr"])
            while bool(cond.run([*cconsts, *carries])[0]):
                carries = body.run([*bconsts, *carries])
            return carries
        if eqn.primitive is cond_p:
            branches = p["branches"]
            i = min(max(int(invals[0]), 0), len(branches) - 1)
            return self.program(branches[i]).run(list(invals[1:]))
        if eqn.primitive is scan_p:
            nc, ncarry = p["num_consts"], p["num_carry"]
            consts, length, rest = invals[:nc], int(invals[nc]), invals[nc + 1:]
            carries, xs = list(rest[:ncarry]), [np.asarray(x) for x in rest[ncarry:]]
            body = self.program(p["jaxpr"])
            ys = []
            order = range(length - 1, -1, -1) if p["reverse"] else range(length)
            for t in order:
                outs = body.run([*consts, *carries, *[x[t] for x in xs]])
                carries, y = outs[:ncarry], outs[ncarry:]
                ys.append(y)
            if p["reverse"]:
                ys.reverse()
            if ys:
                stacked = [np.stack([np.asarray(y[j]) for y in ys]) for j in range(len(ys[0]))]
            else:  # no iteration: the eager rule knows the empty shapes
                return impl_rules[scan_p](*invals, **p)
            return carries + stacked
        return impl_rules[eqn.primitive](*invals, **p)


class Program:
    """A jaxpr planned into segments and host steps; ``run(args)`` gives its outputs."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], stats: Optional[Stats] = None,
                 describe_input=None):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.stats = stats or Stats()
        self.describe_input = describe_input
        self.steps = self._plan()
        self.single = self.steps[0] if len(self.steps) == 1 and isinstance(self.steps[0], Segment) \
            and self.steps[0].jaxpr is jaxpr else None

    def _plan(self):
        jx = self.jaxpr
        if self._compilable_as_one():
            return [Segment(jx, self.consts, self.stats, self.describe_input)]
        steps: List[Any] = []
        cur: List[Any] = []
        outside: set = {id(v) for v in list(jx.invars) + list(jx.constvars) if _is_int_scalar(v)}
        inside_fold: set = set()
        for eqn in jx.eqns:
            fold = outside | inside_fold
            if statically_compilable(eqn, fold):
                cur.append(eqn)
                if eqn.primitive in _FOLDABLE and all(
                        isinstance(a, Literal) or id(a) in fold for a in eqn.invars):
                    inside_fold.update(id(v) for v in eqn.outvars if is_scalar(v))
            else:
                if cur:
                    steps.append(cur)
                    cur = []
                for e in (x for seg in steps if isinstance(seg, list) for x in seg):
                    outside.update(id(v) for v in e.outvars if _is_int_scalar(v))
                outside.update(id(v) for s in steps if isinstance(s, HostStep) for v in s.eqn.outvars
                               if _is_int_scalar(v))
                inside_fold = set()
                if statically_compilable(eqn, outside):
                    cur = [eqn]
                else:
                    steps.append(HostStep(eqn, self.stats))
                    outside.update(id(v) for v in eqn.outvars if _is_int_scalar(v))
        if cur:
            steps.append(cur)
        return [self._segment(s, i, steps) if isinstance(s, list) else s for i, s in enumerate(steps)]

    def _compilable_as_one(self) -> bool:
        jx = self.jaxpr
        fold = foldable_vars(jx, [v for v in jx.invars if _is_int_scalar(v)])
        return all(statically_compilable(e, fold) for e in jx.eqns)

    def _segment(self, eqns, index, steps) -> Segment:
        """A sub-jaxpr for a run of equations: free variables in, later-used variables out."""
        jx = self.jaxpr
        defined = {id(v) for e in eqns for v in e.outvars}
        consts = {id(v): c for v, c in zip(jx.constvars, self.consts)}
        free: List[Var] = []
        seen = set()

        def use(a):
            if isinstance(a, Var) and id(a) not in defined and id(a) not in seen:
                for d in dims_of(a.aval):
                    use(d)
                seen.add(id(a))
                free.append(a)
        for e in eqns:
            for a in e.invars:
                use(a)
            for o in e.outvars:
                for d in dims_of(o.aval):
                    use(d)
        later = set()
        for s in steps[index + 1:]:
            for e in (s if isinstance(s, list) else [s.eqn]):
                for a in e.invars:
                    if isinstance(a, Var):
                        later.add(id(a))
                        later.update(id(d) for d in dims_of(a.aval))
                for o in e.outvars:
                    later.update(id(d) for d in dims_of(o.aval))
        for a in jx.outvars:
            if isinstance(a, Var):
                later.add(id(a))
                later.update(id(d) for d in dims_of(a.aval))
        outs = [v for e in eqns for v in e.outvars if id(v) in later]
        constvars = [v for v in free if id(v) in consts]
        invars = [v for v in free if id(v) not in consts]
        invars.sort(key=lambda v: not _is_int_scalar(v))   # dims before the arrays using them
        sub = Jaxpr(constvars, invars, eqns, outs)
        seg = Segment(sub, [consts[id(v)] for v in constvars], self.stats)
        return seg

    def run(self, args: Sequence[Any]) -> List[Any]:
        if self.single is not None:
            return self.single.run(args)
        jx = self.jaxpr
        env: Dict[int, Any] = {}
        for v, c in zip(jx.constvars, self.consts):
            env[id(v)] = c
        for v, x in zip(jx.invars, args):
            env[id(v)] = x

        def read(a):
            return a.val if isinstance(a, Literal) else env[id(a)]
        for step in self.steps:
            if isinstance(step, Segment):
                outs = step.run([read(v) for v in step.jaxpr.invars])
                outvars = step.jaxpr.outvars
            else:
                outs = step.run([read(a) for a in step.eqn.invars])
                outvars = step.eqn.outvars
            for v, x in zip(outvars, outs):
                env[id(v)] = x
        borrowed = [x for x in list(args) + self.consts if isinstance(x, np.ndarray)]
        return [_owned(np.asarray(read(a)), borrowed) for a in jx.outvars]

    # --- introspection for qjit ------------------------------------------------------------
    def segments(self) -> List[Segment]:
        out = [s for s in self.steps if isinstance(s, Segment)]
        for s in self.steps:
            if isinstance(s, HostStep):
                for p in s.programs.values():
                    out += p.segments()
        return out
