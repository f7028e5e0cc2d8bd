"""``dynjax.nn`` activation functions and friends, written with ``dynjax.numpy`` / ``lax``.

Semantics follow ``jax.nn`` (names, signatures, defaults, dtypes): integer and bool operands
of the smooth functions are promoted to the default float dtype (float64), float16 /
bfloat16 / float32 stay as they are, Python scalars are weak.

Numerical care:

* ``softplus`` is ``max(x, 0) + log1p(exp(-|x|))`` (no overflow), ``log_sigmoid`` is
  ``-softplus(-x)``;
* ``logsumexp`` shifts by the maximum (held constant under differentiation, as JAX's
  ``stop_gradient``; an infinite maximum shifts by 0), so ``logsumexp([1000, 1000])`` is
  ``1000 + log 2`` and a row of ``-inf`` gives ``-inf``;
* ``softmax`` / ``log_softmax`` shift by the row maximum; a row that is all ``-inf`` gives
  NaN, as in JAX; ``softmax`` has JAX's custom derivative ``y * (dx - sum(y * dx))``;
* ``relu`` and ``relu6`` have custom derivatives that are 0 at the kinks (``relu'(0) = 0``),
  ``softplus`` the derivative ``sigmoid(x)``.

Every function works on dynamic dims (an axis named in ``qjit(abstracted_axes=...)``), under
``grad`` and ``vmap``, eagerly and compiled.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import is_inexact_dtype
from ..core.trace import Tracer, typeof
from ..lax import api as lax_api
from ..lax.api import canonicalize_dim
from ..numpy._promote import broadcast_arrays
from ..transforms.custom import custom_jvp

__all__ = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus", "elu",
           "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "glu", "soft_sign",
           "squareplus", "mish", "sparse_plus", "sparse_sigmoid", "identity",
           "softmax", "log_softmax", "logsumexp", "one_hot", "standardize", "tanh", "log1mexp",
           "logmeanexp"]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def _array(x, name="x"):
    """``x`` as an array (tracers pass through); a TypeError naming the argument otherwise."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    try:
        return jnp.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be an array or a number, got {type(x).__name__}") from e


def _inexact(x, name="x"):
    """``x`` as a floating-point array: integers and bools go to float64 (JAX's promotion)."""
    x = _array(x, name)
    if not is_inexact_dtype(typeof(x).dtype):
        x = jnp.asarray(x, dtype=np.float64)
    return x


