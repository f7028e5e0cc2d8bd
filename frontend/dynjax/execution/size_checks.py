"""Host-side checks of sizes before a program is compiled.

Once the baked integers of a segment are known, every foldable size can be computed on
the host with the numpy impl rules. ``check_sizes`` does that and rejects what XLA would
fail on obscurely (or hang on): negative sizes, zero ``for_loop`` steps, reshapes whose
element counts differ and slices larger than their axis. Errors name the argument or the
user's line. A ``shard_map`` that splits a dynamic dimension unevenly at these sizes is
checked by ``uneven_blocks.py`` (its body at each device's sizes), and reported to the
caller: only the padded program can run it.
"""
from __future__ import annotations

import os
import weakref
from typing import Dict, List, Optional

import numpy as np

from ..core.jaxpr import Jaxpr, Literal
from ..core.jaxpr import at_user_line as _at
from ..core.primitive import impl_rules
from . import int_folds
from .analysis import _FOLDABLE, dims_of, fixed_inputs, is_scalar, nested_jaxprs
from .analysis import is_int_scalar as _is_int_scalar
from .uneven_blocks import check_stacked_uses, check_uneven


class SizeError(ValueError):
    pass


#: the largest index of an int64 size: sizes are int64 from tracing to XLA
MAX_SIZE = (1 << 63) - 1


def max_array_bytes() -> int:
    """The largest array a program may create, in bytes: ``$DYNJAX_MAX_ARRAY_BYTES`` when
    set, else the machine's physical memory (an array larger than that cannot be allocated;
    without this check XLA would be asked, and fail with RESOURCE_EXHAUSTED or worse)."""
    raw = os.environ.get("DYNJAX_MAX_ARRAY_BYTES")
    if raw:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"DYNJAX_MAX_ARRAY_BYTES must be an integer number of bytes, got {raw!r}") from None
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):   # pragma: no cover - not POSIX
        return 1 << 40


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_sizes(jaxpr: Jaxpr, known: Dict[int, int], describe_input, input_pos: Dict[int, int]) -> Optional[str]:
    """Evaluate the foldable integer scalars on the host and reject negative sizes and zero
    for_loop steps before anything is compiled (XLA would fail obscurely, or hang). Returns
    None, or (a description) when a ``shard_map`` splits a dimension unevenly at these sizes:
    the program must then run padded. (Every new size of a padded program runs it: what
    each equation needs is worked out once per jaxpr, ``_plan``.)"""
    uneven_found: List[str] = []
    limit: List[int] = []   # max_array_bytes(), read once (at the first array of known size)

    def where(var, eqn=None):
        if id(var) in input_pos:
            return describe_input(input_pos[id(var)])
        if eqn is not None and eqn.source_info:
            f, line = eqn.source_info
            return f"the size computed at {f}:{line}"
        return "a size"

    def walk(jx, env):
        def value(a):
            if isinstance(a, Literal):   # only integers are sizes (a float literal may be NaN)
                kind = np.asarray(a.val).dtype.kind
                return int(a.val) if kind in "biu" else None
            return env.get(id(a))
        producer, wrapped = {}, {}

        def size(d):
            return d if isinstance(d, int) else env.get(id(d))

        def negative(d, val, eqn=None):
            if id(d) in wrapped:   # np.uint64(2**64 - 1) converted to an int64 size is -1
                return SizeError(f"{where(d, eqn)} is used as a size but is too large "
                                 f"({wrapped[id(d)]}; sizes must be below 2**63)")
            return SizeError(f"{where(d, eqn)} is used as a size but is negative ({val})")
        top = jx is jaxpr
        plan = _plan(jx)
        for d in plan.in_dims:
            if (env.get(id(d)) or 0) < 0:
                raise negative(d, env[id(d)])
        for step in plan.steps:
            eqn = step.eqn
            if step.fold is not None:
                vals = [value(a) for a in eqn.invars]
                if None not in vals:
                    out = step.fold(vals, eqn.params) if step.fold is not _NUMPY else None
                    if out is None:   # numpy's int64 arithmetic (it wraps), as the impl rules
                        out = np.asarray(impl_rules[eqn.primitive](*[np.asarray(x) for x in vals], **eqn.params))
                        out = int(out) if np.issubdtype(out.dtype, np.integer) else None
                    if out is not None:
                        env[id(eqn.outvars[0])] = out
                        producer[id(eqn.outvars[0])] = eqn
                        if step.converts and out != vals[0]:   # wrapped
                            wrapped[id(eqn.outvars[0])] = vals[0]
            for d in step.out_dims:
                val = env.get(id(d))
                if val is not None and val < 0:
                    raise negative(d, val, producer.get(id(d), eqn))
            if step.shapes:
                _check_shapes(eqn, size, top)
            uneven = check_uneven(eqn, size) if step.shard_map else None
            if uneven is not None:
                uneven_found.append(uneven.what)
                check_stacked_uses(jx, uneven.stacked, uneven.what, size)
            if top and step.arrays:   # code that certainly runs: its arrays must fit in memory
                _check_bytes(eqn, size, limit)
            if step.for_step is not None and value(eqn.invars[step.for_step]) == 0:
                raise ValueError(f"for_loop: step must not be zero, the loop would never end{_at(eqn)}")
            for sub, pairs in step.nested:
                inner = {}
                for k, j in pairs:
                    x = value(eqn.invars[j])
                    if x is not None and _is_int_scalar(sub.invars[k]):
                        inner[id(sub.invars[k])] = x
                if uneven is None:
                    walk(sub, inner)
                elif sub is eqn.params["body"]:   # (the whole-array program does not run)
                    for sizes in uneven.per_device:
                        walk(sub, {**inner, **sizes})

    try:
        walk(jaxpr, dict(known))
    finally:
        walk = None   # (a recursive closure is a reference cycle: see core/pytree.py, _no_cycle)
    return uneven_found[0] if uneven_found else None


