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
inside another trace or by a transformation (``grad(qjit(f))``), a ``qjit`` function is
inlined into the caller: its jaxpr, traced once per abstract signature, is evaluated under the
caller's interpreters (``QJIT._call_inlined``).
"""
from __future__ import annotations

import functools
import inspect
import types
import warnings
import weakref
from typing import Callable, Optional

import numpy as np

from .core import pytree
from .core.avals import same_dim
from .core.errors import api_boundary, name_user_line, user_error, user_stacklevel
from .core.trace import EVAL_TRACE, STAGING, Tracer, is_tracing, thread_state, typeof
from .execution import compile_log, explain, host_reach
from .execution.host_tier import HostProgram
from .execution.segment_host import Front
from .execution.lru import NO_MEMO, BoundedCache, check_cache_size, default_cache_size
from .execution.calls import ProgramCall, coerce_leaf, describe_input_fn, entry_arguments, run_entry
from .execution.masked_reductions import rewrite_masked_reductions
from .execution.program import Program, Stats
from .execution.sharded_runs import check_shardings, leaf_shardings, run_sharded
from .qjit_introspection import Introspection
from .tracing import (ShapeDtypeStruct, TracedFunction, _axis_names, _per_arg_specs, _spec_leaves,
                      implicit_values, leaf_aval, named_lists_as_arrays, normalize_static_argnums,
                      trace_function)


class _ClosesOverTracers(TypeError):
    """A trace of a function that closes over values of an enclosing transformation (a
    ``qjit`` function defined inside a function under ``jvp`` / ``vmap``): its jaxpr takes
    them as constvars whose values are the transformation's tracers, so it is not compiled
    or cached; ``QJIT._call`` evaluates it under the caller's interpreters."""

    def __init__(self, traced: TracedFunction):
        super().__init__("the function closes over a value traced by an enclosing transformation "
                         "(jvp, vmap, grad); it can only be called, under that transformation")
        self.traced = traced


class _Entry:
    """One trace of the function: its jaxpr, its execution plan, how to read its results."""

    def __init__(self, traced: TracedFunction, stats: Stats, describe_input):
        self.traced = traced
        # the program that runs: the trace with mask selections that only feed reductions
        # rewritten as masked reductions (``execution/masked_reductions.py``)
        closed = self.closed = rewrite_masked_reductions(traced.closed_jaxpr)
        self.program = Program(closed.jaxpr, closed.consts, stats, describe_input)
        self.explicit = [i for i, e in enumerate(closed.jaxpr.out_explicit) if e]
        self.dtypes = [a.dtype for a, e in closed.jaxpr.in_type if e]
        self.mlir: Optional[str] = None   # the lowered module, printed on demand
        # the latest server of its segment (``QJIT._server_front``), once it serves new sizes
        self.server = None


_NUMPY_INTS = frozenset({np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})
_NUMPY_SCALARS = frozenset({np.float16, np.float32, np.float64, np.bool_}) | _NUMPY_INTS
# argument types the fast path keys by type alone; Python scalars with the dtype they trace to
_FAST_SCALARS = _NUMPY_SCALARS | {float, int, bool}
_PYTHON_DTYPES = {float: np.dtype(np.float64), int: np.dtype(np.int64), bool: np.dtype(np.bool_)}
_NO_FAST = object()   # an argument kind the fast path does not handle (never in a registered key)


class _ByValue:
    """A dispatch-table entry for argument types whose executable bakes in integer arguments:
    the plans are in the same table under ``(_ByValue, key, values of the arguments at
    positions)``, so that the table stays bounded by ``cache_size`` as a whole."""
    __slots__ = ("types", "positions")

    def __init__(self, types, positions):
        self.types = types           # the first-level key: the arguments' types
        self.positions = positions   # the positions of the integers baked in

    def key(self, args) -> tuple:
        """The table's key of the plan for these arguments' values."""
        return (_ByValue, self.types, tuple([int(args[i]) for i in self.positions]))


#: "this path does not serve the call" (``QJIT._at_other_sizes``)
_MISS = object()


def _has_tracer(args, kwargs) -> bool:
    """Whether a tracer of an enclosing interpreter is among the arguments."""
    from .core.trace import Tracer
    if not kwargs and all(a.__class__ is np.ndarray for a in args):   # (the common call)
        return False
    return any(isinstance(x, Tracer) for x in pytree.tree_flatten((args, kwargs))[0])


