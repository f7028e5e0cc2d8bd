"""``dynjax.export``: ship a compiled dynamic-shape program without its Python source.

    exp = dynjax.export.export(f)(ShapeDtypeStruct(symbolic_shape("n, 3"), np.float64))
    blob = exp.serialize()                              # bytes: versioned, SHA-256 checked
    dynjax.export.deserialize(blob).call(np.ones((1000, 3)))   # in any process, at any size

Modelled on ``jax.export``, extended to what it cannot express (loops that resize arrays,
sizes computed from data). See ``doc/export.md`` for what the blob holds and its
compatibility promise.
"""
from ..tracing import ShapeDtypeStruct  # noqa: F401
from .exported import Exported, export  # noqa: F401
from .serialization import FORMAT_MAJOR, FORMAT_MINOR, deserialize  # noqa: F401
from .shapes import SymbolicDim, symbolic_shape  # noqa: F401

__all__ = ["Exported", "export", "deserialize", "symbolic_shape", "SymbolicDim", "ShapeDtypeStruct",
           "FORMAT_MAJOR", "FORMAT_MINOR"]
