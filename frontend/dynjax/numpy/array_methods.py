"""The ndarray methods and attributes of traced values that ``core/trace.py`` does not already
give them (``x.std() x.var() x.sort() x.argsort() x.round() x.conj() x.real x.mT ...``),
each the ``jnp`` function of the same name; and a clear error for the rest: a missing
method names the ``jnp`` function to use, ``x.item()``/``x.tolist()`` are a
ConcretizationError (a traced value has no Python value yet).

Eager values are numpy arrays and have numpy's own methods.
"""
from __future__ import annotations

from ..core.trace import ConcretizationError, Tracer

_FORWARDED = ("all", "any", "argpartition", "partition", "argsort", "choose", "compress", "conj", "conjugate",
              "cumprod", "nonzero", "ptp", "round", "searchsorted", "sort", "std", "swapaxes", "take",
              "var", "copy")


def _forward(name):
    def method(self, *args, **kwargs):
        from .. import numpy as jnp
        return getattr(jnp, name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``jnp.{name}(x, ...)``."
    return method


def _searchsorted(self, v, side="left", sorter=None, *, method=None):
    from .. import numpy as jnp
    return jnp.searchsorted(self, v, side=side, sorter=sorter, method=method)


def _choose(self, choices, out=None, mode="raise"):
    from .. import numpy as jnp
    return jnp.choose(self, choices, out=out, mode=mode)


def _compress(self, condition, axis=None, *, size=None, fill_value=0):
    from .. import numpy as jnp
    return jnp.compress(condition, self, axis, size=size, fill_value=fill_value)


def _item(self, *args):
    raise ConcretizationError(
        f"x.item() needs the value, but this is a traced value of type {self.aval.str_short()}: inside "
        "qjit/grad/vmap a value is known only when the program runs. Return it from the traced function "
        "(or use jnp.reshape(x, ()) to get a 0-d array)")


def _tolist(self):
    raise ConcretizationError(
        f"x.tolist() needs the values, but this is a traced value of type {self.aval.str_short()}: "
        "return the array from the traced function and call .tolist() on the result")


def _view(self, dtype=None, type=None):
    raise NotImplementedError("x.view() (reinterpreting the bytes) is not supported; use x.astype(dtype) "
                              "to convert the values")


def _real(self):
    from .. import numpy as jnp
    return jnp.real(self)


def _imag(self):
    from .. import numpy as jnp
    return jnp.imag(self)


def _mT(self):
    from .. import numpy as jnp
    return jnp.matrix_transpose(self)


def _itemsize(self):
    return self.aval.dtype.itemsize


def _nbytes(self):
    return self.size * self.aval.dtype.itemsize


def _flat(self):
    raise AttributeError("x.flat is not supported on traced values; use x.ravel() or x.flatten()")


def _divmod(self, other):
    from .. import numpy as jnp
    return jnp.divmod(self, other)


def _rdivmod(self, other):
    from .. import numpy as jnp
    return jnp.divmod(other, self)


def _round_builtin(self, ndigits=None):
    from .. import numpy as jnp
    return jnp.round(self, 0 if ndigits is None else ndigits)


# numpy methods with no traced counterpart, and what to write instead
_NO_METHOD = {
    "fill": "x.fill(v) mutates; write jnp.full_like(x, v)",
    "put": "x.put(...) mutates; write jnp.put(x, ind, v, inplace=False) or x.at[ind].set(v)",
    "resize": "x.resize(...) mutates; write jnp.resize(x, new_shape)",
    "setflags": "traced arrays have no flags",
    "byteswap": "traced arrays have no byte order",
    "tofile": "write the returned array to a file after the traced function has run",
    "tobytes": "call .tobytes() on the returned (numpy) array after the traced function has run",
    "dump": "call .dump() on the returned (numpy) array after the traced function has run",
    "dumps": "call .dumps() on the returned (numpy) array after the traced function has run",
    "getfield": "structured dtypes are not supported",
    "setfield": "structured dtypes are not supported",
    "strides": "traced arrays have no memory layout",
    "ctypes": "traced arrays have no memory",
    "data": "traced arrays have no memory",
    "base": "traced arrays have no memory",
}


def _missing(self, name):
    """``__getattr__``: called only when ``name`` is not found; the error says what to use."""
    if name.startswith("__") or name in ("literal", "val", "_trace", "aval"):
        raise AttributeError(name)
    from .. import numpy as jnp
    kind = type(self).__name__
    if name in _NO_METHOD and _NO_METHOD[name]:
        raise AttributeError(f"'{kind}' object has no attribute '{name}': {_NO_METHOD[name]}")
    if callable(getattr(jnp, name, None)) and not name.startswith("_"):
        raise AttributeError(f"'{kind}' object has no attribute '{name}': a traced array has no method "
                             f"'{name}'; call jnp.{name}(x, ...) instead")
    raise AttributeError(f"'{kind}' object has no attribute '{name}'")


def install():
    """Attach the methods to ``Tracer`` (only those it does not already define)."""
    for name in _FORWARDED:
        if name not in Tracer.__dict__:
            setattr(Tracer, name, _forward(name))
    Tracer.searchsorted = _searchsorted
    Tracer.choose = _choose
    Tracer.compress = _compress
    Tracer.item = _item
    Tracer.tolist = _tolist
    Tracer.view = _view
    for name, fn in (("real", _real), ("imag", _imag), ("mT", _mT), ("itemsize", _itemsize),
                     ("nbytes", _nbytes), ("flat", _flat)):
        if name not in Tracer.__dict__:
            setattr(Tracer, name, property(fn, doc=f"``x.{name}``"))
    Tracer.__divmod__ = _divmod
    Tracer.__rdivmod__ = _rdivmod
    Tracer.__round__ = _round_builtin
    if "__getattr__" not in Tracer.__dict__:
        Tracer.__getattr__ = _missing


install()
