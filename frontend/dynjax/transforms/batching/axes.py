"""The user-level ``vmap``: JAX's signature, reading ``in_axes`` / ``out_axes`` (pytree
prefixes with ``None`` leaves, dicts, negative axes), the batch size (``axis_size``), and JAX's
errors naming the arguments. The interpreter it runs is in ``__init__.py`` (``vmap_flat``)."""
from __future__ import annotations

import inspect
import numbers

import numpy as np

from ...core.avals import float0, same_dim
from ...core.errors import api_boundary
from ...core.pytree import tree_flatten, tree_unflatten
from ...core.trace import Tracer, typeof
from . import move_axis, to_front, vmap_flat

__all__ = ["vmap"]


_IN_AXES_FORM = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                 "positional arguments passed to the function")


def _normalize_axis(ax, ndim, where, shape=None):
    """A batch axis in range for rank ``ndim`` (negative counts from the end); JAX's
    ValueError otherwise (for an input, naming its rank and shape)."""
    if ax is None:
        return None
    if not isinstance(ax, numbers.Integral) or isinstance(ax, bool):
        raise TypeError(f"vmap: {where} must be an int or None, got {ax!r}")
    if not -ndim <= ax < ndim:
        if shape is not None:
            raise ValueError(f"vmap was requested to map its argument along axis {ax}, which implies "
                             f"that its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is "
                             f"only {ndim} (its shape is {_fmt_shape(shape)}; {where})")
        raise ValueError(f"vmap: {where}: axis {ax} is out of bounds for an array of dimension {ndim}")
    return int(ax) % ndim


def _fmt_shape(shape):
    return "(" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_axes_spec(spec, what):
    """An in_axes / out_axes spec: ints and None at the leaves of tuples, lists and dicts."""
    leaves, _ = tree_flatten(spec, is_leaf=lambda x: x is None)
    for leaf in leaves:
        if leaf is not None and (not isinstance(leaf, numbers.Integral) or isinstance(leaf, bool)):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                            f"types as leaves, but got {spec!r}.")


def _broadcast_prefix(prefix, tree_value, what):
    """The leaves of ``prefix`` (a pytree prefix of ``tree_value``'s structure) repeated over
    the leaves of each subtree of ``tree_value``: one axis per leaf."""
    leaves, tree = tree_flatten(tree_value)
    if isinstance(prefix, (numbers.Integral, type(None))):
        return [prefix] * len(leaves)
    if isinstance(prefix, (tuple, list)) and isinstance(tree_value, (tuple, list)):
        if len(prefix) != len(tree_value):
            raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                             f"value: {what} has {len(prefix)} entries but the value has "
                             f"{len(tree_value)}")
        out = []
        for p, v in zip(prefix, tree_value):
            out += _broadcast_prefix(p, v, what)
        return out
    if isinstance(prefix, dict) and isinstance(tree_value, dict):
        if set(prefix) != set(tree_value):
            raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                             f"value: {what} has keys {sorted(prefix)} but the value has "
                             f"{sorted(tree_value)}")
        out = []
        for k in sorted(tree_value):
            out += _broadcast_prefix(prefix[k], tree_value[k], what)
        return out
    raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding value: "
                     f"{what} {prefix!r} does not match the structure {tree}")


def _inconsistent_sizes(mapped, axis_size):
    """JAX's ValueError for mapped axes of different sizes: the sizes, grouped, each with an
    example axis (``mapped``: ``(size, axis, where, aval)`` per mapped leaf)."""
    groups: dict = {}
    for size, ax, where, aval in mapped:
        key = size if isinstance(size, int) else id(size)
        groups.setdefault(key, []).append((size, ax, where, aval))
    lines = []
    if axis_size is not None:
        lines.append(f"the `axis_size` argument was {axis_size}")
    ordered = sorted(groups.values(), key=len, reverse=True)
    for k, group in enumerate(ordered):
        size, ax, where, aval = group[0]
        label = size if isinstance(size, int) else "(a dynamic size)"
        example = f"axis {ax} of {where} of type {aval.str_short()}"
        if len(group) == 1:
            lines.append(f"one axis had size {label}: {example}")
        elif k == 0:
            lines.append(f"most axes ({len(group)} of them) had size {label}, e.g. {example}")
        else:
            lines.append(f"some axes ({len(group)} of them) had size {label}, e.g. {example}")
    return ValueError("vmap got inconsistent sizes for array axes to be mapped:\n" +
                      ";\n".join(f"  * {line}" for line in lines))


