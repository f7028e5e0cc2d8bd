"""What a ``qjit`` function shows of itself: the latest call's jaxpr, its dynamic and
specialized StableHLO, XLA's optimized HLO, its cost model, counters and a readable summary.
A mixin of ``QJIT`` (``qjit.py``), which keeps the traces these read (``_last``,
``_by_abstract``); nothing here runs on a call path."""
from __future__ import annotations

from typing import Dict, Optional


class Introspection:
    """``f.jaxpr``, ``f.mlir``, ``f.mlir_specialized``, ``f.hlo``, ``f.cost()``,
    ``f.cache_info()`` and ``f.explain()`` of a ``qjit`` function."""

    def _entry(self):
        """The latest call's trace, else any trace (ahead-of-time), else None."""
        if self._last is not None:
            return self._last
        traced = self._by_abstract.values()
        return traced[-1] if traced else None

    def _entry_compiled(self):
        """``_entry()``, with an exact executable for each segment that the host tier served
        at the latest call (``Segment.xla_view``): what ``mlir_specialized`` and ``hlo`` show."""
        e = self._entry()
        for s in e.program.segments() if e else ():
            getattr(s, "xla_view", lambda: None)()   # (host steps have none)
        return e

    @property
    def jaxpr(self):
        """The ClosedJaxpr of the latest call's trace (None before the first call, unless
        compiled ahead of time)."""
        e = self._entry()
        return None if e is None else e.traced.closed_jaxpr

    @property
    def mlir(self) -> Optional[str]:
        """The dynamic StableHLO module (``?`` dims) of the latest call's trace (None before
        the first call, unless compiled ahead of time)."""
        from .lowering import module_text
        e = self._entry()
        if e is None:
            return None
        if e.mlir is None:
            e.mlir = module_text(e.closed)   # the program that runs
        return e.mlir

    @property
    def mlir_specialized(self) -> Optional[str]:
        """The static modules compiled for the latest call's signature (None before a call)."""
        e = self._entry_compiled()
        texts = [s.last_specialized for s in e.program.segments() if s.last_specialized] if e else []
        return "\n".join(texts) if texts else None

    @property
    def hlo(self) -> Optional[str]:
        """XLA's optimized HLO of the executables used by the latest call (None before a call)."""
        from .runtime import hlo_text
        e = self._entry_compiled()
        texts = [hlo_text(s.last_executable) for s in e.program.segments()
                 if s.last_executable is not None] if e else []
        return "\n".join(texts) if texts else None

    def cost(self, *args, **kwargs):
        """The cost model of this function for arguments like ``args`` (its own
        ``abstracted_axes`` and static arguments): FLOPs, transcendentals and bytes as
        formulas in the dynamic dims (``dynjax.cost_model``)."""
        from .cost_model import jaxpr_cost, parameter_names
        self._check_call(args, kwargs)
        args, kwargs, static_kwargs = self._bind_kwargs(args, kwargs)
        args = self._lists_as_arrays(args)
        jaxpr = self._lookup(args, kwargs, static_kwargs).traced.closed_jaxpr.jaxpr
        return jaxpr_cost(jaxpr, names=parameter_names(jaxpr, self.fun, args, self.static_argnums))

    def cache_info(self) -> Dict[str, int]:
        """How many traces, lowerings, specializations and compilations happened, and which
        tier served the runs (``exact_runs``: exact-size executables, ``padded_runs``: a size
        bucket's padded one, ``eager_runs``: numpy while the bucket compiled; see
        ``execution.tiers``), and the background work: ``exact_compilations`` exact
        executables made for recurring sizes and ``exact_calls_served`` the calls they served,
        ``queued_jobs`` this function's jobs waiting for the compile thread now and
        ``dropped_jobs`` those the full queue dropped; ``host_runs`` / ``host_programs`` /
        ``host_reuses`` the runs, builds and reuses of the host tier's numpy programs.
        ``inlined_traces`` counts the traces made for calls inside another trace or
        transformation (inlined, not compiled)."""
        from .execution.summary import cache_info
        return cache_info(self)

    def explain(self) -> str:
        """A readable summary of what this function traced, compiled and ran (``dynjax.explain``)."""
        from .execution.summary import explain_function
        return explain_function(self)
