"""``dynjax.explain(f)``: what a ``qjit`` function has traced, compiled and run, in one page.

The summary is read from the function's caches and its ``Stats`` (see ``compile_log`` for
how the times are measured), so it costs nothing until asked for. ``CacheInfo`` is the dict
``f.cache_info()`` returns, printed one counter a line.
"""
from __future__ import annotations

from typing import List

from .compile_log import count_equations, equations_text, seconds_text


class CacheInfo(dict):
    """``f.cache_info()``: a dict of counters (every key of the dict is kept) that prints
    one counter a line (``print(info)``) and reprs like ``functools``' cache info."""

    def __repr__(self):
        return "CacheInfo(" + ", ".join(f"{k}={v}" for k, v in self.items()) + ")"

    def __str__(self):
        width = max((len(k) for k in self), default=0)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.items())


def cache_info(f) -> CacheInfo:
    """``f.cache_info()`` of the ``qjit`` function ``f`` (see ``QJIT.cache_info``)."""
    return CacheInfo({"calls": f.calls, "traces": f.traces, "inlined_traces": f.inlined_traces,
                      **execution_counters(f.stats)})


def execution_counters(s) -> dict:
    """The counters of a function's execution statistics (``execution.stats.Stats``): the
    part of ``cache_info()`` that qjit functions and exported programs share."""
    from .tiers import queued
    return {"lowerings": s.lowerings, "specializations": s.specializations,
            "compilations": s.compilations, "padded_compilations": s.padded_compilations,
            "background_compilations": s.background_compilations,
            "disk_cache_hits": s.disk_hits, "host_steps": s.host_steps,
            "exact_runs": s.exact_runs, "padded_runs": s.padded_runs, "eager_runs": s.eager_runs,
            "host_runs": s.host_runs, "host_programs": s.host_programs, "host_reuses": s.host_reuses,
            "exact_compilations": s.exact_compilations, "exact_calls_served": s.exact_calls_served,
            "queued_jobs": queued(s), "dropped_jobs": s.dropped_jobs}


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _few(items: List[str], limit: int = 6) -> str:
    return ", ".join(items[:limit]) + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def _signature(traced) -> str:
    """``(f64[n,3], i64[]) -> f64[n]``: the explicit argument and result types of a trace."""
    jaxpr = traced.closed_jaxpr.jaxpr
    ins = [v.aval.str_short() for v, (_, explicit) in zip(jaxpr.invars, jaxpr.in_type) if explicit]
    outs = [v.aval.str_short() for v, explicit in zip(jaxpr.outvars, jaxpr.out_explicit) if explicit]
    return "(" + ", ".join(ins) + ") -> " + ("(" + ", ".join(outs) + ")" if len(outs) != 1 else outs[0])


def _executables(program):
    """``(exact, buckets, capacity)``: the executables of one trace's program per tier, each
    as ``count (which sizes)``; ``capacity`` is "" when the program has no resizing loops."""
    from .padded_runs import CapacityProgram
    exact: List[str] = []
    buckets: List[str] = []
    capacity: List[str] = []
    n_exact = n_buckets = 0
    for seg in program.segments():
        if isinstance(seg, CapacityProgram):
            capacity += [f"buckets {list(b)} capacities {[list(c) for c in caps]}" for b, caps in seg.runs.keys()]
            continue
        keys = seg.cache.keys()
        n_exact += len(keys)
        if len(seg.baked) == 1 and len({k[1] for k in keys}) == len(keys):   # one size: its values
            if keys:
                exact.append(f"{seg.describe_input(seg.baked[0])} = " + ", ".join(
                    str(v) for v in sorted(k[1][0] for k in keys)))
        else:
            exact += [seg._describe_key(k) for k in keys]
        bounds = seg.padded.keys()
        n_buckets += len(bounds)
        if bounds:
            labels = [seg.describe_input(i) for i in seg.baked]
            label = labels[0] if len(labels) == 1 else "(" + ", ".join(labels) + ")"
            buckets.append(f"{label} <= " + ", ".join(str(b[0]) if len(b) == 1 else str(tuple(b))
                                                      for b in sorted(bounds)))
    return (f"{n_exact}" + (f" ({_few(exact)})" if exact else ""),
            f"{n_buckets}" + (f" ({'; '.join(buckets)})" if buckets else ""),
            f"{len(capacity)} ({_few(capacity)})" if capacity else "")


def explain_function(f) -> str:
    """A readable summary of the ``qjit`` function ``f``: calls, its traces (signatures and
    sizes), its executables per tier (exact sizes, padded size buckets, capacity programs
    of resizing loops, and how many were compiled in the background), the time spent
    tracing, lowering and compiling, and its cache hits and misses."""
    from .tiers import queued
    s = f.stats
    name = s.function or "function"
    entries = f._by_abstract.values()
    lines = [f"{name}: {_plural(f.calls, 'call')}, {_plural(f.traces, 'trace')}"
             + (f" (+ {f.inlined_traces} inlined into other traces)" if f.inlined_traces else "")
             + f", {len(entries)} cached:"]
    for e in entries:
        lines.append(f"  {_signature(e.traced)}: "
                     f"{equations_text(count_equations(e.traced.closed_jaxpr.jaxpr))}")
        exact, buckets, capacity = _executables(e.program)
        lines.append(f"    exact sizes: {exact}")
        lines.append(f"    padded size buckets: {buckets}")
        if capacity:
            lines.append(f"    capacity programs (resizing loops): {capacity}")
    lines.append(f"  compiled in the background: {s.background_compilations} "
                 f"({_plural(s.exact_compilations, 'exact executable')} for recurring sizes; "
                 f"{queued(s)} waiting, {s.dropped_jobs} dropped)")
    lines.append(f"  time: tracing {seconds_text(s.trace_seconds)}, lowering {seconds_text(s.lowering_seconds)}, "
                 f"XLA compiling {seconds_text(s.compile_seconds)}"
                 + (f", loading from the disk cache {seconds_text(s.disk_load_seconds)}" if s.disk_hits else ""))
    lines.append(f"  runs: {s.exact_runs} exact, {s.padded_runs} padded, {s.eager_runs} eager (numpy, "
                 f"while a bucket compiled)" + (f", {s.host_steps} host steps" if s.host_steps else ""))
    traced_on_call = f.traces - (1 if f._aot_traced else 0)
    lines.append(f"  trace cache: {_plural(max(f.calls - traced_on_call, 0), 'hit')}, "
                 f"{_plural(traced_on_call, 'miss', 'misses')}")
    compiled = s.compilations + s.padded_compilations
    lines.append(f"  executable cache: {_plural(compiled, 'XLA compile')}, "
                 f"{_plural(s.disk_hits, 'disk cache hit')}")
    return "\n".join(lines)


def explain(f) -> str:
    """What the ``qjit`` function ``f`` has done, as a readable page (``print(explain(f))``):
    its calls, its traces (signatures, equations), its executables per tier (exact sizes,
    padded size buckets, capacity programs, background compiles), the time spent tracing,
    lowering and compiling, and its cache hits and misses. Same as ``f.explain()``."""
    from ..core.errors import user_error
    from ..qjit import QJIT
    try:
        if not isinstance(f, QJIT):
            raise TypeError(f"explain: f must be a function made by dynjax.qjit or dynjax.jit, "
                            f"got {type(f).__name__}")
        return explain_function(f)
    except Exception as e:
        raise user_error(e)
