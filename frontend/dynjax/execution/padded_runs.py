"""Running padded programs: a size bucket's executable, and programs with resizing loops.

``PaddedRun`` is one compiled padded program (``padding.pad_jaxpr``): it pads the inputs to
the program's shapes, runs it, and cuts each result to its logical size.

``CapacityProgram`` runs a whole program whose loops change the sizes of what they carry
(``allow_array_resizing``) as *one* padded executable: such a loop's carried arrays live in
buffers of a capacity per carried size, and the loop runs on device while the next
iteration fits (``padding_control_flow._resizing_loop``). When an iteration would not fit, the program
reports it; the host grows that loop's capacities fourfold and runs the program again. A
loop growing to ``n`` elements thus costs ``log4(n)`` compiles the first time; the
capacities that sufficed are remembered, so later calls run once, with no host round trip.
A run that completed serves every later call whose inputs fit its size buckets, and a call
with larger inputs starts from the capacities that served smaller ones, scaled up
(``CapacityProgram._choose``); inputs far smaller than every completed run get a run of their
own buckets, compiled in the background while the smallest run that holds them serves them.
Growing fourfold can leave a loop up to 4x the room it needs, and every iteration works on
the whole buffer: inputs that repeat (the same integer values) get a run at their exact sizes
and at the capacities their loops ended with, which then serves them directly
(``CapacityProgram._completed``, ``run_steady``).
"""
from __future__ import annotations

import time
from logging import INFO
from typing import Any, List, Optional, Sequence

import numpy as np

from ..core.jaxpr import ClosedJaxpr, Jaxpr, Var
from . import compile_log, explain, tiers
from .analysis import is_int_scalar as _is_int_scalar, needed_vars
from .lru import BoundedCache
from .padding import MIN_BUCKET, NotPaddable, bucket, pad_jaxpr
from .size_checks import check_sizes

#: how much a resizing loop's capacities grow when an iteration does not fit
GROWTH = 4
#: a completed run serves inputs whose size buckets are smaller by at most this factor
REUSE_ABOVE = 8
#: a program built for inputs that no completed run serves is built for buckets this much
#: larger, so that the larger inputs of a growing stream reuse it
AHEAD = 2
#: the first capacities of a loop are its inputs' largest bucket, as long as its carried
#: buffers then hold at most this many elements (else smaller, and grown on demand)
FIRST_GUESS_ELEMENTS = 1 << 22


def compile_padded(stats, closed: ClosedJaxpr, what: str = "", reason=None):
    """Lower a padded (static-shape) program and compile it, through the disk cache; returns
    the executable and the module text. ``what`` (the bucket) and ``reason`` go to the
    compile log (``compile_log.step``)."""
    from .. import runtime
    from ..lowering import module_text
    eqns = (lambda: compile_log.equations_text(compile_log.count_equations(closed.jaxpr)))
    with compile_log.step("lower", stats, what, sizes=eqns) as st:
        text = module_text(closed)
        st.sizes = compile_log.sizes_with_ops(eqns, text)
    stats.lowerings += 1
    with compile_log.step("compile", stats, what, reason, sizes=compile_log.sizes_with_ops(eqns, text)) as st:
        exe, hit = runtime.compile_cached(text, return_hit=True)
        st.disk_hit = bool(hit)
    if hit:
        stats.disk_hits += 1
    else:
        stats.padded_compilations += 1
    return exe, text


def long_runs(jaxpr: Jaxpr):
    """Whether runs of a padded program may be long enough to need Ctrl-C
    (``tiers.may_run_long``): ``False``, ``True``, or, when its cost is a formula in integer
    inputs that the cost model can read (a ``for_loop`` whose trip count is an input), a
    function of the program's inputs, so that short runs skip the hand-over to a runner
    thread (``runtime.xla._call_interruptibly``). A cost the model cannot bound (a
    ``while_loop``'s trip count) is long."""
    from ..cost_model import cost_in_inputs
    from .tiers import may_run_long
    positions = [i for i, v in enumerate(jaxpr.invars) if _is_int_scalar(v)]
    try:
        estimate = cost_in_inputs(jaxpr, positions)
    except Exception:
        return False
    if not may_run_long(estimate, {}):
        return False
    named = [(i, n) for i, n in zip(positions, estimate[1]) if n is not None]
    if not named:
        return True
    decided = BoundedCache(REMEMBERED_DECISIONS)

    def decide(inputs) -> bool:
        key = tuple([int(inputs[i]) for i, _ in named])
        long = decided.get(key)
        if long is None:
            long = may_run_long(estimate, {n: v for (_, n), v in zip(named, key)})
            decided.put(key, long)
        return long
    return decide


