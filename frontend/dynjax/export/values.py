"""The value codec of exported programs: Python and numpy values <-> JSON-able data.

One table, keyed by type, says how each kind of value an equation's params (or a literal,
or a constant) may hold is written and read back: ints, floats (exactly, as hex), bools,
strings, None, tuples, lists, dicts, slices, complex numbers, numpy dtypes and scalar types,
numpy arrays and scalars, dynjax's enums, namedtuples (dimension numbers) and frozen
dataclasses, and, through ``nested``, jaxprs (the jaxpr codec
passes itself in). A value of any other type (a Python callable, an object of the user's)
cannot be shipped: ``encode_value`` raises ``Unshippable`` naming its type, and the exporter
turns that into a ValueError naming the primitive and the user's line.

Tagged values are ``{"t": tag, ...}`` dicts; JSON's own ints, strings, bools and null stand
for themselves. Reading never evaluates or imports anything outside dynjax.
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
from typing import Any, Callable

import numpy as np

from ..core.avals import SUPPORTED_DTYPES, float0

#: dtype name in the blob -> numpy dtype (the dtype catalogue, and float0 for tangent types)
DTYPES = {np.dtype(d).name: np.dtype(d) for d in SUPPORTED_DTYPES}
DTYPES["float0"] = float0


class Unshippable(TypeError):
    """A value that the export format cannot hold (a function, a user object)."""


class Malformed(ValueError):
    """A blob whose body does not follow the format (reported by ``deserialize``)."""


def dtype_name(dt) -> str:
    dt = np.dtype(dt)
    if dt == float0:
        return "float0"
    if dt.name not in DTYPES:
        raise Unshippable(f"dtype {dt} is not one the export format holds")
    return dt.name


def dtype_of(name) -> np.dtype:
    if not isinstance(name, str) or name not in DTYPES:
        raise Malformed(f"unknown dtype {name!r}")
    return DTYPES[name]


def encode_array(x: np.ndarray) -> dict:
    x = np.asarray(x)
    name = dtype_name(x.dtype)
    data = b"" if name == "float0" else np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<")).tobytes()
    return {"t": "array", "dtype": name, "shape": [int(d) for d in x.shape],
            "data": base64.b64encode(data).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    dt = dtype_of(d["dtype"])
    shape = d["shape"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise Malformed(f"bad array shape {shape!r}")
    if dt == float0:
        return np.zeros(tuple(shape), float0)
    raw = base64.b64decode(d["data"].encode("ascii"), validate=True)
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) != count * dt.itemsize:
        raise Malformed(f"array of shape {tuple(shape)} and dtype {dt.name} holds {len(raw)} bytes, "
                        f"expected {count * dt.itemsize}")
    return np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)


def class_path(cls) -> str:
    """``module.qualname`` of a class dynjax defines (an ``Unshippable`` for any other class:
    reading a blob imports nothing but dynjax's own modules)."""
    path = f"{cls.__module__}.{cls.__qualname__}"
    if not path.startswith("dynjax."):
        raise Unshippable(f"a value of type {path}")
    return path


def dynjax_class(path, kind: str, check: Callable[[type], bool]):
    """The dynjax class at ``path`` (``module.name``), which must be ``kind`` (``check``)."""
    module, _, name = path.rpartition(".") if isinstance(path, str) else ("", "", "")
    if not module.startswith("dynjax."):
        raise Malformed(f"{kind} {path!r} is not one of dynjax's")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise Malformed(f"{kind} {path!r} does not exist in this dynjax") from None
    if not (isinstance(cls, type) and check(cls)):
        raise Malformed(f"{path!r} is not {kind}")
    return cls


def _is_namedtuple_class(cls) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _is_frozen_dataclass(cls) -> bool:
    return dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


def encode_value(x, nested: Callable[[Any], Any]) -> Any:
    """``x`` as JSON-able data; ``nested`` encodes the values the table leaves to its caller
    (jaxprs). Raises ``Unshippable`` for a value the format cannot hold."""
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        return x
    if t is float:
        return {"t": "float", "v": x.hex()}
    if t is complex:
        return {"t": "complex", "re": x.real.hex(), "im": x.imag.hex()}
    if t is tuple:
        return {"t": "tuple", "v": [encode_value(v, nested) for v in x]}
    if t is list:
        return {"t": "list", "v": [encode_value(v, nested) for v in x]}
    if t is dict:
        return {"t": "dict", "v": [[encode_value(k, nested), encode_value(v, nested)] for k, v in x.items()]}
    if t is slice:
        return {"t": "slice", "v": [encode_value(v, nested) for v in (x.start, x.stop, x.step)]}
    if isinstance(x, np.dtype):
        return {"t": "dtype", "v": dtype_name(x)}
    if isinstance(x, type) and issubclass(x, np.generic):
        return {"t": "scalar_type", "v": dtype_name(x)}
    if isinstance(x, np.ndarray):
        return encode_array(x)
    if isinstance(x, np.generic):
        return {"t": "scalar", "v": encode_array(np.asarray(x))}
    if isinstance(x, enum.Enum):
        return {"t": "enum", "cls": class_path(t), "v": encode_value(x.value, nested)}
    if _is_namedtuple_class(t):   # dynjax's dimension numbers
        return {"t": "namedtuple", "cls": class_path(t), "v": [encode_value(v, nested) for v in x]}
    if dataclasses.is_dataclass(t) and _is_frozen_dataclass(t):
        return {"t": "dataclass", "cls": class_path(t),
                "v": {f.name: encode_value(getattr(x, f.name), nested) for f in dataclasses.fields(t)}}
    out = nested(x)
    if out is not NotImplemented:
        return out
    raise Unshippable(_describe(x))


def decode_value(d, nested: Callable[[dict], Any]) -> Any:
    """The value ``encode_value`` wrote; ``nested`` decodes the tags the table leaves to its
    caller. Raises ``Malformed`` for data that does not follow the format."""
    if d is None or isinstance(d, (bool, str, int)):
        return d
    if isinstance(d, float):
        raise Malformed("a float must be written as hex")
    if not isinstance(d, dict) or not isinstance(d.get("t"), str):
        raise Malformed(f"expected a value, got {type(d).__name__}")
    t = d["t"]
    if t == "float":
        return float.fromhex(d["v"])
    if t == "complex":
        return complex(float.fromhex(d["re"]), float.fromhex(d["im"]))
    if t in ("tuple", "list"):
        items = [decode_value(v, nested) for v in _list(d["v"])]
        return tuple(items) if t == "tuple" else items
    if t == "dict":
        return {decode_value(k, nested): decode_value(v, nested) for k, v in (_pair(p) for p in _list(d["v"]))}
    if t == "slice":
        parts = _list(d["v"])
        if len(parts) != 3:
            raise Malformed("a slice has three parts")
        return slice(*[decode_value(v, nested) for v in parts])
    if t == "dtype":
        return dtype_of(d["v"])
    if t == "scalar_type":
        return dtype_of(d["v"]).type
    if t == "array":
        return decode_array(d)
    if t == "scalar":
        arr = decode_array(d["v"])
        if arr.shape != ():
            raise Malformed("a numpy scalar must have shape ()")
        return arr[()]
    if t == "enum":
        cls = dynjax_class(d["cls"], "an enum", lambda c: issubclass(c, enum.Enum))
        try:
            return cls(decode_value(d["v"], nested))
        except ValueError:
            raise Malformed(f"{d['v']!r} is not a value of {d['cls']}") from None
    if t == "namedtuple":
        cls = dynjax_class(d["cls"], "a namedtuple", _is_namedtuple_class)
        values = [decode_value(v, nested) for v in _list(d["v"])]
        if len(values) != len(cls._fields):
            raise Malformed(f"{d['cls']} has {len(cls._fields)} fields, not {len(values)}")
        return cls(*values)
    if t == "dataclass":
        cls = dynjax_class(d["cls"], "a frozen dataclass", _is_frozen_dataclass)
        fields = d["v"]
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(fields, dict) or sorted(fields) != sorted(names):
            raise Malformed(f"{d['cls']} has the fields {names}")
        return cls(**{k: decode_value(v, nested) for k, v in fields.items()})
    return nested(d)


def _list(x) -> list:
    if not isinstance(x, list):
        raise Malformed(f"expected a list, got {type(x).__name__}")
    return x


def _pair(x):
    if not isinstance(x, list) or len(x) != 2:
        raise Malformed("expected a [key, value] pair")
    return x


def _describe(x) -> str:
    if callable(x):
        name = getattr(x, "__qualname__", None) or getattr(x, "__name__", None) or type(x).__name__
        return f"the Python function {name}"
    t = type(x)
    return f"a value of type {t.__module__}.{t.__qualname__}"