class _Step:
    """What ``check_sizes`` does at one equation, worked out from the jaxpr alone: how its
    integer result is folded (``fold``: a function of the operands' values and the params
    that gives it, or None where numpy's arithmetic must; ``_NUMPY``: numpy's arithmetic
    alone; None: not folded), the dimension variables of its results to check, the shape
    checks, the arrays of its results, a ``shard_map``, a ``for_loop``'s step operand, its
    nested jaxprs."""
    __slots__ = ("eqn", "fold", "converts", "out_dims", "shapes", "shard_map", "arrays", "for_step", "nested")

    def __init__(self, eqn):
        from ..control_flow.primitives import for_loop_p
        from ..lax.primitives import dynamic_slice_p, reshape_p
        self.eqn = eqn
        prim = eqn.primitive
        self.fold = None
        if prim in _FOLDABLE and all(is_scalar(o) for o in eqn.outvars):
            self.fold = _fold_for(eqn)
        self.converts = prim.name == "convert_element_type"
        self.out_dims = [d for o in eqn.outvars for d in dims_of(o.aval)]
        self.shapes = prim is reshape_p or prim is dynamic_slice_p   # (``_check_shapes``)
        self.shard_map = prim.name == "shard_map"
        self.arrays = any(getattr(o.aval, "shape", ()) for o in eqn.outvars)
        self.for_step = eqn.params["body_nconsts"] + 2 if prim is for_loop_p else None
        self.nested = list(zip(nested_jaxprs(eqn), fixed_inputs(eqn))) if nested_jaxprs(eqn) else []


class _Plan:
    __slots__ = ("eqns", "count", "in_dims", "steps", "__weakref__")

    def __init__(self, jx: Jaxpr):
        self.eqns, self.count = jx.eqns, len(jx.eqns)
        self.in_dims = [d for v in jx.invars for d in dims_of(v.aval)]
        self.steps = [_Step(eqn) for eqn in jx.eqns]


_PLANS: "weakref.WeakKeyDictionary[Jaxpr, _Plan]" = weakref.WeakKeyDictionary()


