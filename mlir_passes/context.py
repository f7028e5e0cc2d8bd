"""MLIR context construction for dynjax (jaxlib's bundled MLIR).

``make_context()`` builds a fresh ``ir.Context`` with every dialect our
lowering and passes need; ``get_context()`` returns one shared, lazily built
context, renewed every ``RECYCLE_AFTER`` uses to bound its memory.  StableHLO
passes are registered once per process so that ``PassManager.parse`` understands
``stablehlo-*`` pass names.
"""

from __future__ import annotations

import os
import threading

from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import chlo, sdy, stablehlo
from jaxlib.mlir._mlir_libs import _jax_mlir_ext

__all__ = ["make_context", "get_context", "run_pipeline", "register_passes"]

_lock = threading.RLock()
_shared_context: ir.Context | None = None
_passes_registered = False


_abandoned: list = []   # contexts of a parent process, never destroyed in a forked child


def _after_fork_in_child() -> None:
    """A context's thread pool has no workers after fork (a pass pipeline waiting for them, or
    destroying the context, would hang): the child builds new contexts, and keeps the parent's
    alive; the lock may have been held by another thread of the parent."""
    global _lock, _shared_context
    _abandoned.append(_shared_context)
    _shared_context = None
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def register_passes() -> None:
    """Register the StableHLO passes with the global MLIR pass registry (once)."""
    global _passes_registered
    if _passes_registered:
        return
    with _lock:
        if not _passes_registered:
            stablehlo.register_stablehlo_passes()
            _passes_registered = True


def make_context() -> ir.Context:
    """Return a new ``ir.Context`` with func/arith/scf/tensor/... plus stablehlo, chlo and sdy loaded."""
    register_passes()
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    # func, arith, math, scf, cf, tensor, shape, memref, vector, ... (a bare
    # Context knows none of them, not even `func`).
    _jax_mlir_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)   # Shardy's meshes and shardings (partitioned programs)
    return ctx


#: the shared context is replaced by a new one after this many uses (a lowering each): a
#: context keeps every constant and type it ever made until it is destroyed (a function
#: closing over a 1 MiB array left about that much behind after it was gone), and a module
#: made in the old one keeps it alive as long as the module lives
RECYCLE_AFTER = 200
_shared_uses = 0


def get_context() -> ir.Context:
    """Return the process-wide shared context (created on first use, and anew every
    ``RECYCLE_AFTER`` calls: each caller builds its module in the context it was given)."""
    global _shared_context, _shared_uses
    with _lock:
        if _shared_context is None or _shared_uses >= RECYCLE_AFTER:
            _shared_context = make_context()
            _shared_uses = 0
        _shared_uses += 1
        return _shared_context


def run_pipeline(module: "ir.Module", pipeline: str) -> None:
    """Run a textual pass pipeline (``builtin.module(...)``) on ``module`` in place.

    Raises ``ValueError`` for an unknown pass or a pipeline syntax error, and
    ``ValueError`` (carrying MLIR's diagnostics) when a pass fails.
    """
    register_passes()
    ctx = module.context
    try:
        pm = passmanager.PassManager.parse(pipeline, ctx)
    except Exception as e:  # MLIRError / ValueError depending on version
        raise ValueError(f"invalid pass pipeline {pipeline!r}: {e}") from None
    try:
        pm.run(module.operation)
    except Exception as e:
        raise ValueError(f"pass pipeline {pipeline!r} failed: {e}") from None