#: how many input values a padded program remembers its long-run decision for
REMEMBERED_DECISIONS = 64


def _cut(dims):
    """How ``PaddedRun`` cuts an output of these dims (an int: that length; ``(j,)``: the
    length is ``meta[j]``): None when all are static (nothing to cut), ``j`` when only the
    leading one is not, else the dims."""
    if all(d.__class__ is int for d in dims):
        return None
    if dims[0].__class__ is tuple and all(d.__class__ is int for d in dims[1:]):
        return dims[0][0]
    return dims


class CapacityExceeded(Exception):
    """A padded program's resizing loop ``loop`` stopped early: its next iteration needed the
    carried sizes ``needed``, beyond the ``capacities`` it was built for."""

    def __init__(self, loop: int, needed: List[int], capacities):
        super().__init__(loop, needed)
        self.loop = loop
        self.needed = needed
        self.capacities = capacities


class PaddedRun:
    """A compiled padded program: pads the inputs, runs, cuts each result to its size."""

    def __init__(self, program, exe, text, long=False):
        self.program = program
        self.exe = exe
        self.text = text   # the static module (introspection: f.mlir_specialized)
        self.long = long   # runs wait interruptibly: a bool, or a function of the inputs (long_runs)
        # per input: its padded shape (None: a scalar), dtype, and the scalar types the
        # executable takes as they are (a Python int for an int64 scalar: no conversion); per
        # output: where it is, and how to cut it (``_cut``)
        self._ins = [(shape, aval.dtype, exe.scalar_types(i) if shape is None else ())
                     for i, (shape, aval) in enumerate(zip(program.in_shapes, program.in_avals))]
        self._outs = [(at, m, _cut(dims)) for at, m, dims in zip(program.out_index, program.out_meta, program.out_dims)]

    def __call__(self, args: Sequence[Any]) -> List[np.ndarray]:
        return self.run(args)[0]

    def inputs(self, args: Sequence[Any]) -> List[Any]:
        """The executable's inputs for the segment's: arrays padded to their shapes with zeros
        (the padded program relies on it: ``padding.Context.zero_padded``), scalars as numpy
        values of their dtypes, then the host prologue's values."""
        p = self.program
        inputs = []
        for x, (shape, dtype, scalars) in zip(args, self._ins):
            if x.__class__ is np.ndarray and x.dtype == dtype and (shape is None or x.shape == shape):
                inputs.append(x)
            elif x.__class__ in scalars:
                inputs.append(x)
            elif shape is None:
                inputs.append(np.asarray(x, dtype))
            else:
                buf = np.zeros(shape, dtype)
                buf[tuple(slice(0, n) for n in np.shape(x))] = x
                inputs.append(buf)
        if p.prologue is not None:
            inputs.extend(p.prologue.values(tuple([int(args[i]) for i in p.prologue_inputs])))
        return inputs

    def long_for(self, inputs) -> bool:
        """Whether a run on these inputs waits interruptibly (``long_runs``)."""
        long = self.long
        return long(inputs) if callable(long) else long

    def run(self, args: Sequence[Any], long=None):
        """The results, each cut to its size, and the meta output as a list (None when the
        program has none). ``long``: whether to wait interruptibly (None: ``long_for``).
        Raises CapacityExceeded when a resizing loop stopped early."""
        inputs = self.inputs(args)
        return self.execute(inputs, self.long_for(inputs) if long is None else long)

    def execute(self, inputs: List[Any], long: bool):
        """``run`` on the executable's ``inputs`` (see ``inputs``)."""
        p = self.program
        outs = self.exe.call_exact(inputs, long)
        meta = p.epilogue.values(inputs, outs) if p.has_meta else None
        for k, loop in enumerate(p.loops):
            if meta[loop.over]:
                raise CapacityExceeded(k, [meta[j] for j in loop.needed], loop.capacities)
        results = []
        for at, m, dims in self._outs:
            if at is None:
                results.append(np.asarray(meta[m], np.int64))
            elif dims is None:
                results.append(outs[at])
            elif dims.__class__ is int:   # only the leading axis: a contiguous view
                results.append(outs[at][:meta[dims]])
            else:
                cut = tuple([slice(0, d if d.__class__ is int else meta[d[0]]) for d in dims])
                results.append(np.ascontiguousarray(outs[at][cut]))
        return results, meta