def _fast_leaf_key(a):
    """How one positional argument enters the first-level key of the dispatch table.

    Arrays by shape and dtype, scalars by exact type: a Python float (traced weakly typed) and
    an ``np.float64`` differ. Values are not in this key: integer arguments whose value the
    executable bakes in (sizes) are keyed by value one level down (``_ByValue``)."""
    t = type(a)
    if t is np.ndarray:
        return (a.shape, a.dtype)
    return t if t in _FAST_SCALARS else _NO_FAST


#: the first item of a concrete-signature key of positional numpy arrays (``QJIT._call``),
#: and the shape class of arguments that have none (``QJIT._shape_class``)
_ARRAYS_ONLY = object()
_NO_CLASS = object()


def _erase(shape, axes) -> tuple:
    """``shape`` with the sizes of ``axes`` replaced by None."""
    return tuple([None if ax in axes else d for ax, d in enumerate(shape)])


def _leaf_key(x):
    """How one argument leaf enters the concrete-signature key (which picks a trace)."""
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t is int or t is float or t is bool:
        return t
    if isinstance(x, np.generic):
        return ((), x.dtype)
    if isinstance(x, ShapeDtypeStruct):
        return (x.shape, x.dtype, x.weak_type)
    return (t, getattr(x, "shape", None), str(getattr(x, "dtype", None)))


