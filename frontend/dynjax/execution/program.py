"""Running a jaxpr through XLA: static segments, host-driven control flow, executable caches.

A ``Program`` plans a jaxpr once:

* ``Segment`` (``segment.py``): a run of equations that is one static XLA program once its
  integer inputs are baked in. It is lowered once (dynamic StableHLO), then specialized and
  compiled per concrete signature -- the shapes of its array inputs and the values of its
  *needed* integer inputs -- and cached in memory (and on disk, by the runtime).
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

from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.primitive import impl_rules
from . import tiers
from .analysis import _FOLDABLE, dims_of, foldable_vars, is_scalar, statically_compilable
from .analysis import is_int_scalar as _is_int_scalar
from .padded_runs import CapacityProgram, jaxpr_of_equation, resizing_loops
from .padding import MIN_BUCKET, NotPaddable, pad_jaxpr
from .segment import Segment, _owned
from .stats import Stats  # noqa: F401  (re-exported: Program(..., stats))


class HostStep:
    """A control-flow equation driven from the host.

    A loop whose carried sizes change runs on device where it can, in capacity executables
    (``padded_runs.CapacityProgram`` of a program made of this one equation); otherwise
    (and with ``DYNJAX_TIERS=exact``) the host runs every iteration itself, each as a
    ``Program`` of its own.

    ``inputs``: the variables to pass to ``run``, the equation's operands then the sizes
    their types use."""

    def __init__(self, eqn, stats: Stats):
        self.eqn = eqn
        self.stats = stats
        self.programs: Dict[int, "Program"] = {}
        self._lock = threading.Lock()
        operand_ids = {id(a) for a in eqn.invars}
        extra = []
        for a in eqn.invars:
            for d in dims_of(a.aval):
                if id(d) not in operand_ids and all(d is not x for x in extra):
                    extra.append(d)
        self.inputs = list(eqn.invars) + extra
        self.capacity = None
        if eqn.params.get("nimplicit", 0) > 0:
            sub = jaxpr_of_equation(eqn, extra)
            position = {id(a): k for k, a in enumerate(self.inputs)}
            self._capacity_args = [position[id(v)] for v in sub.invars]
            self.capacity = CapacityProgram(sub, [], stats)

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
        if self.capacity is not None and tiers.policy() != "exact":
            outs = self.capacity.run([invals[k] for k in self._capacity_args])
            if outs is not None:
                return outs
        invals = invals[:len(eqn.invars)]
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
        # a program with resizing loops runs as one padded executable where it can
        self.capacity = CapacityProgram(jaxpr, consts, self.stats, describe_input) \
            if self.single is None and resizing_loops(jaxpr) else None

    def _plan(self):
        jx = self.jaxpr
        if self._compilable_as_one():
            return [Segment(jx, self.consts, self.stats, self.describe_input)]
        if self._paddable_as_one():
            return [Segment(jx, self.consts, self.stats, self.describe_input, exact_by_padding=True)]
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

    def _paddable_as_one(self) -> bool:
        """Whether a program whose sizes come from data runs as one padded executable (every
        size from data has a bound: ``x[x > 0]`` is at most ``x``'s length), so that no host
        round trip splits it. Programs with resizing loops have capacities instead
        (``CapacityProgram``)."""
        jx = self.jaxpr
        if resizing_loops(jx):
            return False
        sized = {i: MIN_BUCKET for i, v in enumerate(jx.invars) if _is_int_scalar(v)}
        try:
            pad_jaxpr(jx, self.consts, sized)
        except NotPaddable:
            return False
        return True

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
        capacity = self.capacity
        if capacity is not None:
            # the capacity program chooses (its direct run of repeated inputs first), unless
            # DYNJAX_TIERS=exact; then only that direct run, whatever the policy
            outs = capacity.run(args) if tiers.policy() != "exact" else capacity.run_steady(args)
            if outs is not None:   # fresh arrays: XLA's outputs, cut, never its inputs
                return outs
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
                outs = step.run([read(a) for a in step.inputs])
                outvars = step.eqn.outvars
            for v, x in zip(outvars, outs):
                env[id(v)] = x
        return _owned([np.asarray(read(a)) for a in jx.outvars], jx.outvars, list(args) + self.consts)

    # --- introspection for qjit ------------------------------------------------------------
    def segments(self) -> List[Any]:
        """Everything that compiles executables: the segments, and the capacity programs
        (each has ``last_specialized`` / ``last_executable`` for introspection)."""
        out: List[Any] = [self.capacity] if self.capacity is not None else []
        out += [s for s in self.steps if isinstance(s, Segment)]
        for s in self.steps:
            if isinstance(s, HostStep):
                if s.capacity is not None:
                    out.append(s.capacity)
                for p in s.programs.values():
                    out += p.segments()
        return out
