"""A ``Segment`` of a planned program (``program.Program``): a run of equations that is one
static XLA program once its integer inputs are baked in, and the tiers that serve a call of
it (``tiers``): the host tier (``host_tier``; the segment's side of it in
``segment_host``), the exact executable of the call's sizes, the padded one of its size
bucket, or the numpy impls while that compiles.

The segment is lowered once (dynamic StableHLO), then specialized and compiled per concrete
signature -- the shapes of its array inputs and the values of its *needed* integer inputs --
and cached in memory (and on disk, by the runtime).
"""
from __future__ import annotations

import math
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..core import cooperative
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ..core.primitive import impl_rules
from ..runtime import served_on_host
from . import compile_log, explain, tiers
from .analysis import _FOLDABLE, dims_of, is_scalar, needed_vars
from .analysis import is_int_scalar as _is_int_scalar
from .lru import BoundedCache
from .padded_runs import PaddedRun, compile_padded, long_runs
from .padding import NotPaddable, bucket, next_bucket, pad_jaxpr
from .size_checks import MAX_SIZE, check_sizes
from .segment_host import HostTier, _Shape
from .stats import Stats


class Segment(HostTier):
    """A jaxpr that compiles to one static executable per concrete signature."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], stats: Stats, describe_input=None,
                 exact_by_padding: bool = False):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.stats = stats
        need = needed_vars(jaxpr)
        self.baked = [i for i, v in enumerate(jaxpr.invars) if _is_int_scalar(v) and id(v) in need]
        baked = set(self.baked)
        self.runtime = [i for i in range(len(jaxpr.invars)) if i not in baked]
        #: sizes computed from data inside the program (``x[x > 0]``): no module specializes to
        #: them, so the "exact" executable of a size is the padded program whose input sizes are
        #: exactly the call's (every data-dependent size padded to its bound): one executable,
        #: no host round trip (see ``_compile``)
        self.exact_by_padding = exact_by_padding
        if exact_by_padding:
            self.lowered, self.host_eqns, self.host_vars = None, [], []
        else:
            self.lowered, self.host_eqns, self.host_vars = _host_sizes(
                jaxpr, [jaxpr.invars[i] for i in self.baked])
        self.describe_input = describe_input or (lambda i: f"input {i}")
        self._module_text: Optional[str] = None
        self._lowering_lock = threading.Lock()
        self.cache = BoundedCache(stats.cache_size, executables=True)
        self.padded = BoundedCache(stats.cache_size, executables=True)  # size bucket -> PaddedRun (tier 1)
        self.buckets_requested: set = set()               # buckets queued for the background once
        self.calls_at = BoundedCache(stats.cache_size)  # exact key -> _SizeRecord (sizes served padded)
        self.promoted: "weakref.WeakSet" = weakref.WeakSet()   # exact executables of recurring sizes
        self.compile_seconds: Optional[float] = None    # mean time of this segment's exact compiles
        #: seconds of eager runs at sizes whose bucket is not yet asked for (the rent of
        #: ``_run_eagerly``: a bucket is queued once it would have paid for a compile; added to
        #: without a lock: a lost update only delays a compile)
        self.eager_seconds = 0.0
        self._eager_estimate = None                     # (cost, names of the int inputs) or False
        self._cost_inputs: tuple = ()                   # (position, name) of those the cost reads
        self._cheap_at = BoundedCache(stats.cache_size)  # their values -> _cheap_for_eager's answer
        self._padding_ok = BoundedCache(stats.cache_size)  # (larger, own bucket, ...) -> _padding_affordable's
        self.paddable = bool(self.baked)                # False once padding proved impossible
        self.hosted = BoundedCache(stats.cache_size)    # exact key -> HostProgram or NOT_HOSTED
        self._hostable: Optional[bool] = None           # whether the host tier may run it at all
        self._host_limit = 0                            # and the largest arguments it may (size_limit)
        self._host_estimate = None                      # the latest build's estimates at any sizes
        self.host_served = False                        # whether it has served a call
        #: where the latest call was one a host program built at other sizes served as it is
        #: (the server of ``admit_layout``, which sets ``last_executable`` to that program):
        #: its layout and the arrays' shapes, for ``xla_view``; else None
        self.last_host_shapes = None
        #: the latest host programs that serve other sizes as they are (``host_reach.Reach``)
        self.reusable_hosts: tuple = ()
        #: the layout of the calls its server serves, and what its caller adds to it
        #: (``admit_layout``; the caller keeps the server)
        self._layout = self._front = None
        #: whether its host programs serve other sizes (None: none built yet)
        self.host_reusable: Optional[bool] = None
        # introspection only (f.mlir_specialized, f.hlo): never read on a call path
        self.last_specialized: Optional[str] = None
        self.last_executable = None

    @property
    def module_text(self) -> str:
        if self._module_text is None:
            with self._lowering_lock:
                if self._module_text is None:
                    from ..lowering import module_text
                    with compile_log.step("lower", self.stats, "dynamic shapes", sizes=lambda: (
                            compile_log.equations_text(compile_log.count_equations(self.lowered)))) as st:
                        text = module_text(ClosedJaxpr(self.lowered, self.consts))
                        st.sizes = compile_log.sizes_with_ops(st.sizes, text)
                    self._module_text = text
                    self.stats.lowerings += 1
                    explain.maybe(explain.recompiles, lambda: f"lower a program of {len(self.jaxpr.eqns)} "
                                  "equations to StableHLO with dynamic shapes")
        return self._module_text

    def _key(self, args):
        return (tuple([np.shape(args[i]) for i in self.runtime]), tuple([int(args[i]) for i in self.baked]))

    def executable(self, args: Sequence[Any]):
        """The exact-size executable for concrete inputs, chosen by the runtime inputs' shapes
        and the baked integers' values (compiled once per such key, whatever the threads)."""
        key = self._key(args)
        exe = self.cache.get(key)
        if exe is None:
            exe = self.cache.get_or_fill(key, lambda: self._compile(args))
        self.last_executable = exe
        return exe

    def run(self, args: Sequence[Any]) -> List[np.ndarray]:
        """Run on concrete inputs (see ``call``)."""
        return self.call(args)[0]

    def call(self, args: Sequence[Any]):
        """The outputs for concrete inputs, and the exact executable (or host program) that
        computed them (None when the padded or the eager tier did: see ``tiers``)."""
        key = self._key(args)
        exe = self.cache.get(key)
        if exe is None and self._hostable is not False:
            host = self._host_program(key, args)
            if host is not None:
                return self._run_host(host, args), host
        queue_after = None   # the priority of the bucket to queue after an exact compile
        first = False
        if exe is None and self.paddable:
            pol = tiers.policy()
            # auto: the first size compiles its exact executable (a program called at one
            # size never pads); sizes after it run padded. (A size after ones the host tier
            # served is not a first: the program meets several sizes.)
            first = pol == "auto" and not len(self.cache) and not len(self.padded) and not self.host_served
            run = self._padded_run(args, pol == "auto") if pol != "exact" and not first else None
            if first and not self._served_eagerly(args):   # ready for the next size: its
                queue_after = tiers.AHEAD                      # bucket, compiled ahead
            elif run is _EXACT_FIRST:   # sizes beyond every compiled bucket: see _padded_run
                run, queue_after = None, tiers.NEEDED
            record = None
            if run is not None:
                record = self.calls_at.get_or_fill(key, lambda: self._first_padded_call(args))
                record.calls += 1
                if pol == "auto" and not record.requested and tiers.worth_exact(
                        record.calls, record.seconds, record.timed, record.waste, self._compile_cost()):
                    self._compile_exact_later(key, args, record)
                    exe = self.cache.get(key)   # ready now when compiled synchronously
            if run is not None and exe is None and run.__class__ is CompilingBucket:
                outs = self._run_eagerly(args, run)
                if outs is not None:
                    return outs, None
                run = run.ready()   # None: the program turned out not paddable
            if run is not None and exe is None:
                self.stats.padded_runs += 1
                self.last_executable, self.last_specialized = run.exe, run.text
                explain.maybe(explain.tiers, lambda: f"padded tier: {self._describe_key(key)}")
                start = time.perf_counter()
                with served_on_host:   # padding and cutting too (see _run_eagerly)
                    outs = run(args)
                if record is not None:   # what the exact executable would save (tiers.worth_exact)
                    record.seconds += time.perf_counter() - start
                    record.timed += 1
                return outs, None
        if exe is None:
            exe = self.cache.get_or_fill(key, lambda: self._compile(args))
            if queue_after is not None:   # the sizes' bucket, in the background
                self._queue_own_bucket(args, queue_after)
            if first:
                self._build_host_ahead(args)
        elif exe in self.promoted:
            self.stats.exact_calls_served += 1
        self.stats.exact_runs += 1
        explain.maybe(explain.tiers, lambda: f"exact tier: {self._describe_key(key)}")
        if exe.__class__ is _ExactPadded:   # not for the dispatch table's direct calls
            self.last_executable = exe.run.exe
            return exe(args), None
        self.last_executable = exe
        return exe(*[args[i] for i in self.runtime]), exe

    def _sizes(self, args) -> list:
        """The arguments as sizes and shapes (what a host program or a job keeps of them)."""
        baked = set(self.baked)
        return [int(x) if i in baked else _Shape(np.shape(x)) for i, x in enumerate(args)]

    def _describe_key(self, key) -> str:
        shapes, values = key
        return explain._sizes(shapes, values, self.describe_input, self.runtime, self.baked)

    # --- tier 1: padded executables per size bucket ------------------------------------------
    def _padded_run(self, args, ahead: bool = False):
        """The padded program for these sizes, or None when this program cannot run padded.

        Its own bucket's program when compiled; else (``ahead``, the automatic policy):

        * sizes the cost model calls cheap, with ``tiers.eager_until_paid``: the smallest
          compiled bucket that holds them if it costs at most twice their own bucket
          (``_padding_affordable``), else a ``CompilingBucket`` that the call runs eagerly beside, whose
          bucket is queued once the segment's eager runs have paid for a compile
          (``_EagerStop``); nothing is compiled ahead for them;
        * other sizes: the smallest compiled bucket that holds them, while their own bucket
          compiles in the background; when none does, the bucket and the next larger one
          compile in the background (so growing sizes find their program ready), and the
          call either runs eagerly meanwhile (a ``CompilingBucket``, for cheap sizes) or
          waits for the bucket; or, when the bucket was never queued, ``_EXACT_FIRST``: the
          call compiles its exact executable and queues the buckets after it (``call``).

        Without ``ahead``, the own bucket, compiled now."""
        values = [int(args[i]) for i in self.baked]
        if any(v < 0 for v in values):
            return None
        # a size's first padded call: the host checks, once (an array too large to allocate
        # fails here, before a bucket compiles); ``call`` finds the record
        self.calls_at.get_or_fill(self._key(args), lambda: self._first_padded_call(args))
        bounds = tuple(bucket(v) for v in values)
        if any(b > MAX_SIZE for b in bounds):   # a bucket beyond int64: exact sizes only
            return None
        try:
            run = self.padded.get(bounds)
            if run is not None:
                return run
            if ahead:
                rent = self._served_eagerly(args)
                larger = [b for b in self.padded.keys() if all(x >= y for x, y in zip(b, bounds))]
                if larger:
                    best = min(larger, key=_elements)
                    if not rent:
                        self._compile_bucket_later(bounds, values, tiers.AHEAD)
                    if not rent or self._padding_affordable(best, bounds, args):
                        return self.padded.get(best)
                if rent:   # queued once eager runs would have paid for it (_EagerStop)
                    return CompilingBucket(self, bounds, values, queued=bounds in self.buckets_requested)
                cheap = self._cheap_for_eager(args)
                if not cheap and tiers.compile_ahead() and not self.exact_by_padding \
                        and bounds not in self.buckets_requested:
                    return _EXACT_FIRST
                self._queue_buckets(bounds, values, tiers.NEEDED)
                if cheap:
                    return CompilingBucket(self, bounds, values)
            return self.padded.get_or_fill(bounds, lambda: self._build_padded(bounds, values))
        except NotPaddable as e:
            self._not_paddable(e)
            return None

    def _not_paddable(self, why: NotPaddable) -> None:
        """Padding proved impossible: every size of this program compiles its exact executable
        from now on (said once under ``DYNJAX_LOG=tiers``, with the reason)."""
        if self.paddable:
            self.paddable = False
            explain.maybe(explain.tiers, lambda: f"exact sizes only: the program cannot run padded ({why})")

    def _queue_own_bucket(self, args, priority):
        """After the first size (``tiers.AHEAD``), or sizes that compiled their exact executable
        because no bucket held them (``tiers.NEEDED``): their bucket and the next larger one,
        in the background."""
        values = [int(args[i]) for i in self.baked]
        if all(v >= 0 for v in values):
            self._queue_buckets(tuple(bucket(v) for v in values), None, priority)

    def _queue_buckets(self, bounds, values, priority):
        """The bucket ``bounds`` (at ``priority``) and the next larger one (ahead), in the
        background."""
        self._compile_bucket_later(bounds, values, priority)
        self._compile_bucket_later(tuple(next_bucket(b) for b in bounds), None, tiers.AHEAD)

    def _compile_bucket_later(self, bounds, values, priority):
        """Queue the padded program of a bucket on the background compile thread (once: a
        bucket already queued or compiled is not queued again; a speculative one only with
        ``tiers.compile_ahead()``)."""
        if bounds in self.padded or (priority == tiers.AHEAD and not tiers.compile_ahead()):
            return

        def build(seg):     # the job holds the segment weakly (tiers.submit's ``subject``)
            try:
                seg.padded.get_or_fill(bounds, lambda: seg._build_padded(bounds, values))
            except NotPaddable as e:
                seg._not_paddable(e)
        self.buckets_requested.add(bounds)
        if tiers.submit(("bucket", bounds), build, priority, owner=self.stats,
                        on_drop=self.stats.job_dropped, subject=self):
            self.stats.background_compilations += 1

    def _cheap_for_eager(self, args) -> bool:
        """Whether the cost model puts this segment at these arguments (its integer ones:
        sizes, trip counts) below ``tiers.EAGER_MAX_FLOPS`` (False when it cannot tell: a
        while loop's unknown trip count, a primitive without a cost rule)."""
        estimate = self._cost_estimate()
        if estimate is False:
            return False
        named = self._cost_inputs   # (position, name) of the integer inputs the cost reads
        values = tuple([int(args[i]) for i, _ in named])
        cheap = self._cheap_at.get(values)
        if cheap is None:   # (once per such values: the padded and eager paths ask each call)
            try:
                cheap = self._work_at(values) <= tiers.EAGER_MAX_FLOPS
            except Exception:
                cheap = False
            self._cheap_at.put(values, cheap)
        return cheap

    def _padding_affordable(self, larger, bounds, args) -> bool:
        """Whether the compiled bucket ``larger`` may serve a cheap size whose own bucket is
        ``bounds``: when its program costs at most twice the own bucket's (the cost model's
        FLOPs and transcendentals at both buckets' sizes: a program quadratic in a size pays
        four times its cost in a bucket twice as large), else the size runs eagerly. When the
        cost model cannot tell, the buckets' element counts stand for their costs."""
        named = self._cost_inputs if self._cost_estimate() is not False else ()
        baked = set(self.baked)
        others = tuple([int(args[i]) for i, _ in named if i not in baked])   # (trip counts...)
        key = (larger, bounds, others)
        ok = self._padding_ok.get(key)
        if ok is None:
            ok = _elements(larger) <= 2 * _elements(bounds)
            if named:
                try:
                    costs = []
                    for b in (larger, bounds):
                        at = dict(zip(self.baked, b))
                        values = tuple([at[i] if i in at else int(args[i]) for i, _ in named])
                        costs.append(self._work_at(values))
                    ok = costs[0] <= 2 * costs[1]
                except Exception:
                    pass
            self._padding_ok.put(key, ok)
        return ok

    def _work_at(self, values) -> int:
        """The cost model's FLOPs and transcendentals of the segment with its integer inputs
        ``_cost_inputs`` at ``values`` (the estimate exists: ``_cost_estimate``)."""
        c = self._eager_estimate[0].at(**{name: v for (_, name), v in zip(self._cost_inputs, values)})
        return c["flops"] + c["transcendentals"]

    def _served_eagerly(self, args) -> bool:
        """Whether new sizes like these are served eagerly until that has paid for a compile
        (``tiers.eager_until_paid``), so that nothing is compiled ahead for them."""
        return tiers.eager_until_paid() and self._cheap_for_eager(args)

    def _cost_estimate(self):
        """``cost_model.cost_in_inputs`` of the segment for its integer inputs (False when the
        cost model cannot tell), computed once."""
        estimate = self._eager_estimate
        if estimate is None:
            from ..cost_model import cost_in_inputs
            ints = [i for i, v in enumerate(self.jaxpr.invars) if _is_int_scalar(v)]
            try:
                estimate = cost_in_inputs(self.jaxpr, ints)
            except Exception:
                estimate = False
            if estimate is not False:
                self._cost_inputs = tuple((i, n) for i, n in zip(ints, estimate[1]) if n is not None)
            self._eager_estimate = estimate
        return estimate

    def _run_eagerly(self, args, bucket: "CompilingBucket"):
        """Tier 0: while a size's bucket compiles in the background, the call evaluates the
        jaxpr with the numpy impls, as dynjax does outside ``qjit``; once the bucket is ready
        the evaluation is abandoned and the bucket serves it. None when abandoned (or when
        eager evaluation fails: the compiled program decides)."""
        from ..core.interpret import Interrupted, eval_jaxpr, interruptible
        start = time.perf_counter()
        stop = _EagerStop(self, bucket, start)
        # beside a compile in the background, numpy's matrix products keep to one BLAS thread
        # each (core.cooperative.matmul: several waiting for each other on two cores, one of
        # them compiling, took 5-25x their time)
        blocks = cooperative.row_blocks(tiers.background_busy())
        try:
            # an active run for the background thread, whose Python work (padding, lowering)
            # would otherwise keep the GIL for its switch interval (5 ms) at each numpy call
            # (core.cooperative); not around the waits for a compile, which it would slow
            with served_on_host, interruptible(stop), np.errstate(all="ignore"):
                outs = eval_jaxpr(self.jaxpr, self.consts, *args)
        except Interrupted:
            return None
        except Exception:
            return None
        finally:
            cooperative.row_blocks(blocks)
        if not bucket.queued:   # not yet worth a compile: this run adds to the rental
            self.eager_seconds += time.perf_counter() - start
        self.stats.eager_runs += 1
        explain.maybe(explain.tiers, lambda: f"eager tier, while the bucket {list(bucket.bounds)} "
                      + ("compiles" if bucket.queued else "is not worth a compile yet")
                      + f": {self._describe_key(self._key(args))}")
        return _owned([np.asarray(x, v.aval.dtype) for x, v in zip(outs, self.jaxpr.outvars)],
                      self.jaxpr.outvars, list(args) + self.consts)

    def _build_padded(self, bounds, values):
        old = self.padded.keys()
        program = pad_jaxpr(self.jaxpr, self.consts, dict(zip(self.baked, bounds)))
        explain.maybe(explain.recompiles, lambda: explain.bucket_reason(
            bounds, values, self.describe_input, self.baked, old))
        exe, text = compile_padded(self.stats, program.closed,
                                   explain.bucket_text(bounds, self.describe_input, self.baked),
                                   lambda: explain.bucket_why(bounds, values, self.describe_input, self.baked, old))
        return PaddedRun(program, exe, text, long_runs(program.closed.jaxpr))

    def _first_padded_call(self, args):
        """A size served padded for the first time: the host checks the exact compile would
        make (negative sizes, mismatched reshapes) run here, once per size."""
        self._check(args)
        values = [int(args[i]) for i in self.baked]
        padded = math.prod([bucket(v) for v in values])   # (Python ints: exact, and no numpy call)
        return _SizeRecord(1.0 - math.prod(values) / padded if padded else 0.0)

    def _compile_cost(self) -> float:
        seconds = self.compile_seconds
        return tiers.DEFAULT_COMPILE_SECONDS if seconds is None else seconds

    def _check(self, args) -> Optional[str]:
        """The host checks of these sizes (``size_checks.check_sizes``): None, or a description
        of a ``shard_map`` split unevenly at them (then only the padded program can run)."""
        baked_values = {i: int(args[i]) for i in self.baked}
        return check_sizes(self.jaxpr, {id(self.jaxpr.invars[i]): v for i, v in baked_values.items()},
                           self.describe_input, {id(self.jaxpr.invars[i]): i for i in baked_values})

    def _compile_exact_later(self, key, args, record: "_SizeRecord"):
        """A recurring size: compile its exact executable (tier 2), in the background unless
        ``DYNJAX_SYNC_COMPILE`` is set; it serves the calls after it is ready. The job holds
        the sizes and shapes of the arguments, not the arguments."""
        args = self._sizes(args)
        record.requested = True

        def compile_exact(seg):
            exe = seg.cache.get(key)
            if exe is None:
                why = f"the size recurred ({record.calls} calls served padded)"
                exe = seg.cache.get_or_fill(key, lambda: seg._compile(args, why))
                seg.promoted.add(exe)
                seg.stats.exact_compilations += 1

        stats = self.stats

        def dropped():
            record.requested = False   # asked again when the size comes again
            stats.job_dropped()
        explain.maybe(explain.recompiles, lambda: "size recurred, compile its exact executable"
                      + ("" if tiers.synchronous() else " in the background") + f": {self._describe_key(key)}")
        if tiers.synchronous():
            compile_exact(self)
        elif tiers.submit(("exact", key), compile_exact, tiers.EXACT, record.calls,
                          owner=self.stats, on_drop=dropped, subject=self):
            self.stats.background_compilations += 1

    def _compile(self, args, why: Optional[str] = None):
        """The exact executable for these arguments; ``why`` is the compile log's reason when
        the caller knows better than "a new size" (a size that recurred)."""
        from .. import runtime
        baked_values = {i: int(args[i]) for i in self.baked}
        uneven = self._check(args)
        key = self._key(args)
        old = self.cache.keys()
        what = "exact: " + self._describe_key(key)

        def reason():
            return why or explain.compile_why(key, old, self.describe_input, self.runtime, self.baked)
        if self.exact_by_padding:
            return self._compile_exact_padded(baked_values, what, reason)
        if uneven is not None:   # blocks of different lengths: the padded program of these sizes
            try:
                return self._compile_exact_padded(baked_values, what, reason)
            except NotPaddable as e:
                raise ValueError(f"{uneven}: blocks of different lengths need the program to run "
                                 f"padded, which it cannot ({e}); give a length the blocks divide") from None
        explain.maybe(explain.recompiles, lambda: explain.compile_reason(
            "specialize and compile exact sizes", key, old, self.describe_input,
            self.runtime, self.baked))
        arg_types = [None] * len(self.lowered.invars)
        for i in self.runtime:
            v = self.jaxpr.invars[i]
            arg_types[i] = runtime.static_type_string(np.shape(args[i]), v.aval.dtype)
        n = len(self.jaxpr.invars)
        host = _evaluate(self.host_eqns, {id(self.jaxpr.invars[i]): v for i, v in baked_values.items()})
        baked_values.update({n + j: host[id(v)] for j, v in enumerate(self.host_vars)})
        module = self.module_text
        start = time.perf_counter()
        with compile_log.step("compile", self.stats, what, reason, sizes=lambda: (
                compile_log.equations_text(compile_log.count_equations(self.jaxpr)))) as st:
            st.waiting = "specializing the module to these shapes"
            text = runtime.specialize(module, arg_types, baked_values)
            self.stats.specializations += 1
            st.sizes = compile_log.sizes_with_ops(st.sizes, text)
            st.waiting = "waiting for XLA"
            exe = self._compile_text(text, start, st)
        self._mark_long(exe, args)
        self.last_specialized = text
        return exe

    def _compile_text(self, text: str, start: float, step: "compile_log.Step"):
        """Compile a static module (through the disk cache) for this segment's exact tier,
        counting it and timing it from ``start`` (the mean feeds ``tiers.worth_exact``)."""
        from .. import runtime
        started = runtime.compiler_started()
        exe, hit = runtime.compile_cached(text, return_hit=True)
        if hit:
            step.disk_hit = True
            self.stats.disk_hits += 1
        else:
            self.stats.compilations += 1
            if started:   # (the process's first compile also started XLA's compiler)
                seconds, previous = time.perf_counter() - start, self.compile_seconds
                self.compile_seconds = seconds if previous is None else 0.75 * previous + 0.25 * seconds
        return exe

    def _compile_exact_padded(self, baked_values, what: str, reason) -> "_ExactPadded":
        """The exact executable of a program with sizes from data: padded to exactly the
        call's input sizes, each size from data to its bound (``padding.pad_jaxpr``)."""
        from ..lowering import module_text
        start = time.perf_counter()
        program = pad_jaxpr(self.jaxpr, self.consts, dict(baked_values))
        sizes = (lambda: compile_log.equations_text(compile_log.count_equations(program.closed.jaxpr)))
        with compile_log.step("lower", self.stats, what, sizes=sizes) as st:
            text = module_text(program.closed)
            st.sizes = compile_log.sizes_with_ops(sizes, text)
        self.stats.lowerings += 1
        self.stats.specializations += 1
        with compile_log.step("compile", self.stats, what, reason, sizes=st.sizes) as st:
            exe = self._compile_text(text, start, st)
        self.last_specialized = text
        return _ExactPadded(PaddedRun(program, exe, text, long_runs(program.closed.jaxpr)))

    def _mark_long(self, exe, args):
        """Runs the cost model may not bound wait interruptibly (``tiers.mark_long``)."""
        estimate = self._cost_estimate()
        if estimate is not False:
            ints = [i for i, v in enumerate(self.jaxpr.invars) if _is_int_scalar(v)]
            baked = set(self.baked)
            tiers.mark_long(exe, estimate, {name: int(args[i]) for i, name in zip(ints, estimate[1])
                                            if name is not None and i in baked})


