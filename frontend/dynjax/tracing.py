"""Tracing a user function into a ClosedJaxpr: argument specs, abstracted axes, pytrees.

``make_jaxpr(fun, static_argnums=..., abstracted_axes=...)`` and ``qjit`` share this:

* arguments are flattened as pytrees; static arguments are passed through as Python
  values and become part of the trace's cache key;
* Python ints / floats / bools become ``i64[]`` / ``f64[]`` / ``bool[]`` inputs;
* array axes named in ``abstracted_axes`` become dynamic: each distinct name is one
  implicit ``i64[]`` input (placed first), shared by every axis with that name.

``abstracted_axes`` accepts Catalyst's forms: a tuple with one entry per argument
(each a tuple of names per axis, like ``('n', 'm')``, or a dict ``{axis: name}``), a dict
``{0: 'n'}`` applied to every array argument, or a tuple of such dicts. A name may be
an ``int`` instead of a string to mean "a fresh dynamic axis".
"""
from __future__ import annotations

import itertools
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .core import pytree
from .core.avals import (SUPPORTED_DTYPES, DBIdx, ShapedArray, bool_, canonical_dtype, complex128, dim_aval,
                         float0, float64, int64, make_aval)
from .core.errors import api_boundary
from .core.expansion import expand_outputs, parse_input_type
from .core.jaxpr import ClosedJaxpr
from .core.staging import new_jaxpr_trace
from .core.trace import Tracer


@dataclass(frozen=True)
class ShapeDtypeStruct:
    """An argument or result spec: a shape and a dtype, with no data (JAX's
    ``ShapeDtypeStruct``). ``None`` entries of ``shape`` are dynamic sizes (dynjax's addition).
    ``weak_type=True`` marks a Python-scalar-like value (it takes the dtype of the arrays it is
    combined with); ``sharding`` is kept for JAX compatibility (a program runs on one device)."""
    shape: Tuple[Optional[int], ...]
    dtype: Any = float64
    sharding: Any = field(default=None, kw_only=True, compare=False)
    weak_type: bool = field(default=False, kw_only=True)

    def __post_init__(self):
        shape = self.shape
        if isinstance(shape, (int, np.integer)) or shape is None:
            shape = (shape,)
        try:
            shape = tuple(shape)
        except TypeError:
            shape = None
        # a size is an int, None (dynamic), or a traced size (``x.shape[0]`` inside a trace)
        if shape is None or any(isinstance(d, (str, bytes, float, complex, np.floating, bool))
                                for d in shape):
            raise TypeError(f"ShapeDtypeStruct: shape must be a sequence of ints or None (a dynamic "
                            f"size), got {self.shape!r}")
        shape = tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape)
        if any(isinstance(d, int) and d < 0 for d in shape):
            raise ValueError(f"ShapeDtypeStruct: sizes must be >= 0, got {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        object.__setattr__(self, "weak_type", bool(self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Optional[int]:
        """The number of elements (``None`` when a size is dynamic)."""
        if not all(isinstance(d, int) for d in self.shape):
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, **changes) -> "ShapeDtypeStruct":
        """A copy with ``shape``, ``dtype``, ``sharding`` or ``weak_type`` replaced."""
        unknown = set(changes) - {"shape", "dtype", "sharding", "weak_type"}
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update: unexpected argument(s) {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def __repr__(self):
        extra = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{extra})"


def leaf_aval(x, where: str) -> ShapedArray:
    """The (static) abstract value of a concrete argument leaf."""
    try:
        return _leaf_aval(x, where)
    except TypeError as e:
        if str(e).startswith(where):
            raise
        raise TypeError(f"{where}: {e}") from None