class QJIT(Introspection):
    """A function compiled just in time; see the module docstring."""

    def __init__(self, fun: Callable, static_argnums=None, static_argnames=None, abstracted_axes=None,
                 cache_size: Optional[int] = None, donate_argnums=None, donate_argnames=None,
                 in_shardings=None, out_shardings=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        # how arguments and results lie over devices (``execution.sharded_runs``); None: as
        # the arguments' own shardings say (``device_put(x, sharding)``), else one device
        self.in_shardings = check_shardings(in_shardings, "in_shardings")
        self.out_shardings = check_shardings(out_shardings, "out_shardings")
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
        self.donate_argnums = _donated(fun, self.signature, donate_argnums, donate_argnames, self.static_argnums)
        self.abstracted_axes = abstracted_axes
        self.cache_size = default_cache_size() if cache_size is None else check_cache_size(cache_size)
        self.stats = Stats(self.cache_size, getattr(fun, "__name__", None) or type(fun).__name__)
        self.traces = 0
        self.inlined_traces = 0   # traces inlined into a caller's trace (_call_inlined)
        self.calls = 0
        # Bounded, thread-safe caches (execution/lru.py). Each call reads them, never writes
        # per-call state on shared objects.
        self._by_abstract = BoundedCache(self.cache_size)   # abstract signature -> _Entry
        self._by_concrete = BoundedCache(self.cache_size)   # concrete leaf signature -> _Entry
        self._fast = BoundedCache(self.cache_size, executables=True)   # fast key -> (entry, executable, ...): see __call__
        self._inlined = BoundedCache(self.cache_size)   # abstract signature -> TracedFunction (_call_inlined)
        # positional numpy arrays only: their shape class (dtypes, shapes with the abstracted
        # axes erased) -> the abstract signature it stands for (_lookup), and per tuple of
        # ranks the axes erased (None: no shape class, the full key decides)
        self._akey_of_class = BoundedCache(self.cache_size)
        self._erased_axes = BoundedCache(self.cache_size)
        self._bound_arities = set()   # numbers of positional arguments the signature takes
        self._fast_hit = self._fast.peek               # its lookup without the recency update
        #: (trace entry, its arguments' ``host_reach.Layout``, the index of its one result or
        #: None, its plan after the program) of the latest direct call served by a host program that serves other sizes as it is: a
        #: call laid out so is offered to its segment's server first (``_serve``, the entry's
        #: ``server``), and after a miss of the dispatch table to ``_at_other_sizes``
        self._reusing = None
        self._serve = None
        self._last: Optional[_Entry] = None   # introspection only (f.jaxpr): the latest call's trace
        self._aot_leaves = None
        self._aot_traced = False   # traced at decoration (explain: not a cache miss of a call)
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
            elif _is_array_annotation(ann):   # Catalyst's ShapedArray([1, 3, 1], float) form
                specs.append(ShapeDtypeStruct(tuple(ann.shape), ann.dtype))
            else:
                return
        self._aot_leaves = specs
        try:
            entry = self._trace(tuple(specs), {})
        except _ClosesOverTracers:
            return   # traced again at each call
        except Exception as e:   # raised at the decoration: the message starts with the user's line
            name_user_line(e, f"tracing {getattr(self.fun, '__name__', 'the function')} at its decoration, "
                              "from its annotations")
            raise
        self._by_abstract.put(self._abstract_key(tuple(specs), {}), entry)
        self._aot_traced = True

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

    def _trace(self, args, kwargs, akey=None, static_kwargs=()) -> _Entry:
        if akey is not None:
            explain.maybe(explain.recompiles, lambda: explain.trace_reason(
                getattr(self.fun, "__name__", "function"), akey, self._by_abstract.keys(),
                lambda k: f"argument {self._position(k)} ({self._param_name(self._position(k))})"))
        nargs = len(self._dynamic_args(args))
        fun = (functools.partial(self.fun, **{n: v for n, (_, v) in static_kwargs})
               if static_kwargs else self.fun)
        if akey is None:
            akey = self._abstract_key(args, kwargs, static_kwargs)
            why = "ahead of time, from the annotations"
        else:
            old = self._by_abstract.keys()
            why = None
        with compile_log.step("trace", self.stats, explain.signature_text(akey), lambda: why or explain.trace_why(
                akey, old, lambda k: f"argument {self._position(k)} ({self._param_name(self._position(k))})")) as st:
            traced = trace_function(fun, args, kwargs, self.static_argnums, self._effective_axes(nargs))
            st.sizes = lambda: compile_log.equations_text(compile_log.count_equations(traced.closed_jaxpr.jaxpr))
        self.traces += 1
        if any(isinstance(c, Tracer) for c in traced.closed_jaxpr.consts):
            raise _ClosesOverTracers(traced)
        return _Entry(traced, self.stats, self._describe_input_fn(traced))

    def _describe_input_fn(self, traced: TracedFunction):
        return describe_input_fn(traced)

    def _abstract_key(self, args, kwargs, static_kwargs=()):
        """The cache key of a trace: structures, dtypes, shapes with abstracted axes erased,
        and the static arguments. The one keying rule of every call path: called with values
        of an enclosing interpreter (``grad(f)``, ``vmap(f)``, a nested ``qjit``), a dim those
        values leave symbolic is erased too (labelled by its first occurrence, so that shared
        dims stay shared)."""
        return self._signature_leaves(args, kwargs, static_kwargs)[0]

    def _signature_leaves(self, args, kwargs, static_kwargs=()):
        """``(key, leaves, avals, axis_names)``: the abstract key (``_abstract_key``) and, per
        flat argument leaf (keyword arguments last), its aval and its dynamic axes
        ``{axis: name}`` (abstracted axes, and dims left symbolic by an enclosing trace)."""
        dyn = self._dynamic_args(args)
        specs = _per_arg_specs(self._effective_axes(len(dyn)), len(dyn))
        traced_dims: list = []   # the distinct symbolic dims seen, in order

        def dim_label(d):
            for k, seen in enumerate(traced_dims):
                if same_dim(seen, d):
                    return f"__traced_{k}"
            traced_dims.append(d)
            return f"__traced_{len(traced_dims) - 1}"

        def leaf_entry(x, spec, where):
            aval = typeof(x) if isinstance(x, Tracer) else leaf_aval(x, where)
            names = _axis_names(spec, aval.ndim, where)
            for ax, d in enumerate(aval.shape):
                if not isinstance(d, (int, np.integer)):
                    names[ax] = dim_label(d)
            shape = tuple(("dyn", names[ax]) if ax in names else d for ax, d in enumerate(aval.shape))
            all_leaves.append(x)
            all_avals.append(aval)
            all_names.append(names)
            # a weakly typed value (a Python scalar, or a tracer of one) promotes differently
            return aval.dtype, shape, type(x) in (int, float, bool) or (isinstance(x, Tracer) and aval.weak_type)

        all_leaves, all_avals, all_names = [], [], []
        parts = []
        for k, a in enumerate(dyn):
            leaves, tree = pytree.tree_flatten(a)
            spec_leaves = _spec_leaves(specs[k], a, len(leaves))
            items = []
            for j, (x, spec) in enumerate(zip(leaves, spec_leaves)):
                where = f"argument {self._position(k)}" + (f" (leaf {j})" if len(leaves) > 1 else "")
                items.append(leaf_entry(x, spec, where))
            parts.append((tree, tuple(items)))
        statics = tuple(_hashable(args[i], i) for i in self.static_argnums if i < len(args))
        kw_leaves, kw_tree = pytree.tree_flatten(kwargs)
        kw = (kw_tree, tuple(leaf_entry(x, None, "keyword argument")[:2] for x in kw_leaves))
        return (tuple(parts), statics, kw, static_kwargs), all_leaves, all_avals, all_names

    def _position(self, k):
        """The position among all arguments of the k-th non-static argument."""
        i = -1
        for _ in range(k + 1):
            i += 1
            while i in self.static_argnums:
                i += 1
        return i

    # --- calling ---------------------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        """Bind like a function, so that ``qjit`` decorates methods: ``instance.method(x)``
        calls this object with the instance first (static when ``static_argnums`` names
        position 0, else a pytree argument like any other, as with ``jax.jit``)."""
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        # Fast path: positional arguments seen before, whose trace is one executable: look it
        # up and run it, nothing else. The keys hold what the executable bakes in. (Spelled
        # out for one and two arguments, and a hit does not refresh the plan's recency: each
        # saves a Python frame of the ~1 us this layer adds to a call. One array argument of
        # the latest such call's shape and dtype takes its plan from the table's memo, without
        # hashing a key.)
        try:
            if not kwargs:
                serve = self._serve
                if serve is not None:   # a small size a host program admits (_server_front)
                    out = serve(args)
                    if out is not _MISS:
                        self.calls += 1
                        self._last = self._reusing[0]
                        return out
                if len(args) == 1 and args[0].__class__ is np.ndarray:
                    a = args[0]
                    memo = self._fast.memo
                    plan = memo[2] if a.shape == memo[0] and a.dtype is memo[1] else self._one_array_plan(a)
                else:
                    if len(args) == 1:
                        plan = self._fast_hit((_fast_leaf_key(args[0]),))
                    elif len(args) == 2:
                        plan = self._fast_hit((_fast_leaf_key(args[0]), _fast_leaf_key(args[1])))
                    else:
                        plan = self._fast_hit(tuple([_fast_leaf_key(a) for a in args]))
                    if plan.__class__ is _ByValue:
                        plan = self._fast.get(plan.key(args))
                if plan is not None and (STAGING[0] == 0 or thread_state.dynamic[-1] is EVAL_TRACE):   # not tracing
                    entry, exe, runtime, explicit, single, exact = plan
                    self.calls += 1
                    self._last = entry
                    inputs = args if runtime is None else [args[i] for i in runtime]
                    if exact == 3:   # the host tier's program: its function, called directly
                        self.stats.host_runs += 1
                        try:
                            outs = exe.fast(*inputs)
                        except RuntimeError:   # its context is in use (HostProgram)
                            outs = exe.run(*inputs)
                    else:
                        if exact:
                            self.stats.exact_runs += 1
                            if exact == 2:   # an exact executable made for a recurring size
                                self.stats.exact_calls_served += 1
                        outs = exe.call_exact(inputs)
                    if single is not None:
                        return outs[single]
                    return pytree.tree_unflatten(entry.traced.out_tree, [outs[i] for i in explicit])
                if plan is None and self._reusing is not None:
                    out = self._at_other_sizes(args)
                    if out is not _MISS:
                        return out
            return self._call(*args, **kwargs)
        except Exception as e:
            # a Python int beyond its dtype, met by a direct plan: the first call's error
            raise user_error((not kwargs and self._out_of_range(args)) or e)

    def _at_other_sizes(self, args):
        """A call at new sizes of the trace whose host program serves other sizes as it is
        (``_reusing``), beyond the lengths its programs admit at once (``__call__`` asked
        its segment's server, ``_serve``): its result where the reach's full checks admit these
        larger lengths, the estimates still choosing the host
        (``Segment.call_at_other_sizes``), registered in the dispatch table; else ``_MISS``.
        What the call's own path would check, these check (arrays of the trace's dtypes and
        ranks; a length that changes is dynamic in the trace), and nothing is being traced."""
        entry, layout, single, tail = self._reusing
        if STAGING[0] != 0 or len(args) != len(layout.ranks):
            return _MISS
        for a, dtype, rank in zip(args, layout.dtypes, layout.ranks):
            if a.__class__ is not np.ndarray or a.dtype != dtype or a.ndim != rank:
                return _MISS
        sig = entry.traced.signature
        try:
            dims = implicit_values(sig, args) if sig.dim_names else []
        except ValueError:   # (the call's own path reports it)
            return _MISS
        served = entry.program.single.call_at_other_sizes(dims + list(args))
        if served is None:
            return _MISS
        outs, host = served
        self.calls += 1
        self._last = entry
        # the plan ``_register_fast`` makes of it (what it checks, checked above)
        self._fast.put(tuple([(a.shape, a.dtype) for a in args]), (entry, host) + tail)
        if single is not None:
            return outs[single]
        return pytree.tree_unflatten(entry.traced.out_tree, [outs[i] for i in entry.explicit])

    def _one_array_plan(self, a):
        """The dispatch table's plan for one array argument, or None; a plan found at the
        arguments' types alone is kept as the table's memo."""
        fast = self._fast
        generation = fast.generation
        plan = self._fast_hit(((a.shape, a.dtype),))
        if plan.__class__ is _ByValue:
            return fast.get(plan.key((a,)))
        if plan is not None:
            fast.memo = (a.shape, a.dtype, plan)
            if fast.generation != generation:   # the table changed meanwhile
                fast.memo = NO_MEMO
        return plan

    def _out_of_range(self, args):
        """The error naming the first integer argument that does not fit its traced dtype
        (as a first call reports it: ``coerce_leaf``), when a direct plan serves ``args``;
        else None. Only on the error path: a plan's runtime meets such an int as numpy's
        OverflowError or a dtype mismatch."""
        try:
            plan = self._fast_plan(args)
        except Exception:
            return None
        if plan is None:
            return None
        entry = plan[0]
        where = entry.traced.signature.leaf_where
        for i, (x, dtype) in enumerate(zip(args, entry.dtypes)):
            if type(x) is int:
                try:
                    coerce_leaf(x, dtype, where[i])
                except ValueError as err:
                    return err
        return None

    def _fast_plan(self, args):
        """The dispatch table's plan for these positional arguments, or None (as looked up by
        ``__call__``): the table is keyed by ``_fast_leaf_key``, then, where the executable
        bakes in integer arguments, by their values."""
        plan = self._fast.get(tuple([_fast_leaf_key(a) for a in args]))
        if plan.__class__ is _ByValue:
            plan = self._fast.get(plan.key(args))
        return plan

    def _call(self, *args, **kwargs):
        if is_tracing() or _has_tracer(args, kwargs):
            # nested qjit, or called by a transformation (grad(qjit(f))): the function's
            # jaxpr, traced once per abstract signature, inlined into the caller's trace
            return self._call_inlined(args, kwargs)
        self._check_call(args, kwargs)
        # numpy arrays only, passed by position: each is one leaf, and none is a list to turn
        # into an array or a static argument (the same key as the pytree's, spelled shorter)
        plain = not kwargs and not self.static_argnums and all(a.__class__ is np.ndarray for a in args)
        if plain:
            static_kwargs = ()
            leaves = list(args)
            key = (_ARRAYS_ONLY, tuple([(a.shape, a.dtype) for a in args]))
        else:
            args, kwargs, static_kwargs = self._bind_kwargs(args, kwargs)
            args = self._lists_as_arrays(args)
            # One rule for what an argument is, on every path: a pytree whose leaves are arrays
            # or scalars. Lists and tuples are pytrees, except lists of numbers that
            # abstracted_axes names, which became arrays above.
            leaves, tree = pytree.tree_flatten((self._dynamic_args(args), kwargs))
            try:
                key = (tree, tuple([_leaf_key(x) for x in leaves]),
                       tuple(_hashable(args[i], i) for i in self.static_argnums if i < len(args)),
                       static_kwargs)
                hash(key)
            except TypeError:
                key = None
        self.calls += 1
        entry = self._by_concrete.get(key) if key is not None else None
        if entry is None:
            try:
                entry = self._lookup(args, kwargs, static_kwargs)
            except _ClosesOverTracers as e:
                return self._run_closure(e.traced, leaves)
            if key is not None:
                self._by_concrete.put(key, entry)
        self._last = entry
        placed = (None if plain and self.in_shardings is None else
                  leaf_shardings(self.in_shardings, self._dynamic_args(args), leaves))
        if placed is not None or self.out_shardings is not None:
            out = run_sharded(entry, leaves, placed, self.out_shardings, self._run_leaves)
            if out is not None:
                return out
        out, exe = self._run(entry, leaves)
        if exe is not None and not kwargs:
            self._register_fast(entry, exe, args)
        return out

    def _call_inlined(self, args, kwargs):
        """A call with values of enclosing interpreters (``grad(qjit(f))``, ``vmap``, a
        ``qjit`` function called inside another trace): evaluate the function's jaxpr under
        those interpreters, so that the transformation applies to it. The jaxpr is traced once
        per abstract signature (``_abstract_key``: the same rule as a top-level call; dims the
        caller leaves symbolic are dynamic axes of the trace) and cached, so repeated calls do
        not run the Python function again.

        Not cached: a trace that closes over values of an enclosing transformation (they
        differ per call). A function that needs concrete values of its arguments (Python
        control flow on them, numpy indexing by a batched index) runs directly under the
        caller's interpreters, as a plain Python function would."""
        from .core.interpret import eval_jaxpr
        from .core.trace import ConcretizationError
        from .transforms.members import MembersNeeded
        self._check_call(args, kwargs)
        args, kwargs, static_kwargs = self._bind_kwargs(args, kwargs)
        args = self._lists_as_arrays(args)
        key, leaves, avals, names = self._signature_leaves(args, kwargs, static_kwargs)
        try:
            hash(key)
        except TypeError:
            key = None
        traced = self._inlined.get(key) if key is not None else None
        if traced is None:
            fun = (functools.partial(self.fun, **{n: v for n, (_, v) in static_kwargs})
                   if static_kwargs else self.fun)
            try:
                traced = trace_function(fun, args, kwargs, self.static_argnums, avals=avals,
                                        given_leaf_specs=names)
            except (ConcretizationError, MembersNeeded):
                return self.fun(*args, **kwargs)
            self.inlined_traces += 1
            if key is not None and not any(isinstance(c, Tracer) for c in traced.closed_jaxpr.consts):
                self._inlined.put(key, traced)
        sig, closed = traced.signature, traced.closed_jaxpr
        dims = [_common_dim(sig, occ, avals) for occ in sig.dim_sources]
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *dims, *leaves)
        explicit = [o for o, e in zip(outs, closed.jaxpr.out_explicit) if e]
        return pytree.tree_unflatten(traced.out_tree, explicit)

    def _check_call(self, args, kwargs):
        """Arguments that do not fit the function's parameters: a TypeError naming it."""
        if self.signature is None or (not kwargs and len(args) in self._bound_arities):
            return
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{getattr(self.fun, '__name__', 'the function')}(): {e}") from None
        if not kwargs:   # (positional arguments bind or not by their number alone)
            self._bound_arities.add(len(args))

    def _register_fast(self, entry: _Entry, exe, args):
        """Remember a direct plan for these positional arguments: no static arguments or
        pytrees, and every argument already of the traced dtype. Either the trace is one
        executable (with no runtime implicit dims): the integer arguments it bakes in are keyed
        by value (a ``_ByValue`` node), runtime integers only by type. Or ``exe`` is a
        ``ProgramCall``: the program, which keys its own executables."""
        nimp = len(entry.traced.signature.dim_names)
        if self.static_argnums or len(args) != len(entry.dtypes):
            return
        keys = tuple([_fast_leaf_key(a) for a in args])
        if any(k is _NO_FAST for k in keys):
            return
        for a, dt in zip(args, entry.dtypes):
            t = type(a)
            if (_PYTHON_DTYPES[t] if t in _PYTHON_DTYPES else a.dtype) != dt:
                return
        tree = entry.traced.out_tree
        single = entry.explicit[0] if tree.kind == "leaf" and len(entry.explicit) == 1 else None
        if isinstance(exe, ProgramCall):
            self._fast.put(keys, (entry, exe, None, entry.explicit, single, False))
            return
        seg = entry.program.single
        if any(p < nimp for p in seg.runtime):
            return
        runtime = [p - nimp for p in seg.runtime]
        for j, i in enumerate(runtime):   # what exe.call_exact relies on
            a, aval = args[i], exe.in_avals[j]
            if type(a) is np.ndarray:
                if a.shape != aval.shape or a.dtype != aval.dtype:
                    return
            elif aval.shape != () or type(a) not in exe.scalar_types(j):
                return
        runtime = None if runtime == list(range(len(args))) else runtime
        plan = (entry, exe, runtime, entry.explicit, single,
                3 if exe.__class__ is HostProgram else 2 if exe in seg.promoted else True)
        by_value = tuple(p - nimp for p in seg.baked if p >= nimp)
        if not by_value:
            self._fast.put(keys, plan)
            sig = entry.traced.signature
            if plan[5] == 3 and runtime is None and exe.reach is not None and self._aot_leaves is None and \
                    self.in_shardings is None and self.out_shardings is None and all(sig.dim_sources) and \
                    (self._reusing is None or self._reusing[0] is not entry):   # (a trace's layout is one)
                layout = seg.admit_layout(host_reach.Layout(entry.dtypes, [np.ndim(a) for a in args],
                                                            [occurrences[0] for occurrences in sig.dim_sources]),
                                          self._server_front(entry, single))
                self._reusing = (entry, layout, single, plan[2:])
                self._serve = entry.server
            return
        node = self._fast.get(keys)
        if node.__class__ is not _ByValue or node.positions != by_value:
            node = _ByValue(keys, by_value)
            self._fast.put(keys, node)
        self._fast.put(node.key(args), plan)

    def _server_front(self, entry: _Entry, single: Optional[int]) -> Front:
        """What the server of ``entry``'s segment does for this function around a call it
        serves (``Segment.admit_layout``): nothing while a trace is being recorded; the one
        result, or the tree of the explicit ones (``__call__`` counts the call and notes its
        trace). Each server made goes to the entry, and is the one ``__call__`` asks while
        the entry is ``_reusing``'s; the front holds both weakly (the segment keeps it)."""
        result = f"outs[{single}]" if single is not None else \
            "unflatten(tree, [" + "".join(f"outs[{i}], " for i in entry.explicit) + "])"
        owner, held = weakref.ref(self), weakref.ref(entry)

        def install(server):
            e, q = held(), owner()
            if e is not None:
                e.server = server
                if q is not None and q._reusing is not None and q._reusing[0] is e:
                    q._serve = server
        return Front("STAGING[0]", result, _MISS, dict(STAGING=STAGING, unflatten=pytree.tree_unflatten,
                                                       tree=entry.traced.out_tree), install)

    def _lists_as_arrays(self, args):
        """Lists of numbers named by abstracted_axes are arrays (see named_lists_as_arrays)."""
        nargs = len(self._dynamic_args(args))
        return named_lists_as_arrays(args, self.static_argnums, self._effective_axes(nargs))

    def _bind_kwargs(self, args, kwargs):
        """Move keyword arguments that name the next positional parameters into ``args``, as
        far as no parameter in between is left to its default; the rest stay keywords, and
        those named in ``static_argnames`` are static. A default that is not passed is never
        an argument: the function receives it from Python, baked into the trace like a
        static argument (as in ``jax.jit``). Returns ``(args, kwargs, static_kwargs)``, the
        last a sorted tuple of ``(name, (type, value))``."""
        if not kwargs or self.signature is None:
            return args, kwargs, ()
        args, kwargs = list(args), dict(kwargs)
        for p in list(self.signature.parameters.values())[len(args):]:
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.name not in kwargs:
                break
            args.append(kwargs.pop(p.name))
        static = tuple(sorted((n, _hashable(kwargs.pop(n), n)) for n in self.static_argnames
                              if n in kwargs))
        return tuple(args), kwargs, static

    def _lookup(self, args, kwargs, static_kwargs=()) -> _Entry:
        args = self._check_aot(args)
        shape_class = self._shape_class(args) if not kwargs and not static_kwargs else None
        akey = self._akey_of_class.get(shape_class) if shape_class is not None else None
        if akey is None:
            akey = self._abstract_key(args, kwargs, static_kwargs)
            if shape_class is not None:
                self._akey_of_class.put(shape_class, akey)
        return self._by_abstract.get_or_fill(
            akey, lambda: self._trace(args, kwargs, akey, static_kwargs))

    def _shape_class(self, args):
        """For positional numpy arrays (no static argument, no annotation): their dtypes and
        shapes with the abstracted axes erased, which determine their abstract signature
        (``_abstract_key``) without flattening them again at each new size; else None."""
        if self.static_argnums or self._aot_leaves is not None:
            return None
        for a in args:
            if a.__class__ is not np.ndarray:
                return None
        ranks = tuple([a.ndim for a in args])
        erased = self._erased_axes.get(ranks)
        if erased is None:
            erased = self._erased_axes.get_or_fill(ranks, lambda: self._axes_erased(args))
        if erased is _NO_CLASS:
            return None
        return tuple([(a.dtype, _erase(a.shape, gone) if gone else a.shape) for a, gone in zip(args, erased)])

    def _axes_erased(self, args):
        """Per argument (positional numpy arrays), the axes abstracted_axes names, as
        ``_signature_leaves`` reads them; ``_NO_CLASS`` when it would refuse them (it then
        says why)."""
        try:
            specs = _per_arg_specs(self._effective_axes(len(args)), len(args))
            return tuple(frozenset(_axis_names(_spec_leaves(spec, a, 1)[0], a.ndim, ""))
                         for spec, a in zip(specs, args))
        except Exception:
            return _NO_CLASS

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

    def _run_leaves(self, entry: _Entry, leaves):
        return entry_arguments(entry, leaves)

    def _run(self, entry: _Entry, leaves):
        return run_entry(entry, leaves)

    def _run_closure(self, traced: TracedFunction, leaves):
        """Run a trace whose constvars include tracers of an enclosing transformation: the
        jaxpr is evaluated by the caller's interpreters with those tracers bound, so that
        the transformation (jvp, vmap, grad) applies to the whole program."""
        from .core.interpret import eval_jaxpr
        sig, closed = traced.signature, traced.closed_jaxpr
        dtypes = [a.dtype for a, e in closed.jaxpr.in_type if e]
        leaves = [self._coerce(x, dt, i, sig) for i, (x, dt) in enumerate(zip(leaves, dtypes))]
        dims = implicit_values(sig, leaves) if sig.dim_names else []
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *dims, *leaves)
        explicit = [o for o, e in zip(outs, closed.jaxpr.out_explicit) if e]
        return pytree.tree_unflatten(traced.out_tree, explicit)

    def _coerce(self, x, dtype, i, sig):
        return coerce_leaf(x, dtype, sig.leaf_where[i])


