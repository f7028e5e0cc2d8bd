"""``dynjax.random``: JAX's key-based random numbers (threefry2x32, ``jax_threefry_partitionable``
counters), giving JAX's numbers for the same key, shape and dtype, at static and dynamic sizes,
under ``qjit``, ``vmap`` and ``grad``. See ``doc/random.md``.

A key is a ``uint32[2]`` array (``PRNGKey(0)``, ``key(0)``, ``split(k)[i]``, ``fold_in(k, i)``).
"""
from .keys import PRNGKey, bits, fold_in, key, key_data, split, wrap_key_data  # noqa: F401
from .keys import clone, key_dtype, key_impl  # noqa: F401
from .samplers import (bernoulli, categorical, exponential, gumbel, laplace, logistic,  # noqa: F401
                       normal, orthogonal, randint, truncated_normal, uniform)
from .permutations import choice, permutation, shuffle  # noqa: F401
from .transforms import (cauchy, double_sided_maxwell, geometric, maxwell,  # noqa: F401
                         multivariate_normal, pareto, rademacher, weibull_min)
from .transforms import lognormal, rayleigh, triangular, wald  # noqa: F401
from .gamma import beta, chisquare, dirichlet, f, gamma, loggamma, t  # noqa: F401
from .gamma import ball, generalized_normal  # noqa: F401
from .poisson import poisson  # noqa: F401
from .binomial import binomial, multinomial  # noqa: F401