def _leaf_aval(x, where: str) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return make_aval(tuple(0 if d is None else d for d in x.shape), x.dtype, weak_type=x.weak_type)
    if isinstance(x, (bool, np.bool_)):
        return ShapedArray((), bool_)
    # Python scalars are weakly typed, as in numpy and JAX: `x_f32 * n` stays float32
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return ShapedArray((), int64, True) if isinstance(x, int) else ShapedArray((), canonical_dtype(x.dtype))
    if isinstance(x, (float, np.floating)):   # np.float64 subclasses float, but is strongly typed
        return ShapedArray((), float64, True) if not isinstance(x, np.generic) else \
            ShapedArray((), canonical_dtype(x.dtype))
    if isinstance(x, complex):
        return ShapedArray((), complex128, True)
    if isinstance(x, np.generic):
        return ShapedArray((), canonical_dtype(x.dtype))
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            raise TypeError(f"{where}: object arrays are not supported")
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if isinstance(x, (list, tuple)):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"{where}: ragged or non-numeric nested list")
        return ShapedArray(arr.shape, canonical_dtype(arr.dtype))
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        # a foreign array or spec (a jax.Array, jax.ShapeDtypeStruct) keeps its weak type
        weak = getattr(x, "weak_type", False)
        return ShapedArray(tuple(x.shape), canonical_dtype(x.dtype), weak if isinstance(weak, bool) else False)
    raise TypeError(f"{where}: {type(x).__name__} is not a valid argument type "
                    "(expected an array, a Python scalar, or a pytree of them)")


def _per_arg_specs(abstracted_axes, nargs: int):
    """Normalize abstracted_axes into one spec per (dynamic) argument."""
    if abstracted_axes is None:
        return [None] * nargs
    if isinstance(abstracted_axes, dict):
        return [abstracted_axes] * nargs
    if isinstance(abstracted_axes, (tuple, list)) and abstracted_axes and all(
            isinstance(n, str) for n in abstracted_axes):
        # JAX's leaf form ('n', 'm'): the leading axes of every array argument
        return [dict(enumerate(abstracted_axes))] * nargs
    if isinstance(abstracted_axes, (tuple, list)):
        specs = list(abstracted_axes)
        if len(specs) > nargs:
            raise ValueError(f"abstracted_axes has {len(specs)} entries but the function takes {nargs} "
                             "(non-static) arguments")
        return specs + [None] * (nargs - len(specs))
    raise TypeError(f"abstracted_axes must be a tuple or a dict, got {type(abstracted_axes).__name__}")


def _axis_names(spec, ndim: int, where: str) -> Dict[int, Any]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        out = {}
        for ax, name in spec.items():
            if not isinstance(ax, (int, np.integer)):
                raise TypeError(f"{where}: abstracted_axes dict keys are axis numbers, got {ax!r}")
            ax = int(ax)
            if ndim == 0:
                continue  # a dict spec applies to array arguments only
            if not -ndim <= ax < ndim:
                raise ValueError(f"{where}: abstracted axis {ax} is out of range for rank {ndim}")
            out[ax % ndim] = name
        return out
    if isinstance(spec, (tuple, list)):
        if len(spec) > ndim:
            raise ValueError(f"{where}: abstracted_axes names {len(spec)} axes but the argument has rank {ndim}")
        return {i: n for i, n in enumerate(spec) if n is not None}
    raise TypeError(f"{where}: an abstracted_axes entry must be a tuple of names or a dict, got {spec!r}")


@dataclass
class InputSignature:
    """How the flat argument leaves map to the jaxpr's expanded inputs."""
    in_type: tuple                      # expanded (implicit dims first)
    dim_names: List[Any]                # one per implicit input
    dim_sources: List[List[Tuple[int, int]]]   # per implicit input: (leaf index, axis) occurrences
    leaf_avals: List[ShapedArray]
    leaf_where: List[str]               # "argument 1 (leaf 0)": for error messages


def input_signature(leaves: Sequence[Any], leaf_specs: Sequence[Any], leaf_where: Sequence[str],
                    avals: Optional[Sequence[ShapedArray]] = None,
                    check_shared: bool = False) -> InputSignature:
    """Build the expanded in_type for argument leaves with their abstracted-axis specs.

    With ``check_shared``, axes sharing a name must have the same size in the given
    arguments (a ``TypeError`` otherwise; ``qjit`` checks at call time instead)."""
    avals = list(avals) if avals is not None else [leaf_aval(x, w) for x, w in zip(leaves, leaf_where)]
    names: List[Any] = []
    index: Dict[Any, int] = {}
    sources: List[List[Tuple[int, int]]] = []
    fresh = itertools.count()
    rows = []
    for li, (aval, spec, where) in enumerate(zip(avals, leaf_specs, leaf_where)):
        axes = _axis_names(spec, aval.ndim, where)
        row = list(aval.shape)
        for ax, name in sorted(axes.items()):
            key = name if isinstance(name, str) else ("__fresh__", next(fresh))
            if key not in index:
                index[key] = len(names)
                names.append(key)
                sources.append([])
            sources[index[key]].append((li, ax))
            row[ax] = ("dim", index[key])
        rows.append(row)
    if check_shared:
        for name, occ in zip(names, sources):
            known = [(li, ax) for li, ax in occ if not _unknown_size(leaves[li], ax)]
            _check_same_size(name, known, lambda li, ax: avals[li].shape[ax], leaf_where, TypeError)
    in_type = [(dim_aval(), False) for _ in names]
    for aval, row in zip(avals, rows):
        shape = tuple(DBIdx(d[1]) if isinstance(d, tuple) else d for d in row)
        in_type.append((aval.update(shape=shape), True))
    return InputSignature(tuple(in_type), names, sources, avals, list(leaf_where))


