"""``qjit``: trace once per abstract signature, compile per concrete signature, run via XLA.

    @qjit(abstracted_axes={0: 'n'})
    def f(x):
        return jnp.sum(jnp.sin(x) * 2)

    f(np.ones(3)); f(np.ones(7))     # one trace, one lowering; XLA compiles per size
    print(f.jaxpr, f.mlir)

Arguments are pytrees of arrays and Python scalars; ``static_argnums`` /
``static_argnames`` arguments are baked into the trace (they must be hashable). When
every parameter is annotated (``sz: int``, ``x: float``, ``ShapeDtypeStruct((None, 3))``)
the function is traced ahead of time, at decoration; ``None`` axes are dynamic. Called
inside another trace, a ``qjit`` function is inlined into the caller.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Dict, Optional

import numpy as np

from .core import pytree
from .core.errors import api_boundary, user_stacklevel
from .core.staging import JaxprTrace
from .core.trace import _dynamic, _eval_trace, current_trace
from .execution.program import Program, Stats
from .tracing import (ShapeDtypeStruct, TracedFunction, _axis_names, _per_arg_specs, _spec_leaves,
                      implicit_values, leaf_aval, normalize_static_argnums, trace_function)


class _Entry:
    """One trace of the function: its jaxpr, its execution plan, how to read its results."""

    def __init__(self, traced: TracedFunction, stats: Stats, describe_input):
        self.traced = traced
        closed = traced.closed_jaxpr
        self.program = Program(closed.jaxpr, closed.consts, stats, describe_input)
        self.explicit = [i for i, e in enumerate(closed.jaxpr.out_explicit) if e]
        self.dtypes = [a.dtype for a, e in closed.jaxpr.in_type if e]


_ARRAY_TYPES = frozenset({np.ndarray, np.float64, np.float32, np.int64, np.int32, np.bool_})
_NO_FAST = object()   # an argument kind the fast path does not handle (never a key entry)


def _leaf_key(x):
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t is int or t is float or t is bool:
        return t
    if isinstance(x, np.generic):
        return ((), x.dtype)
    if isinstance(x, (list, tuple)):
        a = np.asarray(x)
        return (a.shape, a.dtype)
    if isinstance(x, ShapeDtypeStruct):
        return (x.shape, x.dtype)
    return (type(x), getattr(x, "shape", None), str(getattr(x, "dtype", None)))


class QJIT:
    """A function compiled just in time; see the module docstring."""

    def __init__(self, fun: Callable, static_argnums=None, static_argnames=None, abstracted_axes=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.signature = _signature(fun)
        self.static_argnames = tuple([static_argnames] if isinstance(static_argnames, str)
                                     else static_argnames or ())
        nums = list(normalize_static_argnums(static_argnums))
        if self.signature is not None:
            names = list(self.signature.parameters)
            for n in self.static_argnames:
                if n not in names:
                    raise ValueError(f"static_argnames names {n!r}, which is not a parameter of {fun.__name__}")
                nums.append(names.index(n))
        self.static_argnums = tuple(sorted(set(nums)))
        self.abstracted_axes = abstracted_axes
        self.stats = Stats()
        self.traces = 0
        self.calls = 0
        self._by_abstract: Dict[Any, _Entry] = {}
        self._by_concrete: Dict[Any, _Entry] = {}
        self._fast: Dict[Any, tuple] = {}   # concrete key -> (entry, executable, ...): see __call__
        self._last: Optional[_Entry] = None
        self._aot_leaves = None
        self._aot_compile()

    # --- ahead-of-time compilation from annotations --------------------------------------------
    def _aot_compile(self):
        sig = self.signature
        if sig is None or self.static_argnums or not sig.parameters:
            return
        specs = []
        for p in sig.parameters.values():
            ann = p.annotation
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                return
            if ann is int:
                specs.append(0)
            elif ann is float:
                specs.append(0.0)
            elif ann is bool:
                specs.append(False)
            elif isinstance(ann, ShapeDtypeStruct):
                specs.append(ann)
            else:
                return
        self._aot_leaves = specs
        entry = self._trace(tuple(specs), {})
        self._by_abstract[self._abstract_key(tuple(specs), {})] = entry

    def _effective_axes(self, nargs):
        """abstracted_axes, completed with the dynamic (None) axes of annotated arrays."""
        if self._aot_leaves is None:
            return self.abstracted_axes
        user = _per_arg_specs(self.abstracted_axes, nargs)
        out = []
        for k, ann in enumerate(self._aot_leaves):
            spec = user[k] if k < len(user) else None
            if isinstance(ann, ShapeDtypeStruct) and spec is None:
                spec = {ax: f"__aot_{k}_{ax}" for ax, d in enumerate(ann.shape) if d is None}
            out.append(spec)
        return tuple(out)

    # --- tracing ---------------------------------------------------------------------------
    def _dynamic_args(self, args):
        return [a for i, a in enumerate(args) if i not in self.static_argnums]

    def _trace(self, args, kwargs) -> _Entry:
        nargs = len(self._dynamic_args(args))
        traced = trace_function(self.fun, args, kwargs, self.static_argnums, self._effective_axes(nargs))
        self.traces += 1
        return _Entry(traced, self.stats, self._describe_input_fn(traced))

    def _describe_input_fn(self, traced: TracedFunction):
        sig = traced.signature
        nimp = len(sig.dim_names)

        def describe(i):
            if i < nimp:
                name = sig.dim_names[i]
                label = name if isinstance(name, str) and not name.startswith("__aot") else "dynamic axis"
                li, ax = sig.dim_sources[i][0]
                return f"the size of {label} (axis {ax} of {sig.leaf_where[li]})"
            return sig.leaf_where[i - nimp]
        return describe

    def _abstract_key(self, args, kwargs):
        """The cache key of a trace: structures, dtypes, shapes with abstracted axes erased,
        and the static arguments."""
        dyn = self._dynamic_args(args)
        specs = _per_arg_specs(self._effective_axes(len(dyn)), len(dyn))
        parts = []
        for k, a in enumerate(dyn):
            leaves, tree = pytree.tree_flatten(a)
            spec_leaves = _spec_leaves(specs[k], a, len(leaves))
            items = []
            for j, (x, spec) in enumerate(zip(leaves, spec_leaves)):
                where = f"argument {self._position(k)}" + (f" (leaf {j})" if len(leaves) > 1 else "")
                aval = leaf_aval(x, where)
                names = _axis_names(spec, aval.ndim, where)
                shape = tuple(("dyn", n) if ax in names else d for ax, (d, n) in
                              enumerate(zip(aval.shape, [names.get(i) for i in range(aval.ndim)])))
                items.append((aval.dtype, shape, type(x) in (int, float, bool)))
            parts.append((tree, tuple(items)))
        statics = tuple(_hashable(args[i], i) for i in self.static_argnums if i < len(args))
        kw_leaves, kw_tree = pytree.tree_flatten(kwargs)
        kw = (kw_tree, tuple((leaf_aval(x, "keyword argument").dtype, np.shape(x)) for x in kw_leaves))
        return (tuple(parts), statics, kw)

    def _position(self, k):
        """The position among all arguments of the k-th non-static argument."""
        i = -1
        for _ in range(k + 1):
            i += 1
            while i in self.static_argnums:
                i += 1
        return i

    # --- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # Fast path: arguments seen before (numpy arrays by shape and dtype, Python ints by
        # value) whose trace is one executable: look it up and run it, nothing else.
        if self._fast and not kwargs and _dynamic[-1] is _eval_trace:
            try:
                hit = self._fast.get(tuple([(a.shape, a.dtype) if type(a) in _ARRAY_TYPES
                                            else a if type(a) is int else _NO_FAST for a in args]))
            except TypeError:
                hit = None
            if hit is not None:
                entry, exe, runtime, explicit, single = hit
                self.calls += 1
                self._last = entry
                outs = exe(*args) if runtime is None else exe(*[args[i] for i in runtime])
                if single is not None:
                    return outs[single]
                return pytree.tree_unflatten(entry.traced.out_tree, [outs[i] for i in explicit])
        return self._call(*args, **kwargs)

    @api_boundary
    def _call(self, *args, **kwargs):
        if isinstance(current_trace(), JaxprTrace):
            return self.fun(*args, **kwargs)   # nested qjit: inline into the caller's trace
        args = self._bind_kwargs(args, kwargs)
        self.calls += 1
        if not kwargs:
            dyn = self._dynamic_args(args)
            try:
                key = (tuple(_leaf_key(x) for x in dyn),
                       tuple(_hashable(args[i], i) for i in self.static_argnums if i < len(args)))
                flat_ok = all(not isinstance(x, (list, tuple, dict)) or isinstance(x, np.ndarray) for x in dyn)
            except TypeError:
                key, flat_ok = None, False
            entry = self._by_concrete.get(key) if flat_ok else None
        else:
            entry, key, flat_ok = None, None, False
        if entry is None:
            entry = self._lookup(args, kwargs)
            if flat_ok and key is not None:
                self._by_concrete[key] = entry
        self._last = entry
        out = self._run(entry, args, kwargs)
        if flat_ok and not kwargs:
            self._register_fast(entry, args)
        return out

    def _register_fast(self, entry: _Entry, args):
        """Remember a direct plan for this signature when nothing but one executable is needed:
        no static arguments or pytrees, every array already of the traced dtype, and the baked
        integers are the implicit dims and integer arguments (part of the key)."""
        seg = entry.program.single
        nimp = len(entry.traced.signature.dim_names)
        if seg is None or seg.last_executable is None or self.static_argnums or len(self._fast) >= 256:
            return
        for a, dt in zip(args, entry.dtypes):
            if not ((type(a) in _ARRAY_TYPES and a.dtype == dt) or type(a) is int):
                return
        if len(args) != len(entry.dtypes) or any(p < nimp for p in seg.runtime):
            return
        if any(type(args[p - nimp]) not in _ARRAY_TYPES for p in seg.runtime):
            return   # a runtime integer would make the key value-dependent for nothing
        runtime = [p - nimp for p in seg.runtime]
        runtime = None if runtime == list(range(len(args))) else runtime
        tree = entry.traced.out_tree
        single = entry.explicit[0] if tree.kind == "leaf" and len(entry.explicit) == 1 else None
        key = tuple((a.shape, a.dtype) if type(a) in _ARRAY_TYPES else a for a in args)
        self._fast[key] = (entry, seg.last_executable, runtime, entry.explicit, single)

    def _bind_kwargs(self, args, kwargs):
        """Move keyword arguments that name positional parameters into ``args``."""
        if not kwargs or self.signature is None:
            return args
        names = list(self.signature.parameters)
        args = list(args)
        for i in range(len(args), len(names)):
            n = names[i]
            if n in kwargs:
                args.append(kwargs.pop(n))
            else:
                p = self.signature.parameters[n]
                if p.default is inspect.Parameter.empty:
                    break
                if any(m in kwargs for m in names[i + 1:]):
                    args.append(p.default)
                else:
                    break
        return tuple(args)

    def _lookup(self, args, kwargs) -> _Entry:
        args = self._check_aot(args)
        akey = self._abstract_key(args, kwargs)
        entry = self._by_abstract.get(akey)
        if entry is None:
            entry = self._trace(args, kwargs)
            self._by_abstract[akey] = entry
        return entry

    def _check_aot(self, args):
        """Check arguments against the annotations; returns them cast to the annotated dtypes.

        A rank or unsafe-dtype mismatch is an error; different static sizes warn and
        retrace (the annotation's dynamic axes stay dynamic)."""
        if self._aot_leaves is None:
            return args
        args = list(args)
        for k, (ann, x) in enumerate(zip(self._aot_leaves, args)):
            where = f"argument {k} ({self._param_name(k)})"
            if not isinstance(ann, ShapeDtypeStruct):
                args[k] = _cast_scalar(x, type(ann), where)
                continue
            if not isinstance(x, (np.ndarray, np.generic, list, tuple, int, float, bool)):
                leaf_aval(x, f"argument {k}")  # raises the argument-type error
            arr = np.asarray(x)
            if arr.ndim != len(ann.shape):
                raise TypeError(f"{where} has rank {arr.ndim}, but its annotation {ann} has rank "
                                f"{len(ann.shape)}")
            if not np.can_cast(arr.dtype, ann.dtype, "safe"):
                raise TypeError(f"{where} has dtype {arr.dtype}, which cannot be cast safely to the "
                                f"annotated {ann.dtype}")
            if any(want is not None and d != want for d, want in zip(arr.shape, ann.shape)):
                warnings.warn(f"{where} has shape {arr.shape}, which contradicts its annotation "
                              f"{ann.shape}; retracing", stacklevel=user_stacklevel())
            args[k] = arr.astype(ann.dtype, copy=False)
        return tuple(args)

    def _param_name(self, k):
        if self.signature is None:
            return f"#{k}"
        names = list(self.signature.parameters)
        return names[k] if k < len(names) else f"#{k}"

    def _run(self, entry: _Entry, args, kwargs):
        traced = entry.traced
        dyn = self._dynamic_args(args)
        leaves = []
        for a in dyn:
            leaves += pytree.tree_flatten(a)[0] if isinstance(a, (list, tuple, dict)) or a is None \
                else [a]
        if kwargs:
            leaves += pytree.tree_flatten(kwargs)[0]
        sig = traced.signature
        leaves = [self._coerce(x, dt, i, sig) for i, (x, dt) in enumerate(zip(leaves, entry.dtypes))]
        dims = implicit_values(sig, leaves) if sig.dim_names else []
        outs = entry.program.run(dims + leaves)
        explicit = [outs[i] for i in entry.explicit]
        return pytree.tree_unflatten(traced.out_tree, explicit)

    def _coerce(self, x, dtype, i, sig):
        t = type(x)
        if t is np.ndarray:
            if x.dtype == dtype:
                return x
            if not np.can_cast(x.dtype, dtype, "same_kind") and not (
                    np.issubdtype(x.dtype, np.integer) and np.issubdtype(dtype, np.floating)):
                raise TypeError(f"{sig.leaf_where[i]} has dtype {x.dtype}, which cannot be cast safely to "
                                f"{dtype}")
            return x.astype(dtype)
        if t in (int, float, bool) or isinstance(x, np.generic):
            return np.asarray(x, dtype=dtype)
        if isinstance(x, (list, tuple)):
            return np.asarray(x, dtype=dtype)
        if hasattr(x, "__array__"):
            return np.asarray(x, dtype=dtype)
        raise TypeError(f"{sig.leaf_where[i]} is a {type(x).__name__}, not an array or scalar")

    # --- introspection -----------------------------------------------------------------------
    def _entry(self) -> _Entry:
        if self._last is None:
            if self._by_abstract:
                return next(iter(self._by_abstract.values()))
            raise RuntimeError(f"{self.__name__} has not been traced yet: call it once (or annotate "
                               "its parameters for ahead-of-time compilation)")
        return self._last

    @property
    def jaxpr(self):
        """The ClosedJaxpr of the last call's trace."""
        return self._entry().traced.closed_jaxpr

    @property
    def mlir(self) -> str:
        """The dynamic StableHLO module (``?`` dims) of the last call's trace."""
        from .lowering import module_text
        e = self._entry()
        if getattr(e, "_mlir", None) is None:
            e._mlir = module_text(e.traced.closed_jaxpr)
        return e._mlir

    @property
    def mlir_specialized(self) -> str:
        """The static modules compiled for the last call's signature."""
        segs = self._entry().program.segments()
        texts = [s.last_specialized for s in segs if s.last_specialized]
        if not texts:
            raise RuntimeError("nothing has been compiled yet: call the function first")
        return "\n".join(texts)

    @property
    def hlo(self) -> str:
        """XLA's optimized HLO of the executables used by the last call."""
        from .runtime import hlo_text
        segs = self._entry().program.segments()
        texts = [hlo_text(s.last_executable) for s in segs if s.last_executable is not None]
        if not texts:
            raise RuntimeError("nothing has been compiled yet: call the function first")
        return "\n".join(texts)

    def cache_info(self) -> Dict[str, int]:
        """How many traces, lowerings, specializations and compilations happened."""
        s = self.stats
        return {"calls": self.calls, "traces": self.traces, "lowerings": s.lowerings,
                "specializations": s.specializations, "compilations": s.compilations,
                "disk_cache_hits": s.disk_hits, "host_steps": s.host_steps}


def _cast_scalar(x, kind, where):
    """A Python/numpy scalar cast to an annotated ``int``, ``float`` or ``bool``, safely."""
    targets = {int: np.int64, float: np.float64, bool: np.bool_}
    arr = np.asarray(x)
    if arr.ndim != 0 or not np.can_cast(arr.dtype, targets[kind], "safe") or (
            kind is not bool and arr.dtype == np.bool_):
        raise TypeError(f"{where} is annotated {kind.__name__} but got {type(x).__name__} {x!r}")
    return kind(arr)


def _hashable(x, i):
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"static argument {i} of type {type(x).__name__} is not hashable") from None
    return (type(x), x)


def _signature(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def qjit(fun: Optional[Callable] = None, *, static_argnums=None, static_argnames=None,
         abstracted_axes=None):
    """Compile ``fun`` with dynamic shapes; usable as ``@qjit`` or ``@qjit(...)``."""
    @api_boundary
    def wrap(f):
        return QJIT(f, static_argnums, static_argnames, abstracted_axes)
    return wrap if fun is None else wrap(fun)