class _ExactPadded:
    """A padded program compiled for exactly one call's input sizes (``Segment._compile``
    of a program with sizes from data): called with all the segment's inputs."""
    __slots__ = ("run", "__weakref__")

    def __init__(self, run: PaddedRun):
        self.run = run

    def __call__(self, args):
        return self.run(args)


class _SizeRecord:
    """A size served padded: how often, the time its padded runs took (``timed`` of them), the
    fraction of its bucket that is padding, and whether its exact executable was asked for."""
    __slots__ = ("calls", "seconds", "timed", "waste", "requested")

    def __init__(self, waste: float):
        self.calls, self.seconds, self.timed = 0, 0.0, 0
        self.waste = waste
        self.requested = False


#: ``Segment._padded_run``'s answer for sizes that no compiled bucket holds, when the call
#: would wait for its bucket's compile: their exact executable compiles on the call path
#: instead (its module, without the padded program's masks, compiles faster), and the
#: bucket and the next one up compile in the background after it. One compile more than
#: waiting for the bucket, so only where background compiles are welcome
#: (``tiers.compile_ahead()``)
_EXACT_FIRST = object()


class CompilingBucket:
    """A size bucket whose padded program is compiling in the background, or (``queued``
    False) not yet asked for (see ``Segment._padded_run``); ``ready()`` waits for it (or
    compiles it, if the background thread has not started it yet)."""
    __slots__ = ("segment", "bounds", "values", "queued")

    def __init__(self, segment: Segment, bounds, values, queued: bool = True):
        self.segment, self.bounds, self.values, self.queued = segment, bounds, values, queued

    def ready(self) -> Optional[PaddedRun]:
        """The bucket's padded program, or None when the program cannot run padded."""
        seg = self.segment
        try:
            return seg.padded.get_or_fill(self.bounds, lambda: seg._build_padded(self.bounds, self.values))
        except NotPaddable as e:
            seg._not_paddable(e)
            return None


