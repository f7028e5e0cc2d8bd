"""Lowering of the special-function primitives (``dynjax.lax.special``).

* ``erf``, ``erfc``, ``erf_inv``, ``lgamma``, ``digamma``, ``bessel_i1e``, ``zeta`` and
  ``polygamma`` become the CHLO operations of the same name (``chlo.erf`` ...), which XLA
  expands into polynomial and rational approximations.
* ``igamma``, ``igammac``, ``bessel_i0e``, ``igamma_grad_a``, ``random_gamma_grad`` and
  ``regularized_incomplete_beta`` have no CHLO operation: their algorithms are
  written with ``dynjax.lax`` (``lax/special_series.py``: a series, a continued fraction, an
  asymptotic expansion, each a ``while_loop``). The rule flattens the operands to one axis
  (``dynamic_reshape`` when a dim is dynamic), lowers in place that function traced on a 1-D
  array of the operand dtype (traced once per dtype with a dynamic length ``n``, given the
  element count; or, when every size is static as in a padded bucket, once per length), and
  reshapes the result back.
* 16-bit floats are computed in float32 and rounded (XLA's expansions are written for f32/f64).
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, Tuple

import numpy as np
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from ..lax import special as S
from ..lax import special_series as series
from .core import register_lowering

_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)


def _widened(ctx, eqn, op: Callable):
    """``op`` on the operands, in float32 for a 16-bit float dtype, converted back."""
    def run(*args):
        dt = eqn.outvars[0].aval.dtype
        if np.dtype(dt).itemsize != 2:
            return op(*args)
        return ctx.convert(op(*(ctx.convert(a, _F32) for a in args)), dt)
    return run


def _same_shape(ctx, eqn, args):
    """Rank-0 operands broadcast to the result's shape (elementwise binary primitives)."""
    out = eqn.outvars[0].aval
    return [ctx.broadcast_like(a, out) for a in args]


for _p, _op in ((S.erf_p, chlo.ErfOp), (S.erfc_p, chlo.ErfcOp), (S.erf_inv_p, chlo.ErfInvOp),
                (S.lgamma_p, chlo.LgammaOp), (S.digamma_p, chlo.DigammaOp),
                (S.bessel_i1e_p, chlo.BesselI1eOp)):
    register_lowering(_p, lambda ctx, eqn, x, _op=_op: _widened(ctx, eqn, lambda v: _op(v).result)(x))

for _p, _op in ((S.zeta_p, chlo.ZetaOp), (S.polygamma_p, chlo.PolygammaOp)):
    register_lowering(_p, lambda ctx, eqn, x, y, _op=_op: _widened(ctx, eqn, lambda a, b: _op(a, b).result)(
        *_same_shape(ctx, eqn, [x, y])))


# ----------------------------------------------------------------------------------------------
# algorithms written with dynjax.lax, traced once per dtype and lowered in place
# ----------------------------------------------------------------------------------------------
_TRACED: Dict[Tuple[str, str], object] = {}
_LOCK = threading.Lock()


def _traced(name: str, fn: Callable, nargs: int, dtype, length=None):
    """The closed jaxpr of ``fn`` on ``nargs`` 1-D arrays of ``dtype``: of a dynamic length
    (the first input) when ``length`` is None, else of that static length. A module whose
    shapes are all static (a padded bucket) is compiled without shape refinement, so it
    must not hold the dynamic form."""
    key = (name, np.dtype(dtype).name, length)
    with _LOCK:
        if key not in _TRACED:
            from ..tracing import make_jaxpr
            example = [np.zeros(2 if length is None else length, dtype)] * nargs
            axes = ({0: "n"},) * nargs if length is None else None
            _TRACED[key] = make_jaxpr(fn, abstracted_axes=axes)(*example)
        return _TRACED[key]


def _element_count(ctx, dims):
    """The number of elements of ``dims`` (ints / dim Vars): an int, or a ``tensor<i64>``."""
    static = 1
    dynamic = None
    for d in dims:
        if isinstance(d, (int, np.integer)):
            static *= int(d)
        else:
            v = ctx.dim_value(d)
            dynamic = v if dynamic is None else hlo.MulOp(dynamic, v).result
    if dynamic is None:
        return static
    if static != 1:
        dynamic = hlo.MulOp(dynamic, ctx.constant(static, _I64)).result
    return dynamic


def _via_lax(name: str, fn: Callable):
    def rule(ctx, eqn, *args):
        out = eqn.outvars[0].aval
        dt = np.dtype(out.dtype)
        wide = _F32 if dt.itemsize == 2 else dt
        args = [ctx.convert(a, wide) for a in _same_shape(ctx, eqn, list(args))]
        count = _element_count(ctx, out.shape)
        flat = [ctx.reshape(a, [count]) for a in args]
        if isinstance(count, int):
            res, = ctx.lower_jaxpr(_traced(name, fn, len(args), wide, count), flat)
        else:
            res, = ctx.lower_jaxpr(_traced(name, fn, len(args), wide), [ctx.dim_value(count)] + flat)
        res = ctx.reshape(res, list(out.shape))
        return ctx.convert(res, dt)
    return rule


register_lowering(S.igamma_p, _via_lax("igamma", series.igamma))
register_lowering(S.igammac_p, _via_lax("igammac", series.igammac))
register_lowering(S.bessel_i0e_p, _via_lax("bessel_i0e", series.bessel_i0e))
register_lowering(S.igamma_grad_a_p, _via_lax("igamma_grad_a", series.igamma_grad_a))
register_lowering(S.random_gamma_grad_p, _via_lax("random_gamma_grad", series.random_gamma_grad))
register_lowering(S.regularized_incomplete_beta_p, _via_lax("betainc", series.betainc))
