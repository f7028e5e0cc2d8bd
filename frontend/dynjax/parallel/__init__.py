"""Many devices: meshes, shardings, sharded programs (``dynjax.sharding``, ``qjit(...,
in_shardings=...)``), and the device inventory (``dynjax.devices()``).

* ``devices.py``  — ``devices()``, ``device_count()``, ``process_index()``, ...
* ``sharding.py`` — ``Mesh``, ``make_mesh``, ``PartitionSpec``, ``NamedSharding``,
  ``SingleDeviceSharding``: how an array is laid out over devices.
* ``arrays.py``   — ``ShardedArray``: what ``device_put(x, sharding)`` returns.
* ``shard_map.py`` — ``shard_map``: a per-device function mapped over a mesh, one equation
  holding the per-device body (lowered as the per-device program of a partitioned program,
  its collectives as XLA's) and the whole-array program (nested vmaps named after the mesh
  axes); ``shard_map_rules.py`` its primitive and rules, ``shard_map_ad.py`` its
  linearization and transpose as per-device programs.

Compiling and running a partitioned program is ``execution/sharded_runs.py`` (over
``runtime/sharded.py``, which drives XLA's SPMD partitioner).
"""
from .devices import (default_backend, device_count, devices, local_device_count,  # noqa: F401
                      local_devices, process_count, process_index)
from .sharding import (Mesh, NamedSharding, P, PartitionSpec, Sharding,  # noqa: F401
                       SingleDeviceSharding, current_mesh, make_mesh)
from .arrays import ShardedArray  # noqa: F401
from .shard_map import shard_map  # noqa: F401
from .constraints import with_sharding_constraint  # noqa: F401
