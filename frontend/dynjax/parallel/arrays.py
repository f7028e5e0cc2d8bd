"""Arrays that record their sharding.

``device_put(x, sharding)`` returns the data as a numpy array (dynjax's arrays are numpy
arrays) of the subclass :class:`ShardedArray`, which remembers the sharding: a sharded
``qjit`` call lays such an argument out over the devices as it says (as ``jax.jit`` follows
the shardings of committed arrays). Arithmetic on it gives plain numpy arrays.
"""
from __future__ import annotations

import numpy as np


class ShardedArray(np.ndarray):
    """A numpy array with a ``sharding`` (see ``dynjax.sharding``)."""

    def __new__(cls, data, sharding):
        obj = np.array(data, copy=True, subok=False).view(cls)
        obj.sharding = sharding
        return obj

    def __array_finalize__(self, obj):
        self.sharding = getattr(obj, "sharding", None)

    def __array_wrap__(self, out, context=None, return_scalar=False):
        # the results of numpy operations are plain arrays: they were not put anywhere
        out = out.view(np.ndarray)
        return out[()] if return_scalar else out

    def __reduce__(self):
        return (np.asarray, (np.asarray(self),))

    @property
    def addressable_shards(self):
        """``(device, index, data)`` of the pieces every device holds."""
        pieces = self.sharding.devices_indices_map(self.shape)
        return [(d, idx, np.asarray(self)[idx]) for d, idx in pieces.items()]

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated


def sharding_of(x):
    """The sharding recorded on ``x`` (a ShardedArray), or None."""
    return getattr(x, "sharding", None) if isinstance(x, ShardedArray) else None