def _plan(jx: Jaxpr) -> _Plan:
    """``jx``'s plan, made at its first check (kept while the jaxpr lives; made anew if its
    equations were replaced since)."""
    plan = _PLANS.get(jx)
    if plan is None or plan.eqns is not jx.eqns or plan.count != len(jx.eqns):
        plan = _PLANS[jx] = _Plan(jx)
    return plan


_NUMPY = object()   # ``_Step.fold``: the impl rule on numpy's int64 values


def _fold_for(eqn):
    """``_Step.fold`` of a foldable scalar equation: its ``int_folds`` fold in the range of
    numpy's int64 arithmetic (the values are Python ints, made int64 arrays for the impl
    rules; a conversion: its target's range), ``_NUMPY`` where there is none, None where
    the result is a bool (never a size)."""
    name = eqn.primitive.name
    if name in _BOOL_RESULTS:
        return None
    bounds = int_folds.INT64
    if name == "convert_element_type":
        bounds = int_folds.dtype_range(eqn.params["new_dtype"])
        if bounds is None or bounds == (0, 1):   # (to a float or a bool: not a size)
            return _NUMPY if bounds is None else None
    if name not in int_folds.FOLDS:
        return _NUMPY
    return lambda values, params: int_folds.fold(name, values, params, bounds)


_BOOL_RESULTS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _check_shapes(eqn, size, top: bool) -> None:
    """Shape facts only known at run time: a reshape whose element counts differ, and (in
    code that certainly runs, the top level) a slice larger than its axis. A ``ValueError``
    naming the shapes and the user's line, instead of XLA's verifier failing later."""
    from ..lax.primitives import dynamic_slice_p, reshape_p
    if eqn.primitive is reshape_p:
        src = [size(d) for d in eqn.invars[0].aval.shape]
        dst = [size(d) for d in eqn.outvars[0].aval.shape]
        if None not in src and None not in dst and int(np.prod(src)) != int(np.prod(dst)):
            note = getattr(eqn.source_info, "note", None)
            raise ValueError(f"cannot reshape an array of shape {tuple(src)} ({int(np.prod(src))} elements) "
                             f"into shape {tuple(dst)} ({int(np.prod(dst))} elements){_at(eqn)}"
                             + (f": {note}" if note else ""))
    elif eqn.primitive is dynamic_slice_p and top:
        src = [size(d) for d in eqn.invars[0].aval.shape]
        dst = [size(d) for d in eqn.outvars[0].aval.shape]
        for ax, (n, k) in enumerate(zip(src, dst)):
            if n is not None and k is not None and k > n:
                what = "an index into" if k == 1 else f"a slice of {k} elements of"
                raise ValueError(f"{what} axis {ax} of an array of shape {tuple(src)}, which has only "
                                 f"{n} elements{_at(eqn)}")


def _check_bytes(eqn, size, limit: List[int]) -> None:
    """A result array larger than ``max_array_bytes()`` (or with a size beyond int64): a
    ``MemoryError`` naming its shape, its byte count and the user's line, before XLA is
    asked to allocate it."""
    for o in eqn.outvars:
        shape = getattr(o.aval, "shape", ())
        if not shape:
            continue
        dims = [size(d) for d in shape]
        if None in dims:
            continue
        for d in dims:
            if d > MAX_SIZE:
                raise SizeError(f"an array of shape {tuple(dims)}{_at(eqn)} has a size beyond int64 "
                                f"(sizes must be below 2**63)")
        count = 1
        for d in dims:
            count *= d
        nbytes = count * np.dtype(o.aval.dtype).itemsize
        if not limit:
            limit.append(max_array_bytes())
        if nbytes > limit[0]:
            raise MemoryError(f"an array of shape {tuple(dims)} and dtype {np.dtype(o.aval.dtype).name}"
                              f"{_at(eqn)} needs {nbytes} bytes ({_gib(nbytes)}), more than the "
                              f"{limit[0]} bytes ({_gib(limit[0])}) available ("
                              + ("DYNJAX_MAX_ARRAY_BYTES" if os.environ.get("DYNJAX_MAX_ARRAY_BYTES") else
                                 "the physical memory; set DYNJAX_MAX_ARRAY_BYTES to change the limit")
                              + ")")