class _Repeats:
    """How often the inputs of one key ran at a looser choice than they need (``seconds``: the
    runs' total time), whether their tight run was requested, and whether they proved
    unsteady (a direct run stopped early)."""
    __slots__ = ("calls", "seconds", "requested", "unsteady")

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self.requested = False
        self.unsteady = False


def resizing_loops(jaxpr: Jaxpr) -> List[Any]:
    """The equations of ``jaxpr`` (top level) that are loops changing their carried sizes."""
    return [e for e in jaxpr.eqns if e.params.get("nimplicit")]


class CapacityProgram:
    """A program with resizing loops at its top level, run as one padded executable per size
    bucket of its integer inputs and capacities of its loops (see the module docstring).

    ``run(args)`` returns the outputs, or None when the program cannot run padded (then it
    never tries again, and the caller runs it step by step)."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], stats, describe_input=None):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.stats = stats
        self.describe_input = describe_input or (lambda i: f"input {i}")
        need = needed_vars(jaxpr)
        # the integer inputs that are sizes: bounded by their bucket in the padded program
        self.sized = [i for i, v in enumerate(jaxpr.invars) if _is_int_scalar(v) and id(v) in need]
        self.loops = resizing_loops(jaxpr)
        self.runs = BoundedCache(stats.cache_size, executables=True)   # (buckets, capacities) -> PaddedRun
        # buckets -> the (buckets, capacities) of the run that served them
        self.hints = BoundedCache(stats.cache_size)
        self.sufficed = BoundedCache(stats.cache_size)  # (buckets, capacities) that completed a run
        self.checked = BoundedCache(stats.cache_size)   # sizes whose host checks passed
        self.usable = True
        # the integer inputs (sizes, trip counts, ...): their values decide the shapes and how
        # far the loops go, so they key a repeated call (``_completed``)
        self.ints = [i for i, v in enumerate(jaxpr.invars) if _is_int_scalar(v)]
        # int values -> (PaddedRun, long) serving those inputs directly (None: no longer)
        self.steady = BoundedCache(stats.cache_size)
        self._steady_hit = self.steady.peek   # its lookup without the recency update
        self.repeats = BoundedCache(stats.cache_size)   # int values -> _Repeats
        self.completed_any = False
        self.compile_seconds: Optional[float] = None    # the mean time of this program's compiles
        self._compiles = 0
        # introspection only (f.mlir_specialized, f.hlo): never read on a call path
        self.last_specialized: Optional[str] = None
        self.last_executable = None

    def run_steady(self, args: Sequence[Any]) -> Optional[List[Any]]:
        """The outputs when a run already serves inputs of these integer values directly
        (``_completed``), else None (``run`` then chooses). The dispatch table's calls come
        here first: it is the whole call once a size repeats."""
        key = tuple([int(args[i]) for i in self.ints])
        steady = self._steady_hit(key)
        if steady is None:
            return None
        run, long, caps = steady
        try:
            if long is None:   # built in the background: decided at its first call
                inputs = run.inputs(args)
                long = run.long_for(inputs)
                self.steady.put(key, (run, long, caps))
                outs = run.execute(inputs, long)[0]
            else:
                outs = run.run(args, long)[0]
        except CapacityExceeded:   # the data made a loop go further: the general path from now on
            self._unsteady(key)
            return None
        self.stats.padded_runs += 1
        self.last_specialized, self.last_executable = run.text, run.exe
        if explain.tiers.isEnabledFor(INFO):
            self._log_run(caps, key)
        return outs

    def run(self, args: Sequence[Any]) -> Optional[List[Any]]:
        outs = self.run_steady(args)
        if outs is not None:
            return outs
        key = tuple([int(args[i]) for i in self.ints])
        values = tuple([int(args[i]) for i in self.sized])
        if not self.usable or any(v < 0 for v in values):
            return None
        if values not in self.checked:
            self._check(values)
            self.checked.put(values, True)
        own = tuple([bucket(v) for v in values])
        bounds, caps = self._choose(own)
        borrowed = False
        if self.runs.get((bounds, caps)) is None and not tiers.synchronous():
            larger = self._larger_completed(own)
            if larger is not None:   # it serves now; these buckets' own run is built meanwhile
                self._build_buckets_later(own, bounds, caps)
                (bounds, caps), borrowed = larger, True
        while True:
            choice = (bounds, caps)
            run = self.runs.get(choice)
            if run is None:
                try:
                    run = self.runs.get_or_fill(choice, lambda: self._build(bounds, caps))
                except NotPaddable as e:
                    self.usable = False
                    reason = str(e)
                    explain.maybe(explain.tiers, lambda: f"a program with resizing loops runs step by step: {reason}")
                    return None
            inputs = run.inputs(args)
            long = run.long_for(inputs)
            start = time.perf_counter()
            try:
                outs, meta = run.execute(inputs, long)
            except CapacityExceeded as over:
                caps = self._grown(caps, over)
                if caps is None:   # no growth would help (never seen): run step by step
                    self.usable = False
                    return None
                continue
            seconds = time.perf_counter() - start
            self.stats.padded_runs += 1
            self.last_specialized, self.last_executable = run.text, run.exe
            if borrowed:   # the hint for these buckets is their own run, once built
                self.sufficed.put(choice, True)
            elif self.hints.get(own) != choice:
                self.hints.put(own, choice)
                self.sufficed.put(choice, True)
            if explain.tiers.isEnabledFor(INFO):
                self._log_run(caps, key)
            self._completed(key, values, own, choice, run, long, meta, seconds)
            return outs

    def _log_run(self, caps, key):
        values = dict(zip(self.ints, key))
        explain.note(explain.tiers, "padded tier, resizing loops at capacities "
                     f"{[list(c) for c in caps]}" + "".join(
                         f", {self.describe_input(i)} = {values[i]}" for i in self.sized))

    # --- a repeated call: the run that fits it, found once ------------------------------------
    def _completed(self, key, values, own, choice, run: PaddedRun, long, meta, seconds):
        """After a run at ``choice`` = (buckets, capacities) completed for the inputs whose
        integer values are ``key`` (``values``: those that are sizes, of buckets ``own``): the
        capacities they need are, per loop, the buckets of the carried sizes it ended with. A
        run at their own buckets and those capacities serves the key's later calls directly
        (``steady``). A run at a looser choice (capacities grown fourfold, buckets built ahead:
        up to ~4x the work per iteration) keeps serving them until the key has recurred enough
        to pay for a compile of its own (``tiers.worth_exact``, as a size's exact executable;
        the first inputs a program completes for get it right away when compiles ahead are
        on), made on the background thread, at the sizes themselves (no input is padded) and
        the capacities they need. A loop whose sizes shrink again may need more than it ended
        with: that run then stops early, and the key goes back to the general path for good
        (``_unsteady``)."""
        first = not self.completed_any
        self.completed_any = True
        record = self.repeats.get(key)
        if record is None:
            record = self.repeats.get_or_fill(key, _Repeats)
        if record.unsteady:
            return
        caps = tuple([tuple([bucket(meta[j]) for j in loop.reached]) for loop in run.program.loops])
        if choice == (own, caps):
            self.steady.put(key, (run, long, caps))
            return
        record.calls += 1
        record.seconds += seconds
        if record.requested:
            return
        tight = (values, caps)
        waste = 1.0 - (sum(values) + sum(sum(c) for c in caps)) / max(
            1, sum(choice[0]) + sum(sum(c) for c in choice[1]))
        compile_seconds = self.compile_seconds or tiers.DEFAULT_COMPILE_SECONDS
        if first and tiers.compile_ahead():
            self._build_tight_later(key, tight, record, "the first inputs' loops ended well inside their "
                                    "capacities (compiled ahead)")
        elif tiers.worth_exact(record.calls, record.seconds, record.calls, waste, compile_seconds):
            self._build_tight_later(key, tight, record, f"these inputs recurred ({record.calls} calls at "
                                    "capacities larger than they need)")

    def _build_tight_later(self, key, tight, record: "_Repeats", why: str):
        """Build the run of ``key``'s own sizes and capacities ``tight`` (see ``_completed``),
        in the background unless ``DYNJAX_SYNC_COMPILE`` is set; it serves the key's calls
        once it is ready. ``why`` goes to the compile log."""
        record.requested = True
        bounds, caps = tight

        def build(cp):
            run = cp.runs.get(tight)
            if run is None:
                try:
                    run = cp.runs.get_or_fill(tight, lambda: cp._build(bounds, caps, why=why))
                except NotPaddable:   # not at these exact sizes: the runs that served them go on
                    record.unsteady = True
                    return
            if not record.unsteady:
                cp.steady.put(key, (run, None, caps))
        stats = self.stats

        def dropped():
            record.requested = False   # asked again when the inputs come again
            stats.job_dropped()
        explain.maybe(explain.recompiles, lambda: f"{why}: compile their resizing loops at the capacities "
                      f"they need {[list(c) for c in caps]}" + ("" if tiers.synchronous() else " in the background"))
        if tiers.synchronous():
            build(self)
        elif tiers.submit(("tight", key), build, tiers.EXACT, record.calls, owner=stats,
                          on_drop=dropped, subject=self):
            stats.background_compilations += 1

    def _unsteady(self, key):
        """Inputs whose direct run stopped early (data decide how far the loops go): they take
        the general path from now on."""
        record = self.repeats.get_or_fill(key, _Repeats)
        record.unsteady = True
        self.steady.put(key, None)

    def _choose(self, own):
        """The (buckets, capacities) to run inputs of buckets ``own`` at: the run that served
        these buckets before; else the smallest run that completed for buckets at least as
        large but at most ``REUSE_ABOVE`` times larger in every input (its padded shapes hold
        these inputs, and its loops had room for larger ones; a much larger one would do much
        more padded work); else a new run, for buckets ``AHEAD`` times larger than these (so
        that larger inputs arriving later reuse it), at capacities first guessed: those of the
        nearest run that completed, scaled by how much larger or smaller these buckets are
        (loops usually grow with their inputs), or, when nothing ran yet, the largest of the
        buckets (``_first_guess``). So sizes arriving in any order compile a number of
        executables logarithmic in their range, and a loop that grows with its input
        usually fits at its first run."""
        hint = self.hints.get(own)
        if hint is not None:
            return hint
        above, nearest, distance = None, None, None
        for b, c in self.sufficed.keys():
            if all(y <= x <= REUSE_ABOVE * max(y, 1) for x, y in zip(b, own)):
                if above is None or sum(b) < sum(above[0]):
                    above = (b, c)
            d = sum(abs(np.log2(max(x, 1) / max(y, 1))) for x, y in zip(b, own))
            if distance is None or d < distance:
                nearest, distance = (b, c), d
        if above is not None:
            return above
        bounds = tuple([bucket(AHEAD * o) for o in own])
        if nearest is None:
            return bounds, tuple([self._first_guess(loop, bounds) for loop in self.loops])
        b, c = nearest
        scale = max([o / max(x, 1) for o, x in zip(bounds, b)], default=1.0)
        return bounds, tuple([tuple([bucket(int(k * scale + 0.5)) for k in loop]) for loop in c])

    def _larger_completed(self, own):
        """The smallest completed (buckets, capacities) whose buckets hold inputs of buckets
        ``own``, however much larger (``_choose`` reuses one at most ``REUSE_ABOVE`` times
        larger), or None: it serves such inputs correctly while their own run compiles."""
        best = None
        for b, c in self.sufficed.keys():
            if all(x >= y for x, y in zip(b, own)) and (best is None or sum(b) < sum(best[0])):
                best = (b, c)
        return best

    def _build_buckets_later(self, own, bounds, caps):
        """Build the run ``_choose`` picked for inputs of buckets ``own`` on the background
        thread; once built, it serves them (``hints``). Meanwhile a larger completed run does,
        so that no call waits for a compile that a run already built can stand in for."""
        choice = (bounds, caps)

        def build(cp):
            if cp.runs.get(choice) is None:
                try:
                    cp.runs.get_or_fill(choice, lambda: cp._build(
                        bounds, caps, why="smaller inputs than the completed runs were built for "
                                          "(a larger run serves them meanwhile)"))
                except NotPaddable:   # the larger run goes on serving them
                    return
            cp.hints.put(own, choice)
        if tiers.submit(("buckets", choice), build, tiers.NEEDED, owner=self.stats, subject=self):
            self.stats.background_compilations += 1

    @staticmethod
    def _first_guess(loop, bounds):
        """A loop's first capacities, one per carried size: the largest input bucket, halved
        while the loop's carried buffers would hold more than ``FIRST_GUESS_ELEMENTS``
        (a size the loop does not carry counts at the largest bucket)."""
        ni = loop.params["nimplicit"]
        largest = max(bounds, default=MIN_BUCKET)
        carried = {id(v) for v in loop.outvars[:ni]}

        def elements(cap):
            total = 0
            for v in loop.outvars[ni:]:
                n = 1
                for d in v.aval.shape:
                    n *= d if isinstance(d, int) else (cap if id(d) in carried else largest)
                total += n
            return total
        cap = bucket(largest)
        while cap > MIN_BUCKET and elements(cap) > FIRST_GUESS_ELEMENTS:
            cap = bucket(cap // 2)
        return (cap,) * ni

    def _grown(self, caps, over: CapacityExceeded):
        """The capacities after loop ``over.loop`` stopped early: the sizes it did not have
        room for grow fourfold, at least to the bucket of what the iteration needed. (Later
        loops ran on unfinished values; they keep theirs until their own turn.) None if nothing
        would grow."""
        built = over.capacities
        grown = tuple([max(GROWTH * c, bucket(n)) if n > c else c for c, n in zip(built, over.needed)])
        if grown == built:   # the loop stops only when something does not fit
            return None
        explain.maybe(explain.recompiles, lambda: f"{self.loops[over.loop].primitive} #{over.loop} needs "
                      f"sizes {over.needed}: grow its capacities {list(built)} to {list(grown)}")
        return caps[:over.loop] + (grown,) + caps[over.loop + 1:]

    def _check(self, values):
        """The host checks an exact compile would make (negative sizes, mismatched reshapes)."""
        check_sizes(self.jaxpr, {id(self.jaxpr.invars[i]): v for i, v in zip(self.sized, values)},
                    self.describe_input, {id(self.jaxpr.invars[i]): i for i in self.sized})

    def _build(self, bounds, caps, why: Optional[str] = None) -> PaddedRun:
        """Pad and compile the program for size buckets ``bounds`` and loop capacities
        ``caps`` (timed: the mean feeds ``_completed``'s rule); ``why`` is the compile log's
        reason when the caller knows better than "the loops need room"."""
        from .. import runtime
        start, started = time.perf_counter(), runtime.compiler_started()
        program = pad_jaxpr(self.jaxpr, self.consts, dict(zip(self.sized, bounds)),
                            {id(e): c for e, c in zip(self.loops, caps)})
        explain.maybe(explain.recompiles, lambda: f"compile a program with {len(self.loops)} resizing "
                      f"loop(s) for size buckets {list(bounds)} and capacities {[list(c) for c in caps]}")
        what = f"capacities {[list(c) for c in caps]}" + (
            ", " + explain.bucket_text(bounds, self.describe_input, self.sized) if self.sized else "")
        exe, text = compile_padded(self.stats, program.closed, what, lambda: why or (
            f"{len(self.loops)} resizing loop(s) need room for these sizes"))
        if started:   # (the process's first compile also started XLA's compiler)
            seconds = time.perf_counter() - start
            n = self._compiles = self._compiles + 1
            self.compile_seconds = seconds if n == 1 else self.compile_seconds + (seconds - self.compile_seconds) / n
        return PaddedRun(program, exe, text, long_runs(program.closed.jaxpr))


def jaxpr_of_equation(eqn, extra_inputs: Sequence[Any]) -> Jaxpr:
    """A jaxpr running the one equation ``eqn``: its inputs are the equation's variable
    operands (each once, in order) and ``extra_inputs`` (sizes its operands' types use)."""
    invars: List[Any] = []
    seen = set()
    for a in list(extra_inputs) + list(eqn.invars):
        if isinstance(a, Var) and id(a) not in seen:
            seen.add(id(a))
            invars.append(a)
    invars.sort(key=lambda v: not _is_int_scalar(v))   # sizes before the arrays using them
    return Jaxpr([], invars, [eqn], list(eqn.outvars))