def _quiet(fn):
    """Run ``fn`` with numpy's floating-point warnings off: eagerly, dynjax arrays are numpy
    arrays, and ``inf - inf`` in a masked-out branch is expected (JAX does not warn either)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return wrapper


def _floating(x, name):
    """``x``, which must be floating-point or complex (JAX's sigmoid refuses integers)."""
    x = _array(x)
    if not is_inexact_dtype(typeof(x).dtype):
        raise TypeError(f"{name}: x must be a floating-point array, got dtype {typeof(x).dtype}")
    return x


def _const(value, like):
    return np.asarray(value, dtype=typeof(like).dtype)


@custom_jvp
def stop_gradient(x):
    """``x``, with a zero derivative (the forward value passes through)."""
    return x


@stop_gradient.defjvp
def _stop_gradient_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x, jnp.zeros_like(t)


def _axes(axis, ndim, name="axis"):
    """A tuple of non-negative axes from ``None`` / an int / a sequence of ints."""
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{name} must be an int or a tuple of ints, got {type(a).__name__}") from None
        if not -ndim <= a < ndim:
            raise ValueError(f"{name} {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {name}: {items}")
    return tuple(out)


def _where_mask(where, x):
    if where is None:
        return None
    w = _array(where, "where")
    if typeof(w).dtype != np.bool_:
        raise TypeError(f"where must be a bool array, got dtype {typeof(w).dtype}")
    return jnp.broadcast_to(w, typeof(x).shape)


def _masked_sum(x, axis, where, keepdims):
    if where is not None:
        x = jnp.where(where, x, _const(0, x))
    return jnp.sum(x, axis=axis, keepdims=keepdims)


def _masked_max(x, axis, where, keepdims, initial=-np.inf):
    """The maximum over ``axis`` of the elements ``where`` holds, at least ``initial``: the
    shift of softmax, log_softmax and logsumexp, whose results are NaN wherever a NaN takes
    part, whatever the shift; so a NaN may be dropped from it (``reduce_max_shift``)."""
    fill = _const(initial, x)
    if where is not None:
        x = jnp.where(where, x, fill)
    m = lax_api.reduce_max_shift(x, tuple(axis))   # -inf over an empty axis (jnp.max refuses it)
    if keepdims:
        m = jnp.expand_dims(m, tuple(axis))
    return jnp.maximum(m, fill)


# ----------------------------------------------------------------------------------------------
# elementwise activations
# ----------------------------------------------------------------------------------------------
@custom_jvp
def _relu(x):
    return jnp.maximum(x, _const(0, x))


@_relu.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _relu(x), jnp.where(x > _const(0, x), t, jnp.zeros_like(t))


@_quiet
def relu(x):
    """The rectified linear unit ``max(x, 0)``; its derivative at 0 is 0 (as in JAX)."""
    return _relu(_array(x))


@custom_jvp
def _relu6(x):
    return jnp.minimum(jnp.maximum(x, _const(0, x)), _const(6, x))


@_relu6.defjvp
def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = (x > _const(0, x)) & (x < _const(6, x))
    return _relu6(x), jnp.where(inside, t, jnp.zeros_like(t))


@_quiet
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative is 0 at 0 and at 6."""
    return _relu6(_inexact(x))


@_quiet
def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))`` (a floating-point ``x``, as in JAX)."""
    return lax.logistic(_floating(x, "sigmoid"))


@custom_jvp
def _softplus(x):
    return jnp.maximum(x, _const(0, x)) + jnp.log1p(jnp.exp(-jnp.abs(x)))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    # sigmoid(x) everywhere (the formula's max and abs would leave the kink at 0 to the
    # conventions of their derivatives)
    (x,), (t,) = primals, tangents
    return _softplus(x), t * lax.logistic(x)


@_quiet
def softplus(x):
    """``log(1 + exp(x))``, computed as ``max(x, 0) + log1p(exp(-|x|))`` (no overflow), with
    the derivative ``sigmoid(x)`` (JAX's ``logaddexp(x, 0)``)."""
    return _softplus(_inexact(x))


@_quiet
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``."""
    x = _inexact(x)
    return -softplus(-x)


@_quiet
def silu(x):
    """The SiLU (swish) activation ``x * sigmoid(x)`` (a floating-point ``x``, as in JAX)."""
    x = _floating(x, "silu")
    return x * sigmoid(x)


swish = silu


@_quiet
def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit: ``x * Phi(x)`` with ``Phi`` the standard normal CDF
    (``approximate=False``), or its tanh approximation
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x**3)))`` (``approximate=True``, the
    default), computed as ``x * sigmoid(2 sqrt(2 / pi) (x + 0.044715 x**3))``, which keeps its
    relative accuracy for negative ``x`` (JAX's form loses digits there: ``1 + tanh`` cancels)."""
    x = _inexact(x)
    if approximate:
        # (1 + tanh(z)) / 2 = sigmoid(2 z): no cancellation for negative x
        c = _const(2 * np.sqrt(2 / np.pi), x)
        return x * lax.logistic(c * (x + _const(0.044715, x) * (x * x * x)))
    return x * (lax.erfc(-x * _const(1 / np.sqrt(2), x)) * _const(0.5, x))


@_quiet
def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _inexact(x)
    safe = jnp.where(x > _const(0, x), _const(0, x), x)
    return jnp.where(x > _const(0, x), x, alpha * jnp.expm1(safe))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@_quiet
def selu(x):
    """The scaled ELU ``scale * elu(x, alpha)`` (``alpha = 1.6732632...``, ``scale = 1.0507009...``)."""
    x = _inexact(x)
    return _const(_SELU_SCALE, x) * elu(x, _const(_SELU_ALPHA, x))


@_quiet
def celu(x, alpha=1.0):
    """``max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)``."""
    x = _inexact(x)
    safe = jnp.where(x > _const(0, x), _const(0, x), x)
    return jnp.where(x > _const(0, x), x, alpha * jnp.expm1(safe / alpha))


@_quiet
def leaky_relu(x, negative_slope=1e-2):
    """``x`` for ``x >= 0``, else ``negative_slope * x``."""
    x = _inexact(x)
    return jnp.where(x >= _const(0, x), x, negative_slope * x)


@_quiet
def hard_tanh(x):
    """``-1`` below -1, ``1`` above 1, ``x`` between (integers stay integers, as in JAX)."""
    x = _array(x)
    one = _const(1, x)
    return jnp.where(x > one, one, jnp.where(x < -one, -one, x))


@_quiet
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    x = _inexact(x)
    return relu6(x + _const(3, x)) / _const(6, x)


@_quiet
def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    x = _inexact(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@_quiet
def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = _inexact(x)
    return x / (jnp.abs(x) + _const(1, x))


@_quiet
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
    x = _inexact(x)
    return (x + jnp.sqrt(x * x + b)) / _const(2, x)


@_quiet
def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _inexact(x)
    return x * jnp.tanh(softplus(x))


@_quiet
def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` for ``-1 < x < 1``, ``x`` for ``x >= 1``."""
    x = _inexact(x)
    one = _const(1, x)
    return jnp.where(x <= -one, _const(0, x), jnp.where(x >= one, x, (x + one) * (x + one) / _const(4, x)))


@_quiet
def sparse_sigmoid(x):
    """0 for ``x <= -1``, ``(x + 1) / 2`` for ``-1 < x < 1``, 1 for ``x >= 1``."""
    x = _inexact(x)
    return _const(0.5, x) * jnp.clip(x + _const(1, x), _const(0, x), _const(2, x))


def identity(x):
    """``x`` itself."""
    return _array(x)


@_quiet
def glu(x, axis: int = -1):
    """The gated linear unit: ``x`` split in two halves ``a, b`` along ``axis``, ``a * sigmoid(b)``.
    The size of ``axis`` must be even (a dynamic size is checked at run time)."""
    x = _inexact(x)
    av = typeof(x)
    if av.ndim == 0:
        raise ValueError("glu: x must have at least one dimension")
    ax, = _axes(axis, av.ndim)
    size = av.shape[ax]
    if isinstance(size, int) and size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size}")
    half = size // 2
    idx_a = tuple(slice(None) if i != ax else slice(0, half) for i in range(av.ndim))
    idx_b = tuple(slice(None) if i != ax else slice(half, None) for i in range(av.ndim))
    a, b = x[idx_a], x[idx_b]
    if not isinstance(size, int):
        b = jnp.reshape(b, typeof(a).shape)   # the halves are equal: an odd size fails here
    return a * sigmoid(b)


# ----------------------------------------------------------------------------------------------
# normalizations over an axis
# ----------------------------------------------------------------------------------------------
@_quiet
def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """``log(sum(b * exp(a), axis))``, computed stably (shifted by the maximum over ``axis``).

    ``b`` scales the terms (a negative sum gives NaN, or with ``return_sign=True`` the pair
    ``(log|sum|, sign(sum))``); ``where`` selects the elements that take part (the others
    count as ``-inf``). An empty or all ``-inf`` selection gives ``-inf``."""
    a = _inexact(a, "a")
    if b is not None:
        b = _array(b, "b")
        a, b = broadcast_arrays(*_promote_pair(a, b))
    av = typeof(a)
    axes = _axes(axis, av.ndim)
    mask = _where_mask(where, a)
    if b is not None:
        # terms with b == 0 do not take part in the maximum (as JAX)
        nz = b != _const(0, b)
        mask = nz if mask is None else mask & nz
    amax = _masked_max(a, axes, mask, keepdims=True)
    amax = stop_gradient(jnp.where(jnp.isfinite(amax), amax, _const(0, amax)))
    terms = jnp.exp(a - amax)
    if b is not None:
        terms = terms * b
    total = _masked_sum(terms, axes, mask, keepdims=True)
    sign = jnp.sign(total)
    out = jnp.log(jnp.abs(total)) + amax
    if not keepdims:
        out, sign = jnp.squeeze(out, axes), jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < _const(0, sign), _const(np.nan, out), out)
    return out


def _promote_pair(a, b):
    dt = jnp.result_type(a, b)
    if not is_inexact_dtype(dt):
        dt = np.dtype(np.float64)
    return jnp.asarray(a, dtype=dt), jnp.asarray(b, dtype=dt)


def _softmax_impl(x, axes, mask):
    if mask is None:
        return _softmax_call(x, axes)
    xmax = stop_gradient(_masked_max(x, axes, mask, keepdims=True))
    unnormalized = jnp.where(mask, jnp.exp(x - xmax), _const(0, x))
    out = unnormalized / jnp.sum(unnormalized, axis=axes, keepdims=True)
    return jnp.where(mask, out, _const(0, out))


def _softmax_call(x, axes):
    return _SOFTMAX[axes](x) if axes in _SOFTMAX else _make_softmax(axes)(x)


_SOFTMAX = {}


def _make_softmax(axes):
    """A ``custom_jvp`` softmax over ``axes`` (JAX's derivative ``y * (dx - sum(y dx))``)."""
    @custom_jvp
    def f(x):
        unnormalized = jnp.exp(x - stop_gradient(_masked_max(x, axes, None, keepdims=True)))
        return unnormalized / jnp.sum(unnormalized, axis=axes, keepdims=True)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = f(x)
        return y, y * (t - jnp.sum(y * t, axis=axes, keepdims=True))
    _SOFTMAX[axes] = f
    return f


@_quiet
def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)``, shifted by the maximum; ``where`` selects the elements
    that take part (the others give 0). A row that is all ``-inf`` gives NaN (as JAX)."""
    x = _inexact(x)
    axes = _axes(axis, typeof(x).ndim)
    return _softmax_impl(x, axes, _where_mask(where, x))


@_quiet
def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis)``, shifted by the maximum; ``where`` selects the elements that
    take part (the others give ``-inf``)."""
    x = _inexact(x)
    axes = _axes(axis, typeof(x).ndim)
    mask = _where_mask(where, x)
    shifted = x - stop_gradient(_masked_max(x, axes, mask, keepdims=True))
    lse = jnp.log(_masked_sum(jnp.exp(shifted), axes, mask, keepdims=True))
    out = shifted - lse
    if mask is not None:
        out = jnp.where(mask, out, _const(-np.inf, out))
    return out


@_quiet
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis`` (the mean and variance computed
    when not given; ``where`` selects the elements they are computed from). ``algorithm``:
    ``"fast"`` (``E[x**2] - E[x]**2``, as JAX's default) or ``"standard"`` (``E[(x - E[x])**2]``)."""
    if algorithm not in ("fast", "standard"):
        raise ValueError(f"standardize: algorithm must be 'fast' or 'standard', got {algorithm!r}")
    x = _inexact(x)
    axes = _axes(axis, typeof(x).ndim)
    mask = _where_mask(where, x)
    if mask is None:
        count = None
    else:
        count = jnp.sum(mask, axis=axes, keepdims=True).astype(typeof(x).dtype)

    def _mean(v):
        s = _masked_sum(v, axes, mask, keepdims=True)
        if count is None:
            n = 1
            for a in axes:
                n = n * typeof(x).shape[a]
            return s / jnp.asarray(n).astype(typeof(x).dtype)
        return s / count
    if mean is None:
        mean = _mean(x)
    if variance is None:
        if algorithm == "fast":
            variance = _mean(x * x) - mean * mean
        else:
            variance = _mean(jnp.square(x - mean))
    return (x - mean) * lax.rsqrt(variance + _const(epsilon, x))


@_quiet
def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """``x[..., None] == arange(num_classes)`` as ``dtype`` (default float64), with the class
    axis at ``axis``; ``num_classes`` may be a traced size. Out-of-range and negative
    indices give a row of zeros."""
    x = _array(x)
    av = typeof(x)
    if dtype is None:
        dtype = np.float64
    num_classes = canonicalize_dim(num_classes, "num_classes")
    out_ndim = av.ndim + 1
    pos, = _axes(axis, out_ndim)
    lhs = jnp.expand_dims(x, pos)
    shape = [1] * out_ndim
    shape[pos] = num_classes
    rhs = lax.broadcasted_iota(av.dtype if np.issubdtype(av.dtype, np.integer) else np.int64, shape, pos)
    if not np.issubdtype(av.dtype, np.integer):
        lhs = lhs.astype(np.float64) if not is_inexact_dtype(av.dtype) else lhs
        rhs = rhs.astype(typeof(lhs).dtype)
    return (lhs == rhs).astype(dtype)


# ----------------------------------------------------------------------------------------------
# tanh, log1mexp, logmeanexp
# ----------------------------------------------------------------------------------------------
def tanh(x, /):
    """The hyperbolic tangent (``jax.nn.tanh`` is ``jax.numpy.tanh``)."""
    return jnp.tanh(x)


@custom_jvp
def _log1mexp(x):
    c = _const(np.log(2.0), x)
    return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


@_log1mexp.defjvp
def _log1mexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _log1mexp(x), t / jnp.expm1(x)


@_quiet
def log1mexp(x):
    """``log(1 - exp(-x))``, accurately for every ``x >= 0`` (``log(-expm1(-x))`` below
    ``log 2``, ``log1p(-exp(-x))`` above; Maechler's method, as JAX), with the derivative
    ``1 / expm1(x)``. Undefined (NaN) for ``x < 0``."""
    return _log1mexp(_inexact(x))


@_quiet
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """``log(mean(exp(x), axis))``: ``logsumexp(x, axis) - log(n)`` with ``n`` the number of
    elements reduced (those ``where`` holds)."""
    x = _inexact(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    dt = typeof(lse).dtype
    axes = _axes(axis, typeof(x).ndim)
    if where is None:
        n = 1
        for a in axes:
            n = n * typeof(x).shape[a]
        count = jnp.asarray(n, dtype=dt) if not isinstance(n, Tracer) else n.astype(dt)
    else:
        mask = _where_mask(where, x)
        count = jnp.sum(mask, axis=axes, keepdims=keepdims).astype(dt)
    return lse - jnp.log(count)
