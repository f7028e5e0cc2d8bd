"""``dynjax.scipy.stats.multivariate_normal``: ``logpdf`` and ``pdf`` of the multivariate
normal distribution, through the Cholesky factor of the covariance."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...core.trace import typeof
from ..linalg import solve_triangular
from ..special import _quiet

__all__ = ["logpdf", "pdf"]


@_quiet
def logpdf(x, mean, cov, allow_singular=None):
    """``log N(x; mean, cov)`` for ``x`` of shape ``(..., k)``, ``mean`` ``(k,)`` (or broadcasting
    with ``x``) and ``cov`` ``(k, k)``; a scalar ``mean`` and ``cov`` with a 1-D ``x`` of
    size ``k`` are not accepted, as in JAX (give a ``(k,)`` mean and a ``(k, k)`` covariance).
    A covariance that is not positive definite gives NaN. ``allow_singular`` is not supported
    (as in JAX): passing it is a ``NotImplementedError``."""
    if allow_singular is not None:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular is not supported")
    x, mean, cov = (jnp.asarray(v) if not hasattr(v, "aval") else v for v in (x, mean, cov))
    dt = jnp.result_type(x, mean, cov)
    if not np.issubdtype(dt, np.inexact):
        dt = np.dtype(np.float64)
    x, mean, cov = (jnp.asarray(v, dtype=dt) for v in (x, mean, cov))
    cv = typeof(cov)
    if cv.ndim == 0:   # a scalar variance (JAX accepts it for a scalar x)
        z = (x - mean) / jnp.sqrt(cov)
        return -0.5 * z * z - 0.5 * jnp.log(cov) - np.asarray(0.5 * np.log(2 * np.pi), dt)
    if cv.ndim != 2:
        raise ValueError(f"multivariate_normal.logpdf: cov must be a matrix, got shape {cv.shape}")
    k = cv.shape[-1]
    factor = jnp.linalg.cholesky(cov)
    diff = x - mean                                  # (..., k)
    dv = typeof(diff)
    if dv.ndim == 0:
        raise ValueError("multivariate_normal.logpdf: x must have at least one dimension")
    # solve L y = diff^T for every row of diff at once: y is (k, rows)
    rows = jnp.reshape(diff, (-1, k)) if dv.ndim != 2 else diff
    y = solve_triangular(factor, jnp.swapaxes(rows, 0, 1), lower=True)
    maha = jnp.sum(y * y, axis=0)
    if dv.ndim != 2:
        maha = jnp.reshape(maha, tuple(dv.shape[:-1]))
    log_det = jnp.sum(jnp.log(jnp.diagonal(factor)))
    kk = jnp.asarray(k).astype(dt)
    return -0.5 * maha - log_det - 0.5 * kk * np.asarray(np.log(2 * np.pi), dt)


@_quiet
def pdf(x, mean, cov):
    """``exp(logpdf(x, mean, cov))``."""
    return jnp.exp(logpdf(x, mean, cov))
