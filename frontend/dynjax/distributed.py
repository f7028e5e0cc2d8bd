"""``dynjax.distributed``: several processes as one computation (JAX's
``jax.distributed``), on XLA's distributed runtime (``runtime/distributed.py``)."""
from .runtime.distributed import initialize, is_initialized, shutdown  # noqa: F401

__all__ = ["initialize", "is_initialized", "shutdown"]
