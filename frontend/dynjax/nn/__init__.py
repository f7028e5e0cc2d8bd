"""``dynjax.nn``: activation functions, softmax / logsumexp, ``one_hot`` and ``standardize``
(``jax.nn``'s names and signatures), and ``dynjax.nn.initializers``.

See ``doc/nn_and_scipy.md``.
"""
from .functions import (celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish,  # noqa: F401
                        hard_tanh, leaky_relu, log_sigmoid, log_softmax, logsumexp, one_hot, relu,
                        relu6, selu, sigmoid, silu, soft_sign, softmax, softplus, sparse_plus,
                        sparse_sigmoid, squareplus, standardize, swish, mish, identity, tanh,
                        log1mexp, logmeanexp)
from .attention import dot_product_attention, scaled_matmul  # noqa: F401

try:   # the initializers module is written alongside (it may not exist yet)
    from . import initializers  # noqa: F401
except ImportError:   # pragma: no cover
    pass
