"""``dynjax.custom_batching``: functions with a user-defined ``vmap`` rule, under JAX's names
(``jax.custom_batching``). The machinery is in ``transforms/custom_vmap.py``; see
doc/transformations.md."""
from .transforms.custom_vmap import custom_vmap, sequential_vmap  # noqa: F401

__all__ = ["custom_vmap", "sequential_vmap"]
