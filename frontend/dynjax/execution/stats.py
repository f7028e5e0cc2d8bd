"""The counters and times a ``qjit`` function keeps: what ``cache_info()``, ``f.stats`` and
``dynjax.explain(f)`` report. Every program, segment and step of one function adds to its
one ``Stats``."""
from __future__ import annotations

from typing import Any, Dict, Optional


class Stats:
    """Counters a ``qjit`` function reports through ``cache_info()``, and the size of the
    executable cache of each of its segments (``cache_size``). ``compilations`` counts the
    exact-size executables, ``padded_compilations`` the bucket ones (``tiers``);
    ``exact_runs`` / ``padded_runs`` / ``eager_runs`` / ``host_runs`` count which tier served
    each segment run, ``host_programs`` the programs built for the host tier (``host_tier``),
    ``host_reuses`` the calls a program built at other sizes served as it is
    (``host_reach.Reach``: each call a segment's server serves, and the first of a
    size only the reach's full checks admit, whose later calls the dispatch table serves).
    ``exact_compilations`` counts the exact executables made for recurring sizes (on
    the background thread, ``tiers.worth_exact``) and ``exact_calls_served`` the calls they
    served; ``dropped_jobs`` the background jobs the full queue dropped (``tiers.submit``).
    ``trace_seconds`` / ``lowering_seconds`` / ``compile_seconds`` / ``disk_load_seconds``
    add up the time of each kind of step (``compile_log``); ``function`` names the function
    in the compile log."""

    def __init__(self, cache_size: Optional[int] = None, function: Optional[str] = None):
        self.cache_size = cache_size
        self.function = function
        self.trace_seconds = 0.0
        self.lowering_seconds = 0.0
        self.compile_seconds = 0.0
        self.disk_load_seconds = 0.0
        self.lowerings = 0
        self.specializations = 0
        self.compilations = 0
        self.padded_compilations = 0
        self.background_compilations = 0
        self.disk_hits = 0
        self.host_steps = 0
        self.exact_runs = 0
        self.padded_runs = 0
        self.eager_runs = 0
        self.host_runs = 0
        self.host_programs = 0
        self.host_reuses = 0
        self.exact_compilations = 0
        self.exact_calls_served = 0
        self.dropped_jobs = 0

    def job_dropped(self) -> None:
        """A background job of this function was dropped by the full queue."""
        self.dropped_jobs += 1

    def counters(self) -> Dict[str, Any]:
        """The counters and times, by name (not ``function`` nor ``cache_size``)."""
        items = [(k, v) for k, v in vars(self).items() if k not in ("function", "cache_size")]
        return dict([kv for kv in items if not isinstance(kv[1], float)] +
                    [kv for kv in items if isinstance(kv[1], float)])

    def __repr__(self):
        items = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in self.counters().items())
        return f"Stats({self.function or ''}{': ' if self.function else ''}{items})"

    def __str__(self):
        title = f"compile statistics of {self.function}" if self.function else "compile statistics"
        width = max(len(k) for k in self.counters())
        return "\n".join([title] + [f"  {k:<{width}}  " + (f"{v:.3f} s" if isinstance(v, float) else str(v))
                                    for k, v in self.counters().items()])
