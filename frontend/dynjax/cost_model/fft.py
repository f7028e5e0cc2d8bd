"""Cost rule of the ``fft`` primitive (``dynjax.lax.fft``).

A transform of ``N`` points (the product of the lengths) costs ``5 N log2(N)`` FLOPs (the
radix-2 Cooley-Tukey count of complex flops; half of it for RFFT / IRFFT, which work on half
the spectrum), per member of the batch, with ``log2(N)`` rounded up. On a dynamic length
``log2`` is not a polynomial: the formula uses a symbol ``log2(<N>)`` that ``Cost.at``
computes from the sizes (``Cost.definitions``).
"""
from __future__ import annotations

from ..core.symbolic import Expr, Symbol, to_str
from ..lax.fft import FftType, fft_p
from . import Cost, _symbols_of, cost_rules


def _ceil_log2(n: int) -> int:
    return max(int(n) - 1, 0).bit_length()


class _Log2:
    """The value of a ``log2(N)`` symbol: ``ceil(log2(N))`` of the points ``N`` (0 for N <= 1)."""

    def __init__(self, points: Expr):
        self.points = points

    def compute(self, env):
        return [_ceil_log2(env.eval(self.points))]

    def free(self) -> set:
        return _symbols_of(self.points)


def _fft_cost(eqn, sz):
    a, out = eqn.invars[0].aval, eqn.outvars[0].aval
    k = len(eqn.params["fft_lengths"])
    t = FftType(int(eqn.params["fft_type"]))
    real = a if t != FftType.IRFFT else out    # the full-length side
    batch, points = Expr.const(1), Expr.const(1)
    for d in real.shape[:real.ndim - k]:
        batch = batch * sz.value(d)
    for d in real.shape[real.ndim - k:]:
        points = points * sz.value(d)
    z = Expr.const(0)
    n = points.as_const()
    definitions = ()
    if n is not None:
        log2 = Expr.const(_ceil_log2(n))
    else:
        sym = Symbol(f"log2({to_str(points)})")
        log2 = Expr.symbol(sym)
        definitions = (((sym,), _Log2(points)),)
    flops = batch * points * log2 * 5
    if t in (FftType.RFFT, FftType.IRFFT):
        flops = flops.floordiv(2)
    return Cost(flops, z, z, z, definitions)


cost_rules[fft_p] = _fft_cost