class _EagerStop:
    """The check an eager run makes before each equation (``core.interpret.interruptible``):
    once the segment's eager time, this run's included, would have paid for a compile, the
    bucket is queued (with the next one up); the run gives way once the bucket is compiled."""
    __slots__ = ("segment", "bucket", "start")

    def __init__(self, segment: Segment, bucket: CompilingBucket, start: float):
        self.segment, self.bucket, self.start = segment, bucket, start

    def __call__(self) -> bool:
        seg, bucket = self.segment, self.bucket
        if not bucket.queued and seg.eager_seconds + time.perf_counter() - self.start >= seg._compile_cost():
            bucket.queued = True
            seg.eager_seconds = 0.0
            seg._queue_buckets(bucket.bounds, bucket.values, tiers.NEEDED)
        return bucket.bounds in seg.padded or not seg.paddable


def _elements(bounds) -> int:
    """The number of elements of a bucket's sizes (their product)."""
    return math.prod(bounds)


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
        # the values are Python scalars: give them back their dtypes (a uint64 size is not
        # an int64 one; the impls refuse operands of two dtypes)
        vals = [np.asarray(a.val) if isinstance(a, Literal) else np.asarray(env[id(a)], a.aval.dtype)
                for a in eqn.invars]
        outs = impl_rules[eqn.primitive](*vals, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = np.asarray(x).item()
    return env


def _owned(outs: List[np.ndarray], outvars, inputs: Sequence[Any]) -> List[np.ndarray]:
    """The results of a run as arrays the caller owns, as XLA's are: writable, and sharing
    memory with nothing else. An output is copied when it is read-only (a numpy view such
    as a broadcast), a literal of the jaxpr, or shares memory with an argument or a
    constant of the program (a loop that ran zero times, a branch returning its input) or
    with an earlier output (a value returned twice)."""
    borrowed = [x for x in inputs if isinstance(x, np.ndarray)]
    res = []
    for x, v in zip(outs, outvars):
        if (not x.flags.writeable or isinstance(v, Literal)
                or any(np.may_share_memory(x, b) for b in borrowed)):
            x = x.copy()
        borrowed.append(x)
        res.append(x)
    return res
