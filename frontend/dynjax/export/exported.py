"""``Exported``: a traced program that runs without its Python source, and ``export``.

``export(f)(*specs)`` traces ``f`` (a ``qjit`` function or a plain one) for argument specs,
lowers away the calls whose Python rules only transformations need
(``lowering_away.py``), refuses calls back into Python, and keeps what a run needs: the
closed jaxpr, how argument leaves map to its inputs (the abstracted axes), the pytree
structures, and the dynamic StableHLO module for reading. ``serialize`` writes that as
bytes (``serialization.py``); ``deserialize`` reads it back in any process.

``Exported.call`` runs through the very objects ``qjit`` builds after tracing (a
``qjit._Entry``: ``Program``, segments, host steps, size tiers) and ``qjit.run_entry``, so an
exported program is specialized, compiled, padded and cached exactly as the ``qjit``
function would be; the only extra work is checking the arguments against the exported types,
since an exported program cannot be traced again for other ranks or dtypes.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..core import pytree
from ..core.avals import DBIdx, make_aval
from ..core.errors import api_boundary
from ..core.jaxpr import ClosedJaxpr, Var
from ..core.trace import Tracer
from ..execution.program import Stats
from ..execution.summary import CacheInfo, execution_counters
from ..execution.calls import describe_input_fn, run_entry
from ..qjit import QJIT, _Entry
from ..tracing import (InputSignature, TracedFunction, _axis_names, _per_arg_specs, _spec_leaves, leaf_aval,
                       normalize_static_argnums, trace_function)
from .lowering_away import find_host_call, holds_inlined_call, host_call_error, inline_calls
from .shapes import SymbolicDim, arg_leaf_specs


class Exported:
    """A serializable program with dynamic shapes (``jax.export.Exported``'s counterpart).

    ``fun_name``; ``platforms`` (``("cpu",)``); ``in_tree`` / ``out_tree`` (the structure of ``(args, kwargs)`` and of the
    result); ``in_avals`` / ``out_avals`` (one per flat leaf; dynamic dims print by name, as
    in ``f64[n,3]``); ``mlir_module()``; ``serialize()``; ``call(*args, **kwargs)``; ``cache_info()``."""

    def __init__(self, fun_name: str, closed_jaxpr: ClosedJaxpr, signature: InputSignature, in_tree, out_tree,
                 mlir_text: Optional[str]):
        self.fun_name = fun_name
        self.platforms = ("cpu",)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._closed_jaxpr = closed_jaxpr
        self._signature = signature
        self._mlir_text = mlir_text
        self._traced = TracedFunction(closed_jaxpr, out_tree, signature, in_tree, ())
        self._entry: Optional[_Entry] = None
        self._lock = threading.Lock()
        self.stats = Stats(function=fun_name)
        positional, keywords = in_tree.children
        #: the number of arguments when every argument is one array and none is a keyword
        self._flat_arity = len(positional.children) if (
            not keywords.children and all(c.kind == "leaf" for c in positional.children)) else None
        self.calls = 0
        self.in_avals = _named_in_avals(closed_jaxpr, signature)
        self.out_avals = _named_out_avals(closed_jaxpr, signature)

    # --- what it is ---------------------------------------------------------------------------
    @property
    def jaxpr(self) -> ClosedJaxpr:
        """The program (implicit dimension inputs first, as ``qjit``'s ``f.jaxpr``)."""
        return self._closed_jaxpr

    def mlir_module(self) -> str:
        """The StableHLO module of the whole program, with ``?`` dims and the implicit
        dimension inputs as leading ``tensor<i64>`` arguments (what ``f.mlir`` prints)."""
        if self._mlir_text is None:
            raise ValueError(f"{self.fun_name}: this program has no single StableHLO module (its lowering "
                             "failed at export); it still runs, segment by segment")
        return self._mlir_text

    def serialize(self) -> bytes:
        """The program as versioned, integrity-checked bytes (``doc/export.md``)."""
        from .serialization import serialize
        return serialize(self)

    def __repr__(self):
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"Exported({self.fun_name}: ({ins}) -> ({outs}))"

    # --- running ------------------------------------------------------------------------------
    def call(self, *args, **kwargs):
        """Run the program on concrete arguments of the exported structure, ranks and dtypes
        (a dynamic dim takes any size; sizes sharing a name must agree)."""
        try:
            return self._call(args, kwargs)
        except Exception as e:
            from ..core.errors import user_error
            raise user_error(e)

    def _call(self, args, kwargs):
        if self._flat_arity == len(args) and not kwargs and not any(
                isinstance(a, (tuple, list, dict)) or a is None for a in args):
            leaves = list(args)   # positional array arguments: their own leaves
        else:
            leaves, tree = pytree.tree_flatten((tuple(args), dict(kwargs)))
            if tree != self.in_tree:
                raise TypeError(f"{self.fun_name} was exported for arguments of structure {self.in_tree}, "
                                f"got {tree}")
        if any(isinstance(x, Tracer) for x in leaves):
            raise TypeError(f"{self.fun_name}: an exported program runs on concrete arrays; it cannot be "
                            "called inside a trace or transformation")
        for i, x in enumerate(leaves):
            _check_leaf(x, self._signature.leaf_where[i], self.in_avals[i])
        self.calls += 1
        out, _ = run_entry(self._get_entry(), leaves)
        return out

    def cache_info(self):
        """``qjit``'s ``cache_info()`` for this program: calls, lowerings, compilations, and
        which tier (exact, padded, eager) served its runs."""
        return CacheInfo({"calls": self.calls, **execution_counters(self.stats)})

    def _get_entry(self) -> _Entry:
        with self._lock:
            if self._entry is None:
                self._entry = _Entry(self._traced, self.stats, describe_input_fn(self._traced))
            return self._entry


def _check_leaf(x, where: str, want):
    """An argument leaf against its exported type ``want``: the rank (TypeError), the static
    sizes (ValueError), the dtype (TypeError unless it casts safely; a Python scalar takes
    the dtype of its kind, as in ``qjit``). Dynamic sizes are checked when the program reads
    them (``qjit.entry_arguments``)."""
    got = leaf_aval(x, where)
    if got.ndim != want.ndim:
        raise TypeError(f"{where} has rank {got.ndim} (shape {got.shape}), but the exported program takes "
                        f"rank {want.ndim} ({want.str_short()})")
    for ax, (n, d) in enumerate(zip(got.shape, want.shape)):
        if isinstance(d, int) and n != d:
            raise ValueError(f"{where} has shape {got.shape}, but the exported program takes "
                             f"{want.str_short()}: axis {ax} must have size {d}")
    if got.dtype != want.dtype and not np.can_cast(got.dtype, want.dtype, "safe") \
            and not (got.weak_type and want.dtype.kind in _WEAK_TARGETS[got.dtype.kind]):
        raise TypeError(f"{where} has dtype {got.dtype}, but the exported program takes {want.str_short()}, "
                        f"and {got.dtype} does not cast safely to {want.dtype}")


#: the dtype kinds a Python scalar of each kind may take (an int is any number, a float a
#: float or complex number)
_WEAK_TARGETS = {"b": "b", "i": "iufc", "u": "iufc", "f": "fc", "c": "c"}


def _dim_label(name, k) -> str:
    return name if isinstance(name, str) and not name.startswith("__") else f"_{k}"


def _named_in_avals(closed: ClosedJaxpr, sig: InputSignature) -> Tuple[Any, ...]:
    labels = [SymbolicDim(_dim_label(n, k)) for k, n in enumerate(sig.dim_names)]
    out = []
    for aval, explicit in closed.jaxpr.in_type:
        if explicit:
            out.append(make_aval(tuple(labels[d.val] if isinstance(d, DBIdx) else d for d in aval.shape),
                                 aval.dtype, aval.weak_type))
    return tuple(out)


def _named_out_avals(closed: ClosedJaxpr, sig: InputSignature) -> Tuple[Any, ...]:
    """The explicit results' types, a dim named by the input dim it is, else by its size
    expression over the inputs (``n - 1``), else ``_out{k}`` (a size known only at run time)."""
    jaxpr = closed.jaxpr
    labels = {id(v): SymbolicDim(_dim_label(n, k)) for k, (v, n) in enumerate(zip(jaxpr.invars, sig.dim_names))}
    out = []
    for k, (v, explicit) in enumerate(zip(jaxpr.outvars, jaxpr.out_explicit)):
        if not explicit:
            continue
        shape = []
        for d in v.aval.shape:
            if isinstance(d, int) or not isinstance(d, Var):
                shape.append(int(getattr(d, "val", d)))
            elif id(d) in labels:
                shape.append(labels[id(d)])
            else:
                shape.append(_Expression(str(d.sym) if d.sym is not None else "?"))
        out.append(make_aval(tuple(shape), v.aval.dtype, v.aval.weak_type))
    return tuple(out)


class _Expression:
    """A result dim printed by its size expression (``n - 1``)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    __str__ = __repr__


# ----------------------------------------------------------------------------------------------
# export
# ----------------------------------------------------------------------------------------------
def export(fun: Callable, *, platforms=None, disabled_checks=()) -> Callable[..., Exported]:
    """``export(f)(*arg_specs, **kwarg_specs)``: trace ``f`` (a ``qjit`` function or a plain
    function) for the given argument specs and return its ``Exported`` program.

    A spec is a ``ShapeDtypeStruct`` (``None`` sizes are fresh dynamic dims, ``symbolic_shape``
    names are shared dynamic dims), a concrete array or scalar (its static type), or a pytree
    of them (tuples, lists, dicts). A ``qjit`` function's ``abstracted_axes`` apply too; its
    static arguments are given as values and baked in, and are not arguments of ``call``.

    ``platforms`` (JAX's keyword) may only name ``"cpu"``, the client dynjax compiles for;
    ``disabled_checks`` must be empty: ``call`` checks every argument's shape and dtype before
    it runs, and none of those checks can be turned off."""
    if not callable(fun):
        raise TypeError(f"export: expected a function, got {type(fun).__name__}")
    if platforms is not None:
        names = [platforms] if isinstance(platforms, str) else list(platforms)
        if not names or any(not isinstance(p, str) or p.lower() != "cpu" for p in names):
            raise ValueError(f"export: platforms={platforms!r}; dynjax exports for the CPU client only "
                             "(platforms=None or ('cpu',))")
    if tuple(disabled_checks):
        raise ValueError(f"export: disabled_checks={disabled_checks!r}; dynjax's exported programs check "
                         "their arguments' shapes and dtypes at every call, and these checks cannot be disabled")
    jitted = fun if isinstance(fun, QJIT) else None
    name = getattr(fun, "__name__", "fun")

    @api_boundary
    def do_export(*args, **kwargs) -> Exported:
        return _export(jitted, fun, name, args, kwargs)
    do_export.__name__ = f"export({name})"
    return do_export


def _export(jitted: Optional[QJIT], fun, name: str, args, kwargs) -> Exported:
    if jitted is not None:
        jitted._check_call(args, kwargs)
        args, kwargs, static_kwargs = jitted._bind_kwargs(args, kwargs)
        statics = jitted.static_argnums
        pyfun = jitted.fun
        if static_kwargs:
            pyfun = functools.partial(pyfun, **{n: v for n, (_, v) in static_kwargs})
        dyn = [a for i, a in enumerate(args) if i not in statics]
        axes = _per_arg_specs(jitted._effective_axes(len(dyn)), len(dyn))
    else:
        statics, pyfun = (), fun
        dyn = list(args)
        axes = [None] * len(dyn)
    statics = normalize_static_argnums(statics, len(args))
    leaves, where, base = [], [], []
    for k, i in enumerate(i for i in range(len(args)) if i not in statics):
        arg_leaves, _ = pytree.tree_flatten(args[i])
        for j, (leaf, spec) in enumerate(zip(arg_leaves, _spec_leaves(axes[k], args[i], len(arg_leaves)))):
            w = f"argument {i}" + (f" (leaf {j})" if len(arg_leaves) > 1 else "")
            ndim = len(leaf.shape) if hasattr(leaf, "shape") else np.ndim(leaf)
            base.append(_axis_names(spec, ndim, w))
            leaves.append(leaf)
            where.append(w)
    kw_leaves, _ = pytree.tree_flatten(kwargs)
    for leaf in kw_leaves:
        leaves.append(leaf)
        where.append("keyword argument")
        base.append({})
    trace_leaves, specs = arg_leaf_specs(leaves, base, where)
    # the arguments again, with the spec leaves the tracer takes
    it = iter(trace_leaves)
    new_args = list(args)
    for i in range(len(args)):
        if i not in statics:
            _, tree = pytree.tree_flatten(args[i])
            new_args[i] = pytree.tree_unflatten(tree, [next(it) for _ in range(tree.num_leaves)])
    _, kw_tree = pytree.tree_flatten(kwargs)
    new_kwargs = pytree.tree_unflatten(kw_tree, list(it))
    traced = trace_function(pyfun, new_args, new_kwargs, statics, given_leaf_specs=specs)
    closed = traced.closed_jaxpr
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise ValueError(f"export of {name}: the function closes over values of an enclosing transformation "
                         "(jvp, vmap, grad); export it outside of any transformation")
    jaxpr = inline_calls(closed.jaxpr) if holds_inlined_call(closed.jaxpr) else closed.jaxpr
    closed = ClosedJaxpr(jaxpr, closed.consts)
    host = find_host_call(jaxpr)
    if host is not None:
        raise host_call_error(name, host)
    in_tree = pytree.tree_structure((tuple(a for i, a in enumerate(new_args) if i not in statics),
                                     new_kwargs))
    from .serialization import check_tree, encode_program
    check_tree(in_tree, f"export of {name}: the arguments")
    check_tree(traced.out_tree, f"export of {name}: the result")
    encode_program(closed, name)   # an unshippable param is an error now, not at serialize()
    signature = traced.signature
    from ..lowering import module_text
    try:
        text = module_text(closed)
    except Exception:   # a program the planner splits (host steps) may have no single module
        text = None
    return Exported(name, closed, signature, in_tree, traced.out_tree, text)