def _argument_names(fun, args, kwargs_names):
    """A readable name per positional argument (the parameter's name when known), as JAX's
    messages write them: ``argument x``; keyword arguments as ``kwargs['y']``."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [f"argument {params[i]}" if i < len(params) else f"args[{i}]" for i in range(len(args))]
    return names + [f"kwargs[{k!r}]" for k in kwargs_names]


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         sum_match: bool = False):
    """Vectorize ``fun`` over an axis of its arguments (JAX's semantics and signature).

    ``in_axes``: an int, None (not batched) or a pytree prefix of the positional arguments
    (a tuple or list with one entry per argument; dicts for dict arguments) giving each
    leaf's batch axis; negative axes count from the end. Keyword arguments are batched along
    their axis 0. ``out_axes``: where the batch axis goes in each output (a pytree prefix of the
    output; None: the output must be the same for every member, a ValueError otherwise).
    ``axis_size``: the batch size when no argument is batched (a ValueError when it contradicts
    a mapped axis). A function returning constants or Python scalars gets them broadcast.
    ``axis_name`` names the mapped axis for the collectives of ``dynjax.lax`` (``psum``,
    ``all_gather``, ``axis_index``...: ``lax/collectives.py``); ``spmd_axis_name`` (a mesh axis
    name, or a tuple of them) splits the batch axis of the batched arguments and results over
    that mesh axis of the mesh entered with ``with mesh:``, and the batch axis of the sharding
    constraints inside (in a sharded ``qjit`` XLA's partitioner places the members on those
    devices; elsewhere, and without a mesh, nothing changes); both are on the returned function. The batch size may be dynamic
    (an abstracted axis, or an int argument under ``qjit``): one trace serves every batch size.
    """
    if not callable(fun):
        raise TypeError(f"vmap: the first argument must be a function, got {type(fun).__name__}")
    if not isinstance(in_axes, (tuple, list)) and in_axes is not None and (
            not isinstance(in_axes, numbers.Integral) or isinstance(in_axes, bool)):
        raise TypeError(f"{_IN_AXES_FORM}, but got {in_axes!r}.")   # a dict too: wrap it in a tuple
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    if axis_size is not None and not isinstance(axis_size, numbers.Integral) and not isinstance(axis_size, Tracer):
        raise TypeError(f"vmap: axis_size must be an int, got {axis_size!r}")
    if axis_name is not None:
        hash(axis_name)   # JAX's axis names are hashable
    if sum_match:
        raise NotImplementedError("vmap: sum_match=True is not supported by dynjax")

    @api_boundary
    def vmapped(*args, **kwargs):
        if kwargs:   # keyword arguments are batched along their axis 0 (as in JAX)
            names = sorted(kwargs)
            n_pos = len(args)

            def positional(*all_args):
                return fun(*all_args[:n_pos], **dict(zip(names, all_args[n_pos:])))
            if isinstance(in_axes, (tuple, list)):
                if len(in_axes) != n_pos:
                    raise ValueError(f"{_IN_AXES_FORM}, but got len(in_axes)={len(in_axes)}, "
                                     f"len(args)={n_pos}")
                spec = tuple(in_axes)
            else:
                spec = (in_axes,) * n_pos
            inner = vmap(positional, spec + (0,) * len(names), out_axes, axis_name=axis_name,
                         axis_size=axis_size, spmd_axis_name=spmd_axis_name)
            inner._arg_names = _argument_names(fun, args, names)   # for error messages
            return inner(*args, *[kwargs[k] for k in names])
        axes_spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(axes_spec, tuple) and len(axes_spec) != len(args):
            raise ValueError(f"{_IN_AXES_FORM}, but got len(in_axes)={len(axes_spec)}, "
                             f"len(args)={len(args)}")
        leaves, tree = tree_flatten(args)
        axes = _broadcast_prefix(axes_spec, args, "in_axes")
        arg_names = getattr(vmapped, "_arg_names", None) or _argument_names(fun, args, ())
        leaf_where = _leaf_paths(args, arg_names)
        dims, mapped = [], []
        for x, ax, where in zip(leaves, axes, leaf_where):
            a = typeof(x)
            if ax is not None:
                if a.ndim == 0:
                    raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                                     f"implies that its rank should be at least {ax + 1 if ax >= 0 else -ax}, "
                                     f"but is only 0 (its shape is (); {where})")
                ax = _normalize_axis(ax, a.ndim, where, a.shape)
                mapped.append((a.shape[ax], ax, where, a))
            dims.append(ax)
        size = axis_size if axis_size is not None else (mapped[0][0] if mapped else None)
        if any(not same_dim(size, n) for n, _, _, _ in mapped):
            raise _inconsistent_sizes(mapped, axis_size)
        if size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                             "must be specified")
        leaves = [np.asarray(x) if isinstance(x, (list, tuple)) else x for x in leaves]
        place, spmd = _spmd_placement(spmd_axis_name)
        leaves = [place(x, d) if d is not None else x for x, d in zip(leaves, dims)]
        outs, out_dims, out_tree = vmap_flat(lambda *xs: fun(*tree_unflatten(tree, xs)), size, leaves, dims,
                                             axis_name, spmd)
        out_struct = tree_unflatten(out_tree, outs)
        o_axes = _broadcast_prefix(out_axes, out_struct, "out_axes")
        results = []
        for k, (o, d, ax) in enumerate(zip(outs, out_dims, o_axes)):
            if ax is None:
                if d is not None:
                    raise ValueError(f"vmap: at vmap out_axes, got axis spec None but output was "
                                     f"batched on axis {d} (output leaf {k})")
                results.append(o)
                continue
            if isinstance(o, np.ndarray) and o.dtype == float0:   # no data: the batched shape
                if not isinstance(size, (int, np.integer)):
                    raise TypeError("vmap: a float0 result (the gradient of an integer argument) "
                                    "has a static shape, but the batch size is dynamic")
                shape = list(o.shape)
                shape.insert(_normalize_axis(ax, o.ndim + 1, f"out_axes for output leaf {k}"), int(size))
                results.append(np.zeros(tuple(shape), float0))
                continue
            o = to_front(o, d, size)   # an unbatched output (a constant) is broadcast
            ax = _normalize_axis(ax, typeof(o).ndim, f"out_axes for output leaf {k}")
            results.append(place(move_axis(o, 0, ax), ax))
        return tree_unflatten(out_tree, results)
    vmapped.__name__ = f"vmap({getattr(fun, '__name__', 'f')})"
    vmapped.axis_name = axis_name
    vmapped.spmd_axis_name = spmd_axis_name
    return vmapped


def _spmd_placement(spmd_axis_name):
    """``(place, spmd)``: ``place(x, axis)`` is ``x`` with its batch ``axis`` split over the
    mesh axes ``spmd_axis_name`` of the current mesh (the identity without one); ``spmd`` is
    ``(mesh, names)`` for the sharding constraints inside (or None)."""
    if spmd_axis_name is None:
        return (lambda x, axis: x), None
    from ...parallel.constraints import with_sharding_constraint
    from ...parallel.sharding import NamedSharding, PartitionSpec, current_mesh
    mesh = current_mesh()
    if mesh is None:
        return (lambda x, axis: x), None
    names = tuple(spmd_axis_name) if isinstance(spmd_axis_name, (tuple, list)) else (spmd_axis_name,)
    for n in names:
        if n not in mesh.axis_names:
            raise ValueError(f"vmap: spmd_axis_name {spmd_axis_name!r} names {n!r}, which is not an axis "
                             f"of the mesh {mesh}")

    def place(x, axis):
        spec = PartitionSpec(*([None] * axis + [names if len(names) > 1 else names[0]]))
        return with_sharding_constraint(x, NamedSharding(mesh, spec))
    return place, (mesh, names)


def _leaf_paths(args, arg_names):
    """A readable name per flat leaf of the positional arguments: ``argument x['a'][0]``."""
    from ..jvp import _leaf_names
    out = []
    for a, name in zip(args, arg_names):
        out += _leaf_names(tree_flatten(a)[1], name)
    return out
