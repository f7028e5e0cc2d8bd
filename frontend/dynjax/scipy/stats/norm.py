"""``dynjax.scipy.stats.norm``: the normal distribution with ``loc`` and ``scale``
(``jax.scipy.stats.norm``'s functions). Operands are promoted to one float dtype (integers to
float64) and broadcast; the tails use ``log_ndtr`` / ``ndtri`` (accurate far out)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...core.trace import typeof
from ..special import _float, _quiet, log_ndtr, ndtr, ndtri

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _c(value, like):
    return np.asarray(value, dtype=typeof(like).dtype)


def _z(x, loc, scale):
    x, loc, scale = _float(x, loc, scale)
    return (x - loc) / scale, scale


@_quiet
def logpdf(x, loc=0, scale=1):
    """``log`` of the density ``exp(-z**2 / 2) / (scale sqrt(2 pi))``, ``z = (x - loc) / scale``."""
    z, scale = _z(x, loc, scale)
    return _c(-0.5, z) * z * z - jnp.log(scale) - _c(0.5 * np.log(2 * np.pi), z)


@_quiet
def pdf(x, loc=0, scale=1):
    """The density of the normal distribution."""
    return jnp.exp(logpdf(x, loc, scale))


@_quiet
def cdf(x, loc=0, scale=1):
    """``P(X <= x)``."""
    z, _ = _z(x, loc, scale)
    return ndtr(z)


@_quiet
def logcdf(x, loc=0, scale=1):
    """``log P(X <= x)``, accurate far in the lower tail."""
    z, _ = _z(x, loc, scale)
    return log_ndtr(z)


@_quiet
def sf(x, loc=0, scale=1):
    """The survival function ``P(X > x)``."""
    z, _ = _z(x, loc, scale)
    return ndtr(-z)


@_quiet
def logsf(x, loc=0, scale=1):
    """``log P(X > x)``."""
    z, _ = _z(x, loc, scale)
    return log_ndtr(-z)


@_quiet
def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of ``cdf``)."""
    q, loc, scale = _float(q, loc, scale)
    return ndtri(q) * scale + loc


@_quiet
def isf(q, loc=0, scale=1):
    """The inverse survival function (inverse of ``sf``)."""
    q, loc, scale = _float(q, loc, scale)
    return loc - ndtri(q) * scale
