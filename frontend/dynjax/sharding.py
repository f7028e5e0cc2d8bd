"""``dynjax.sharding``: JAX's ``jax.sharding`` names (meshes, partition specs, shardings)."""
from .parallel.sharding import (Mesh, NamedSharding, PartitionSpec, Sharding,  # noqa: F401
                                SingleDeviceSharding)

__all__ = ["Mesh", "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding"]
