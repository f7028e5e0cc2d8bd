"""JAX's top-level utilities: ``eval_shape``, ``typeof``, ``block_until_ready``,
``device_put`` / ``device_get`` and ``jit`` (``qjit`` under JAX's name and keywords).

dynjax computes on the host CPU and its results are numpy arrays, so moving data is an
identity: ``device_put`` gives numpy arrays, ``device_get`` too, ``block_until_ready``
returns its argument (every dynjax call has finished when it returns).

``eval_shape(f, *args)`` traces ``f`` without running it. Arguments are arrays, scalars or
``ShapeDtypeStruct`` specs (pytrees of them); a ``None`` entry in a spec's shape is a
dynamic dimension, and a result dimension that depends on a dynamic one (or on data: the
size of ``x[x > 0]``) is ``None`` in the result's ``ShapeDtypeStruct``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .core import pytree
from .core.errors import api_boundary
from .core.trace import Tracer, typeof  # noqa: F401  (re-exported as dynjax.typeof)
from .tracing import ShapeDtypeStruct, float0_as_structure, input_signature, result_shapes, trace_flat

__all__ = ["eval_shape", "typeof", "block_until_ready", "device_put", "device_get", "jit"]


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of ``ShapeDtypeStruct``,
    found by tracing (nothing is computed). ``None`` dims of argument specs are dynamic; a
    result dim that is not a constant of the trace is ``None``."""
    if not callable(fun):
        raise TypeError(f"eval_shape: expected a function, got {type(fun).__name__}")
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    where = [f"argument leaf {i}" for i in range(len(leaves))]
    # every None axis of a spec is a fresh dynamic dim (an int name: never shared)
    specs = [{ax: 0 for ax, d in enumerate(x.shape) if d is None}
             if isinstance(x, ShapeDtypeStruct) and None in x.shape else None for x in leaves]
    sig = input_signature(leaves, specs, where)

    def fun_flat(*explicit):
        a, kw = pytree.tree_unflatten(in_tree, explicit)
        return pytree.tree_flatten(float0_as_structure(fun(*a, **kw)))

    closed, out_tree = trace_flat(fun_flat, sig.in_type, sig.dim_names)
    return result_shapes(closed, out_tree)


def block_until_ready(x):
    """Return ``x``: dynjax's results are complete numpy arrays when a call returns."""
    return x


def _check_device(device, where: str) -> None:
    """Accept ``None``, a CPU device (a jaxlib ``Device`` or one of ``dynjax.devices()``)."""
    if device is None:
        return
    import sys
    devices = getattr(sys.modules[__package__], "devices", None)
    if callable(devices):
        try:
            if any(device is d or device == d for d in devices()):
                return
        except Exception:   # pragma: no cover - a devices() that cannot run: fall through
            pass
    if getattr(device, "platform", None) == "cpu":
        return
    raise ValueError(f"{where}: dynjax runs on the host CPU; device must be None or a CPU device, "
                     f"got {device!r}")


def _to_host(x, where: str):
    if isinstance(x, Tracer):
        return x
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)) or hasattr(x, "__array__"):
        return np.asarray(x)
    raise TypeError(f"{where}: a leaf of type {type(x).__name__} is not an array")


def _put(v, sharding):
    v = _to_host(v, "device_put")
    if sharding is None or isinstance(v, Tracer):
        return v
    from .parallel.arrays import ShardedArray
    if getattr(sharding, "mesh", None) is not None:
        sharding.shard_shape(np.shape(v))   # JAX's rule: a placed array splits evenly
    return ShardedArray(v, sharding)


@api_boundary
def device_put(x, device=None, *, src=None, donate: bool = False, may_alias: Optional[bool] = None):
    """``x`` (a pytree) with each leaf as a numpy array (tracers pass through unchanged).
    ``device`` may be ``None``, a device, or a sharding (``dynjax.sharding``; or a pytree
    prefix of ``x`` of them): then each leaf is a ``ShardedArray`` that records it, and
    sharded ``qjit`` calls lay it out over the devices so."""
    from .execution.sharded_runs import prefix_leaves
    from .parallel.sharding import Sharding
    _check_device(src, "device_put(src=...)")
    if device is None or not (isinstance(device, Sharding) or isinstance(device, (tuple, list, dict))):
        _check_device(device, "device_put")
        return pytree.tree_map(lambda v: _to_host(v, "device_put"), x)
    leaves, tree = pytree.tree_flatten(x)
    placed = prefix_leaves(device, x)
    return pytree.tree_unflatten(tree, [_put(v, s) for v, s in zip(leaves, placed)])


@api_boundary
def device_get(x):
    """``x`` (a pytree) with each array leaf (anything with ``__array__``) as a numpy
    array; other leaves are returned unchanged."""
    def get(v):
        if isinstance(v, Tracer):
            raise TypeError("device_get: a traced value has no concrete value here (call "
                            "device_get outside of qjit / grad / vmap)")
        return np.asarray(v) if hasattr(v, "__array__") and not isinstance(v, np.ndarray) else v
    return pytree.tree_map(get, x)


class _Unspecified:
    def __repr__(self):
        return "UnspecifiedValue"


_UNSPECIFIED = _Unspecified()


def jit(fun: Optional[Callable] = None, /, *, in_shardings: Any = _UNSPECIFIED,
        out_shardings: Any = _UNSPECIFIED, static_argnums=None, static_argnames=None,
        donate_argnums=None, donate_argnames=None, keep_unused: bool = False, device=None,
        backend: Optional[str] = None, inline: bool = False, compiler_options=None,
        abstracted_axes=None):
    """``qjit`` under JAX's name and keywords: ``@jit``, ``@jit(static_argnums=...)``.

    ``donate_argnums`` / ``donate_argnames`` are validated (results never alias the
    arguments, see ``qjit``); ``keep_unused`` and ``inline`` change nothing (a jitted
    function called inside another trace is always inlined); ``device`` must be ``None`` or
    a CPU device and ``backend`` ``None`` or ``"cpu"``; ``in_shardings`` / ``out_shardings``
    partition the program over devices as in ``qjit``; ``compiler_options`` are accepted and not used. ``abstracted_axes``
    names dynamic dimensions as in ``qjit``."""
    from .qjit import qjit
    in_shardings = None if in_shardings is _UNSPECIFIED else in_shardings
    out_shardings = None if out_shardings is _UNSPECIFIED else out_shardings
    _check_device(device, "jit")
    if backend is not None and backend != "cpu":
        raise ValueError(f"jit: backend must be None or 'cpu', got {backend!r}")
    if compiler_options is not None and not isinstance(compiler_options, dict):
        raise TypeError(f"jit: compiler_options must be a dict, got {type(compiler_options).__name__}")
    wrap = qjit(static_argnums=static_argnums, static_argnames=static_argnames,
                donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                abstracted_axes=abstracted_axes, in_shardings=in_shardings, out_shardings=out_shardings)
    if fun is None:
        return wrap
    if not callable(fun):
        raise TypeError(f"jit: expected a function, got {type(fun).__name__}")
    return wrap(fun)
