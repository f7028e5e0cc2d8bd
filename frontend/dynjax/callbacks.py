"""``dynjax.pure_callback``: call a Python function on run-time values inside traced code.

    def host_sort(x):
        return np.sort(x)                       # any numpy / Python code

    @qjit(abstracted_axes={0: "n"})
    def f(x):
        y = dynjax.pure_callback(host_sort, dynjax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y * 2

The callback receives numpy arrays (pytrees of them, as passed) and returns values of the
declared ``result_shape_dtypes`` (a pytree of ``ShapeDtypeStruct`` or anything with
``shape`` and ``dtype``); results are cast to the declared dtypes, and a wrong shape is a
``RuntimeError`` when the call runs. A declared size may be a traced integer
(``ShapeDtypeStruct((n,), float)`` or ``x.shape``), so one trace serves every size; a size
known only to the callback (data-dependent) cannot be declared: compute it first (e.g.
with another callback returning an int) and declare the result with it.

The call is pure: unused results let dead-code elimination drop it, and calls may be
merged. Inside ``qjit`` it runs on the host between compiled segments (see
``lax/callbacks.py``). Under ``vmap`` ``vmap_method`` says how (``"sequential"``,
``"expand_dims"``, ``"broadcast_all"``; ``None`` refuses, as in JAX); under ``grad`` /
``jvp`` it is not differentiable (wrap it in ``custom_jvp``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core.avals import canonical_dtype
from .core.errors import api_boundary
from .core.pytree import tree_flatten, tree_unflatten
from .core.trace import is_array_value
from .lax.api import split_shape
from .lax.callbacks import VMAP_METHODS, pure_callback_p

__all__ = ["pure_callback"]


def _result_spec(spec, i: int):
    shape, dtype = getattr(spec, "shape", None), getattr(spec, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"pure_callback: result_shape_dtypes leaf {i} must have a shape and a dtype "
                        f"(a ShapeDtypeStruct), got {type(spec).__name__}")
    if any(d is None for d in shape):
        raise ValueError(f"pure_callback: result_shape_dtypes leaf {i} has an unknown size (None) in "
                         f"{tuple(shape)}; declare every size (a traced integer is fine)")
    try:
        static, dyn = split_shape(tuple(shape))
    except TypeError as e:
        raise TypeError(f"pure_callback: result_shape_dtypes leaf {i}: {e}") from None
    return static, dyn, canonical_dtype(dtype)


@api_boundary
def pure_callback(callback: Callable, result_shape_dtypes: Any, *args, sharding=None,
                  vmap_method: str = None, **kwargs):
    """``callback(*args, **kwargs)`` on run-time (numpy) values, as values of
    ``result_shape_dtypes``; see the module docstring."""
    if not callable(callback):
        raise TypeError(f"pure_callback: the callback must be a function, got {type(callback).__name__}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {list(VMAP_METHODS) + [None]}, "
                         f"got {vmap_method!r}")
    if sharding is not None:
        raise ValueError("pure_callback: sharding is not supported (dynjax runs on one CPU device)")
    spec_leaves, out_tree = tree_flatten(result_shape_dtypes)
    specs = [_result_spec(s, i) for i, s in enumerate(spec_leaves)]
    leaves, in_tree = tree_flatten((args, kwargs))
    # array values are operands; anything else (a str, a function) reaches the callback as is
    dynamic = [is_array_value(x) for x in leaves]
    static = [None if d else x for x, d in zip(leaves, dynamic)]
    name = getattr(callback, "__name__", "callback")

    def flat(*values):
        it = iter(values)
        a, kw = tree_unflatten(in_tree, [next(it) if d else x for x, d in zip(static, dynamic)])
        out = callback(*a, **kw)
        out_leaves, tree = tree_flatten(out)
        if tree != out_tree:
            raise RuntimeError(f"pure_callback: {name} returned a value of structure {tree}, but "
                               f"result_shape_dtypes has structure {out_tree}")
        return out_leaves
    flat.__qualname__ = getattr(callback, "__qualname__", name)
    operands = [x for x, d in zip(leaves, dynamic) if d]
    dims = [d for _, dyn, _ in specs for d in dyn]
    outs = pure_callback_p.bind(*operands, *dims, callback=flat, num_args=len(operands),
                                result_shapes=tuple(s for s, _, _ in specs),
                                result_dtypes=tuple(np.dtype(t) for _, _, t in specs),
                                vmap_method=vmap_method, name=name)
    return tree_unflatten(out_tree, list(outs))