def _common_dim(sig, occurrences, avals):
    """The value of one dynamic axis of an inlined trace: the size (an int, or a dim of the
    enclosing trace) its occurrences share; a ValueError when concrete sizes differ."""
    (li, ax), rest = occurrences[0], occurrences[1:]
    d = avals[li].shape[ax]
    for lj, bx in rest:
        e = avals[lj].shape[bx]
        if not same_dim(d, e) and isinstance(d, (int, np.integer)) and isinstance(e, (int, np.integer)):
            raise ValueError(f"abstracted axis has size {d} in axis {ax} of {sig.leaf_where[li]} but "
                             f"size {e} in axis {bx} of {sig.leaf_where[lj]}")
    return d


def _is_array_annotation(ann) -> bool:
    """An annotation object describing an array by ``shape`` and ``dtype`` (dynjax's or JAX's
    ``ShapedArray``, JAX's ``ShapeDtypeStruct``), not a class such as ``np.ndarray``."""
    return not isinstance(ann, type) and isinstance(getattr(ann, "shape", None), (tuple, list)) \
        and getattr(ann, "dtype", None) is not None


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


def _donated(fun, signature, donate_argnums, donate_argnames, static_argnums):
    """JAX's donated argument positions, validated: ints (or parameter names) of positional
    parameters that are not static. Donation lets the compiled function reuse the callers'
    buffers; dynjax's results never alias arguments (numpy inputs are copied into XLA), so
    donating changes nothing but is accepted, as JAX's CPU backend accepts it."""
    name = getattr(fun, "__name__", "the function")
    nums = []
    for i in ([donate_argnums] if isinstance(donate_argnums, (int, np.integer)) else donate_argnums or ()):
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"donate_argnums must be ints, got {i!r}")
        nums.append(int(i))
    names = [donate_argnames] if isinstance(donate_argnames, str) else list(donate_argnames or ())
    params = list(signature.parameters.values()) if signature is not None else None
    positional = None if params is None or any(p.kind == p.VAR_POSITIONAL for p in params) else \
        [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"donate_argnames must be strings, got {n!r}")
        if params is not None and n not in [p.name for p in params]:
            raise ValueError(f"donate_argnames names {n!r}, which is not a parameter of {name}")
        if positional is not None and n in positional:
            nums.append(positional.index(n))
    out = []
    for i in nums:
        if positional is not None:
            if not -len(positional) <= i < len(positional):
                raise ValueError(f"donate_argnums {i} is out of range for {name}, which takes "
                                 f"{len(positional)} positional arguments")
            i %= len(positional)
        if i in static_argnums:
            raise ValueError(f"argument {i} of {name} is both static and donated")
        out.append(i)
    return tuple(sorted(set(out)))