def trace_flat(fun_flat: Callable, in_type, dim_names=()) -> Tuple[ClosedJaxpr, Any]:
    """Trace ``fun_flat(*explicit_leaves) -> (out_leaves, out_tree)`` from an expanded in_type.
    ``dim_names`` name the implicit dims' symbols (abstracted axis names)."""
    with new_jaxpr_trace(None) as scope:
        args = parse_input_type(scope, in_type, [n if isinstance(n, str) and not n.startswith("__")
                                                 else None for n in dim_names])
        explicit = [t for t, (_, e) in zip(args, in_type) if e]
        out_leaves, out_tree = fun_flat(*explicit)
        for i, x in enumerate(out_leaves):
            _check_result(x, i, out_tree)
        out_leaves = [scope.full_raise(x) for x in out_leaves]
        # a dim of a captured value (a constvar) is known to the caller: not an implicit output
        outs, out_explicit = expand_outputs(out_leaves, list(args) + [inner for _, inner in scope.captured])
        jaxpr = scope.to_jaxpr(args, outs, [e for _, e in in_type], out_explicit)
        consts = scope.const_values()   # with the captured tracers, if fun closes over any
    return ClosedJaxpr(jaxpr, consts), out_tree


class _Float0Result:
    """A float0 array among a traced function's results. It holds no data, so it is part of
    the result's structure (a pytree node with no children, its shape the node's data), not
    an output of the jaxpr: unflattening the structure gives back the float0 array."""
    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


pytree.register_pytree_node(_Float0Result, lambda r: ((), r.shape),
                            lambda shape, _: np.zeros(shape, float0))


def float0_as_structure(out):
    """``out`` with each float0 array leaf made part of its structure (``_Float0Result``)."""
    def convert(x):
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype == float0:
            return _Float0Result(tuple(x.shape))
        return x
    leaves, tree = pytree.tree_flatten(out)
    if not any(isinstance(x, (np.ndarray, np.generic)) and x.dtype == float0 for x in leaves):
        return out
    return pytree.tree_unflatten(tree, [convert(x) for x in leaves])


def _check_result(x, i: int, out_tree) -> None:
    """A returned leaf must be an array or a number: say which one is not."""
    if isinstance(x, (Tracer, bool, int, float, complex)):
        return
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype in SUPPORTED_DTYPES:
        return
    where = "the returned value" if out_tree.num_leaves == 1 else f"returned value {i} (in {out_tree})"
    raise TypeError(f"{where} is a {type(x).__name__} ({x!r:.40}); a traced function must return "
                    "arrays, numbers, or pytrees of them")


def normalize_static_argnums(static_argnums, nargs: Optional[int] = None) -> Tuple[int, ...]:
    if static_argnums is None:
        return ()
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    out = []
    for i in static_argnums:
        i = int(i)
        if nargs is not None and i < 0:
            i += nargs
        out.append(i)
    return tuple(sorted(set(out)))


@dataclass
class TracedFunction:
    """The result of tracing a Python function once for one abstract signature."""
    closed_jaxpr: ClosedJaxpr
    out_tree: Any
    signature: InputSignature
    in_tree: Any
    static_argnums: Tuple[int, ...]


