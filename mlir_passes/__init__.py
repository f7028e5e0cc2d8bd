"""MLIR passes and the pass driver for dynjax.

This package owns every use of ``jaxlib.mlir`` / ``jaxlib._jax.mlir`` that
transforms StableHLO modules:

* :func:`make_context` / :func:`get_context` -- an ``ir.Context`` with the
  dialects our lowering emits (func, arith, stablehlo, chlo, ...).
* :func:`specialize` -- turn a module whose ``@main`` has dynamic (``?``)
  shapes into a fully static one, given concrete argument types and the
  values of the leading dimension arguments.
* :func:`run_pipeline` -- run a textual pass pipeline on a module.
* :func:`static_type_string` -- numpy shape/dtype -> ``tensor<5x3xf64>``.

The command line driver is ``dynjax-opt`` (:mod:`mlir_passes.cli`).
"""

from .context import get_context, make_context, run_pipeline
from .specialize import (
    SpecializationError,
    main_signature,
    specialize,
    static_type_string,
)

__all__ = [
    "SpecializationError",
    "get_context",
    "main_signature",
    "make_context",
    "run_pipeline",
    "specialize",
    "static_type_string",
]