def qjit(fun: Optional[Callable] = None, *, static_argnums=None, static_argnames=None,
         abstracted_axes=None, cache_size: Optional[int] = None, autograph: bool = False,
         donate_argnums=None, donate_argnames=None, in_shardings=None, out_shardings=None):
    """Compile ``fun`` with dynamic shapes; usable as ``@qjit`` or ``@qjit(...)``.

    ``donate_argnums`` / ``donate_argnames`` (JAX's meaning: the caller gives those arguments
    up, the function may reuse their memory) are validated and recorded as
    ``f.donate_argnums``; results never alias arguments in dynjax, so the caller's arrays stay
    intact and usable.

    ``cache_size`` bounds each of the function's in-memory caches (traces, executables per
    program segment, the dispatch table), least recently used first out; the default is
    ``$DYNJAX_CACHE_SIZE`` or 64. ``autograph=True`` first rewrites the function's Python
    ``if`` / ``for`` / ``while`` so that they work on traced values (``dynjax.autograph``).

    ``in_shardings`` / ``out_shardings`` (``dynjax.sharding``; pytree prefixes of the
    positional arguments and of the results) run the program partitioned over the devices
    of their mesh; so do arguments put with ``device_put(x, sharding)``. Dynamic dimensions
    split over devices need not divide evenly (``execution/sharded_runs.py``)."""
    @api_boundary
    def wrap(f):
        if autograph:
            from .autograph import convert
            f = convert(f)
        return QJIT(f, static_argnums, static_argnames, abstracted_axes, cache_size,
                    donate_argnums, donate_argnames, in_shardings, out_shardings)
    return wrap if fun is None else wrap(fun)