def trace_function(fun: Callable, args: Sequence[Any], kwargs: Dict[str, Any], static_argnums=(),
                   abstracted_axes=None, avals: Optional[Sequence[ShapedArray]] = None,
                   check_shared: bool = False, given_leaf_specs=None) -> TracedFunction:
    """Trace ``fun(*args, **kwargs)``; static args are baked in, the rest become inputs.
    ``avals`` (one per flat leaf) replaces the leaves' own types (for values of an enclosing
    trace), ``given_leaf_specs`` the abstracted-axes specs (one ``{axis: name}`` per leaf)."""
    static = set(normalize_static_argnums(static_argnums, len(args)))
    dyn_positions = [i for i in range(len(args)) if i not in static]
    specs = _per_arg_specs(abstracted_axes, len(dyn_positions))
    leaves, leaf_specs, leaf_where, trees = [], [], [], []
    for k, i in enumerate(dyn_positions):
        arg_leaves, tree = pytree.tree_flatten(args[i])
        trees.append(tree)
        spec = specs[k]
        spec_leaves = _spec_leaves(spec, args[i], len(arg_leaves))
        for j, leaf in enumerate(arg_leaves):
            leaves.append(leaf)
            leaf_specs.append(spec_leaves[j])
            leaf_where.append(f"argument {i}" + (f" (leaf {j})" if len(arg_leaves) > 1 else ""))
    kw_leaves, kw_tree = pytree.tree_flatten(kwargs)
    for j, leaf in enumerate(kw_leaves):
        leaves.append(leaf)
        leaf_specs.append(None)
        leaf_where.append("keyword argument")
    if given_leaf_specs is not None:   # one {axis: name} per flat leaf (qjit's inlined calls)
        leaf_specs = list(given_leaf_specs)
    sig = input_signature(leaves, leaf_specs, leaf_where, avals, check_shared)
    counts = [t.num_leaves for t in trees]

    def fun_flat(*explicit):
        pos = 0
        call_args = list(args)
        for k, i in enumerate(dyn_positions):
            call_args[i] = pytree.tree_unflatten(trees[k], explicit[pos:pos + counts[k]])
            pos += counts[k]
        call_kwargs = pytree.tree_unflatten(kw_tree, explicit[pos:])
        out = fun(*call_args, **call_kwargs)
        return pytree.tree_flatten(float0_as_structure(out))

    closed, out_tree = trace_flat(fun_flat, sig.in_type, sig.dim_names)
    return TracedFunction(closed, out_tree, sig, (tuple(trees), kw_tree), tuple(sorted(static)))


def _spec_leaves(spec, arg, nleaves: int):
    """Spread one argument's abstracted-axes spec over its pytree leaves."""
    if spec is None or isinstance(spec, dict) or nleaves == 1:
        return [spec] * nleaves
    if isinstance(spec, (tuple, list)) and all(isinstance(s, (str, int)) or s is None for s in spec):
        return [spec] * nleaves
    spec_leaves, _ = pytree.tree_flatten(spec, is_leaf=lambda s: s is None or isinstance(s, dict) or (
        isinstance(s, tuple) and all(isinstance(x, (str, int)) or x is None for x in s)))
    if len(spec_leaves) != nleaves:
        raise ValueError(f"abstracted_axes entry {spec!r} does not match the argument's structure")
    return spec_leaves


def _is_number_sequence(x) -> bool:
    """A (nested) list or tuple whose leaves are all numbers: the literal form of an array."""
    if not isinstance(x, (list, tuple)) or hasattr(x, "_fields"):   # namedtuples are records
        return False
    leaves, _ = pytree.tree_flatten(x)
    return all(isinstance(v, (bool, int, float, complex, np.generic)) for v in leaves)


def _names_axes(spec) -> bool:
    """Whether an abstracted_axes entry names array axes (a dict, or a tuple of names)."""
    return isinstance(spec, dict) or (isinstance(spec, (tuple, list)) and bool(spec) and all(
        isinstance(s, (str, int)) or s is None for s in spec))


