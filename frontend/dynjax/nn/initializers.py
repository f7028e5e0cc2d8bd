"""``dynjax.nn.initializers``: JAX's parameter initializers (``init(key, shape, dtype)``), on
``dynjax.random``, so that they return JAX's values for the same key, shape and dtype (bit for
bit compiled; ``orthogonal`` to rounding, its QR comes from LAPACK). Default dtype: float64
(JAX's with x64). Shapes are static (the fans are Python numbers), as in JAX.
"""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as jnp
from .. import random
from ..core.avals import canonical_dtype

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal",
           "lecun_uniform", "lecun_normal", "he_uniform", "he_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal"]


def _dtype(dtype):
    return canonical_dtype(float if dtype is None else dtype)


def _shape(shape):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise TypeError(f"initializers need a static shape of non-negative ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def zeros(key, shape, dtype=None):
    """An array of zeros (``key`` is ignored)."""
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    """An array of ones (``key`` is ignored)."""
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """An initializer giving arrays full of ``value``."""
    def init(key, shape, dtype=dtype):
        return jnp.full(_shape(shape), value, dtype=_dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """An initializer giving uniform values in ``[0, scale)``."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.uniform(key, _shape(shape), dt) * jnp.array(scale, dt)
    return init


def normal(stddev=1e-2, dtype=None):
    """An initializer giving normal values of standard deviation ``stddev``."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.normal(key, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """An initializer giving ``stddev`` times normal values truncated to ``(lower, upper)``."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def _prod(xs):
    return math.prod(xs)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    pick = (lambda ax: shape[ax] if isinstance(ax, int) else _prod([shape[i] for i in ax]))
    in_size, out_size, batch_size = pick(in_axis), pick(out_axis), pick(batch_axis)
    receptive = _prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """An initializer whose values have variance ``scale / n``, ``n`` the fan in, fan out, their
    mean or geometric mean (``mode``); ``distribution``: ``"truncated_normal"``, ``"normal"``
    or ``"uniform"``."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if dt.kind == "c":
            raise NotImplementedError("variance_scaling: complex dtypes are not supported")
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = jnp.array(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dt)
            return random.truncated_normal(key, -2, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)
    return init


def _preset(scale, mode, distribution):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                                batch_axis=batch_axis, dtype=dtype)
    make.__doc__ = (f"``variance_scaling({scale}, {mode!r}, {distribution!r})``.")
    return make


glorot_uniform = xavier_uniform = _preset(1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _preset(1.0, "fan_avg", "truncated_normal")
lecun_uniform = _preset(1.0, "fan_in", "uniform")
lecun_normal = _preset(1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _preset(2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _preset(2.0, "fan_in", "truncated_normal")


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer giving ``scale`` times (reshaped) matrices with orthonormal columns along
    ``column_axis`` (rows when there are fewer rows than columns)."""
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dt)
        n_cols = shape[column_axis]
        n_rows = _prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.array(scale, dt) * q
    return init