def named_lists_as_arrays(args: Sequence[Any], static_argnums, abstracted_axes) -> tuple:
    """Lists and tuples of numbers whose abstracted_axes entry names axes become numpy arrays
    (so one trace serves every length); every other list or tuple stays a pytree (JAX's rule:
    ``f([1.0, 2.0])`` passes two scalars). A ragged list is a ValueError naming the argument."""
    if abstracted_axes is None:
        return tuple(args)
    static = set(normalize_static_argnums(static_argnums, len(args)))
    dyn_positions = [i for i in range(len(args)) if i not in static]
    specs = _per_arg_specs(abstracted_axes, len(dyn_positions))
    out = list(args)
    for k, i in enumerate(dyn_positions):
        if _names_axes(specs[k]) and _is_number_sequence(args[i]):
            try:
                out[i] = np.array(args[i])
            except ValueError:
                raise ValueError(f"argument {i} is a list whose abstracted axes make it an array, but "
                                 "its rows have different lengths") from None
    return tuple(out)


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape: bool = False,
               abstracted_axes=None):
    """Return a function that traces ``fun`` and gives its ``ClosedJaxpr`` (JAX's signature,
    plus dynjax's ``abstracted_axes``).

    ``make_jaxpr(f)(3)`` traces ``f`` with an ``i64[]`` input. ``static_argnums`` (an int or
    a tuple; negative positions count from the end) are passed through as Python values and
    baked in. With ``return_shape=True`` the result is ``(closed_jaxpr, shapes)``, ``shapes``
    a pytree of ``ShapeDtypeStruct`` of ``fun``'s output (a dynamic dim is ``None``). With
    ``abstracted_axes={0: 'n'}`` the leading axis of every array argument becomes the same
    dynamic dimension ``n`` (one implicit input). ``axis_env`` (``[(name, size), ...]``) is
    accepted for JAX compatibility: dynjax has no collectives over named axes.
    """
    if not callable(fun):
        raise TypeError(f"make_jaxpr: expected a function, got {type(fun).__name__}")
    if axis_env is not None:
        for entry in axis_env:
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[1], (int, np.integer))):
                raise TypeError(f"make_jaxpr: axis_env must be a sequence of (name, size) pairs, got "
                                f"{axis_env!r}")
    if static_argnums is not None and not isinstance(static_argnums, (int, np.integer)):
        if not all(isinstance(i, (int, np.integer)) for i in static_argnums):
            raise TypeError(f"make_jaxpr: static_argnums must be an int or a sequence of ints, got "
                            f"{static_argnums!r}")

    @api_boundary
    def traced(*args, **kwargs):
        statics = normalize_static_argnums(static_argnums, len(args))
        bad = [i for i in statics if not 0 <= i < len(args)]
        if bad:
            raise ValueError(f"make_jaxpr: static_argnums {bad[0]} is out of range for "
                             f"{len(args)} positional arguments")
        args = named_lists_as_arrays(args, statics, abstracted_axes)
        result = trace_function(fun, args, kwargs, statics, abstracted_axes, check_shared=True)
        if return_shape:
            return result.closed_jaxpr, result_shapes(result.closed_jaxpr, result.out_tree)
        return result.closed_jaxpr
    traced.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    return traced


def result_shapes(closed: ClosedJaxpr, out_tree):
    """The explicit results of a trace as a pytree of ``ShapeDtypeStruct`` (a dim that is not
    a constant of the trace is ``None``)."""
    jaxpr = closed.jaxpr
    outs = [v.aval for v, e in zip(jaxpr.outvars, jaxpr.out_explicit) if e]
    return pytree.tree_unflatten(out_tree, [
        ShapeDtypeStruct(tuple(d if isinstance(d, (int, np.integer)) else None for d in a.shape), a.dtype,
                         weak_type=a.weak_type)
        for a in outs])


def implicit_values(sig: InputSignature, leaves: Sequence[Any]) -> List[int]:
    """The values of the implicit dimension inputs for concrete argument leaves.

    Raises ``ValueError`` when axes sharing a name have different sizes.
    """
    values = []
    for name, occ in zip(sig.dim_names, sig.dim_sources):
        values.append(_check_same_size(name, occ, lambda li, ax: np.shape(leaves[li])[ax],
                                       sig.leaf_where, ValueError))
    return values


def _check_same_size(name, occurrences, size_of, leaf_where, error) -> Optional[int]:
    """The common size of the axes ``occurrences`` sharing ``name``; ``error`` when they differ."""
    size = first = None
    for li, ax in occurrences:
        n = size_of(li, ax)
        if size is None:
            size, first = n, (li, ax)
        elif n != size:
            label = f"'{name}'" if isinstance(name, str) and not name.startswith("__") else "(unnamed)"
            raise error(f"abstracted axis {label} has size {size} in axis {first[1]} of "
                        f"{leaf_where[first[0]]} but size {n} in axis {ax} of {leaf_where[li]}")
    return None if size is None else int(size)


def _unknown_size(leaf, axis) -> bool:
    """Whether an argument leaf leaves the size of ``axis`` open (a ``None`` in a spec)."""
    return isinstance(leaf, ShapeDtypeStruct) and leaf.shape[axis] is None
