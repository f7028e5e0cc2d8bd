"""The host tier's kernels: one rule per primitive that turns an equation, given its recorded
operands and parameters, into a direct numpy call computing what the primitive's impl rule
computes (``host_tier`` builds its programs from them).

A rule ``rule(in_values, out_values, params, known)`` returns ``(numpy callable, fresh[,
broadcasting])`` or None, where ``known`` says which operands are the same at every call
(sizes, literals, constants). The callable takes the equation's operands (all of them, size
operands included) and returns what the impl rule returns for operands of these dtypes and
shapes (and these values, for the known ones); ``fresh`` says its result is a new array (not
a view of an operand), so that a program result needs no copy, and ``broadcasting`` that it
is a numpy ufunc (see ``host_tier._lazy_views``).

**Other sizes** (``host_tier``'s reuse of a program at sizes it was not built at). A kernel
says how far it holds beyond the shapes it was chosen at, as ``reach(kernel)``: ``ANY``, it
computes from its operands whatever their shapes (numpy's ufuncs, reductions over given
axes, transposes); ``STATIC``, it bakes in recorded shapes, so it holds only where its
equation's shapes are all static, unless it carries ``kernel.anywhere``, a form that
computes those shapes from its operands (a reshape with ``-1``, a product's shapes taken
from its operands); None for an impl rule (it computes everything at each call, from the
operands it is given). ``kernel.reads``: how many leading operands it reads, where it ignores
the size operands after them (a broadcast, a reshape, a concatenation).
"""
from __future__ import annotations

import math
import threading
from typing import Callable, Dict, List

import numpy as np

from ..core.primitive import Primitive, impl_rules

#: primitive -> rule (the module docstring)
host_kernels: Dict[Primitive, Callable] = {}

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                    np.uint8, np.uint16, np.uint32, np.uint64))


def dtypes_of(values):
    return [np.asarray(v).dtype for v in values]


#: ``reach`` of a kernel that holds at any shapes, and of one that bakes in recorded shapes
ANY, STATIC = "any", "static"


def reach(kernel):
    """How far ``kernel`` holds beyond the shapes it was chosen at (the module docstring)."""
    return ANY if isinstance(kernel, np.ufunc) else getattr(kernel, "reach", None)


def _holds(kernel, how, anywhere=None, reads=None):
    """``kernel``, marked with its reach (and the form of it that holds anywhere, and how
    many leading operands it reads)."""
    kernel.reach = how
    if anywhere is not None:
        _holds(anywhere, ANY, reads=reads)
        kernel.anywhere = anywhere
    if reads is not None:
        kernel.reads = reads
    return kernel


def _ufunc(fn, dtypes):
    """A rule: ``fn`` itself when every operand has one dtype and it is one of ``dtypes``."""
    def rule(ins, outs, params, known):
        ds = dtypes_of(ins)
        if params or ds[0] not in dtypes or any(d != ds[0] for d in ds):
            return None
        if dtypes_of(outs)[0] != np.asarray(fn(*[np.zeros((), d) for d in ds])).dtype:
            return None
        return fn, True, True
    return rule


REGISTERED: List[bool] = []   # (non-empty once ``host_kernels`` is filled)
_REGISTER_LOCK = threading.Lock()


def register_kernels():
    """Fill ``host_kernels`` (once, whatever the threads: a build never sees half a table)."""
    with _REGISTER_LOCK:
        if not REGISTERED:
            _fill_kernels()
            REGISTERED.append(True)


def _fill_kernels():
    from ..lax import primitives as P
    floats, numbers = FLOATS, FLOATS + COMPLEX + INTS
    for name, fn in [("neg", np.negative), ("exp", np.exp), ("log", np.log), ("expm1", np.expm1),
                     ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("asin", np.arcsin),
                     ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh), ("cosh", np.cosh),
                     ("tanh", np.tanh), ("sqrt", np.sqrt), ("floor", np.floor), ("ceil", np.ceil),
                     ("log1p", np.log1p), ("abs", np.abs), ("is_finite", np.isfinite)]:
        host_kernels[getattr(P, name + "_p")] = _ufunc(fn, floats)
    host_kernels[P.neg_p] = _ufunc(np.negative, floats + INTS)   # (integers wrap, as the impl's)
    host_kernels[P.abs_p] = _ufunc(np.abs, floats + INTS)
    for name, fn, dtypes in [("add", np.add, numbers), ("sub", np.subtract, numbers),
                             ("mul", np.multiply, numbers), ("div", np.true_divide, floats + COMPLEX),
                             ("pow", np.power, floats), ("atan2", np.arctan2, floats),
                             ("and", np.bitwise_and, INTS + (np.dtype(bool),)),
                             ("or", np.bitwise_or, INTS + (np.dtype(bool),)),
                             ("xor", np.bitwise_xor, INTS + (np.dtype(bool),)),
                             ("eq", np.equal, numbers), ("ne", np.not_equal, numbers),
                             ("lt", np.less, floats + INTS), ("le", np.less_equal, floats + INTS),
                             ("gt", np.greater, floats + INTS), ("ge", np.greater_equal, floats + INTS)]:
        host_kernels[getattr(P, name + "_p")] = _ufunc(fn, dtypes)
    host_kernels[P.max_p] = _extremum(np.maximum, P.max_p)
    host_kernels[P.min_p] = _extremum(np.minimum, P.min_p)
    host_kernels[P.reduce_sum_p] = _reduce_sum
    host_kernels[P.reduce_max_p] = _reduce_extremum(np.maximum, P.reduce_max_p)
    host_kernels[P.reduce_min_p] = _reduce_extremum(np.minimum, P.reduce_min_p)
    host_kernels[P.convert_element_type_p] = _convert
    host_kernels[P.select_n_p] = _select_n
    host_kernels[P.broadcast_in_dim_p] = _broadcast_in_dim
    host_kernels[P.reshape_p] = _reshape
    host_kernels[P.squeeze_p] = _squeeze
    host_kernels[P.transpose_p] = _transpose
    host_kernels[P.dot_general_p] = _dot_general
    host_kernels[P.integer_pow_p] = _integer_pow
    host_kernels[P.logistic_p] = _logistic
    host_kernels[P.slice_p] = _slice
    host_kernels[P.concatenate_p] = _concatenate


def _extremum(ufunc, prim):
    """max / min: the ufunc, whose only difference from the impl is which zero it returns
    when both operands are zeros (the impl: -0.0 < +0.0, as XLA)."""
    plain = _ufunc(ufunc, INTS)

    def rule(ins, outs, params, known):
        x, y = np.asarray(ins[0]), np.asarray(ins[1])
        if x.dtype in INTS:
            return plain(ins, outs, params, known)
        if x.dtype not in FLOATS or y.dtype != x.dtype:
            return None
        impl = impl_rules[prim]
        for c, k in ((x, known[0]), (y, known[1])):
            if k and c.shape == () and c != 0:   # never two zeros
                return ufunc, True, True
        if ufunc is np.maximum and known[1] and y.shape == () and y == 0 and not np.signbit(y):
            # relu: a zero result is +0.0 whatever the sign of x's zero; adding +0.0 turns
            # -0.0 into +0.0 and leaves every other value (NaNs included) as it is
            return _holds(lambda a, b: np.add(ufunc(a, b), b), ANY), True

        def kernel(a, b):   # the impl where some result is a zero
            m = ufunc(a, b)
            return m if m.all() else impl(a, b)
        return _holds(kernel, ANY), True
    return rule


def _reduce_sum(ins, outs, params, known):
    (x,), axes = ins, tuple(params["axes"])
    if np.asarray(x).dtype not in FLOATS + COMPLEX:   # numpy widens small integers' sums
        return None
    return _holds(lambda v: np.add.reduce(v, axis=axes), ANY), True


def _reduce_extremum(ufunc, prim):
    def rule(ins, outs, params, known):
        (x,), axes = ins, tuple(params["axes"])
        x = np.asarray(x)
        if any(x.shape[a] == 0 for a in axes) or x.dtype not in FLOATS + INTS:
            return None   # an empty axis: the impl gives its identity
        if x.dtype in INTS:
            return _holds(lambda v: ufunc.reduce(v, axis=axes), ANY), True
        impl = impl_rules[prim]

        def kernel(v):   # a zero result: the impl picks the zero of the right sign
            m = ufunc.reduce(v, axis=axes)
            return m if m.all() else impl(v, axes=axes)
        # (at other sizes too: host_tier reuses a program only where no axis that changes
        # size is empty)
        return _holds(kernel, ANY), True
    return rule


def _convert(ins, outs, params, known):
    src, dst = np.asarray(ins[0]).dtype, np.dtype(params["new_dtype"])
    # float to integer saturates and truncates, complex to real keeps the real part: the impl
    if dst.kind in "iu" and src.kind == "f" or src.kind == "c" and dst.kind != "c":
        return None
    if src not in FLOATS + COMPLEX + INTS + (np.dtype(bool),) or \
            dst not in FLOATS + COMPLEX + INTS + (np.dtype(bool),):
        return None
    return _holds(lambda v: v.astype(dst), ANY), True


def _select_n(ins, outs, params, known):
    if len(ins) != 3 or np.asarray(ins[0]).dtype != np.dtype(bool):
        return None
    return _holds(lambda which, no, yes: np.where(which, yes, no), ANY), True, True


def _broadcast_in_dim(ins, outs, params, known):
    x, out = np.asarray(ins[0]), np.asarray(outs[0])
    expanded = [1] * out.ndim
    for i, d in enumerate(params["broadcast_dimensions"]):
        expanded[d] = x.shape[i]
    expanded, shape = tuple(expanded), out.shape
    # at any shapes, where the operand's axes keep their order: the operand with axes of
    # length 1 inserted (by indexing) ...
    dims = tuple(params["broadcast_dimensions"])
    inserted = tuple(slice(None) if d in dims else None for d in range(out.ndim))
    anywhere = (lambda v, *_: v[inserted]) if list(dims) == sorted(dims) else None
    # ... which is the broadcast itself where it only inserts axes of (static) length 1
    ones = all(params["shape"][d] == 1 for d in range(out.ndim) if d not in dims)
    kernel = _holds(lambda v, *_: np.broadcast_to(v.reshape(expanded), shape), STATIC,
                    anywhere if ones and expanded == shape else None, reads=1)
    # where only elementwise operations read the result, their own broadcasting does it
    kernel.lazy = _holds(lambda v, *_: v.reshape(expanded), STATIC, anywhere, reads=1)
    kernel.lazy_shape = expanded
    return kernel, False


def _reshape(ins, outs, params, known):
    if params.get("dimensions") is not None:
        return None
    shape = np.asarray(outs[0]).shape
    # at any shapes: the size left to numpy, where one size is an operand (the others static
    # and none 0, so that numpy's -1 is that size)
    sizes = params.get("new_sizes")
    anywhere = None
    if sizes is not None and sum(d is None for d in sizes) == 1 and all(d != 0 for d in sizes):
        target = tuple(-1 if d is None else d for d in sizes)
        anywhere = (lambda v, *_: v.reshape(target))
    return _holds(lambda v, *_: v.reshape(shape), STATIC, anywhere, reads=1), False


def _squeeze(ins, outs, params, known):
    shape = np.asarray(outs[0]).shape
    dims = set(d % np.ndim(ins[0]) for d in params["dimensions"])
    kept = tuple(0 if d in dims else slice(None) for d in range(np.ndim(ins[0])))
    return _holds(lambda v: v.reshape(shape), STATIC, lambda v: v[kept]), False


def _transpose(ins, outs, params, known):
    """The impl's C-ordered copy; a view where only ufuncs read it (``_lazy_views``)."""
    permutation = tuple(params["permutation"])
    kernel = _holds(lambda v: np.array(np.transpose(v, permutation), order="C"), ANY)
    return _with_view(kernel, _holds(lambda v: np.transpose(v, permutation), ANY), outs), True


def _dot_general(ins, outs, params, known):
    """The impl's transposes, reshapes and ``np.matmul``, their shapes computed once."""
    x, y = np.asarray(ins[0]), np.asarray(ins[1])
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    pref = params.get("preferred_element_type")
    if x.dtype != y.dtype or x.dtype not in FLOATS + COMPLEX + INTS or \
            (pref is not None and np.dtype(pref) != x.dtype):
        return None
    lfree = [i for i in range(x.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(y.ndim) if i not in rc and i not in rb]
    xperm, yperm = tuple(list(lb) + lfree + list(lc)), tuple(list(rb) + list(rc) + rfree)
    bshape = tuple(x.shape[i] for i in lb)
    lf, rf = tuple(x.shape[i] for i in lfree), tuple(y.shape[i] for i in rfree)
    k = int(np.prod([x.shape[i] for i in lc], dtype=np.int64))
    xshape = bshape + (int(np.prod(lf, dtype=np.int64)), k)
    yshape = bshape + (k, int(np.prod(rf, dtype=np.int64)))
    out = bshape + lf + rf
    if x.ndim == 2 and y.ndim == 2 and xperm == (0, 1) and yperm == (0, 1):
        return np.matmul, True   # a plain matrix product

    def anywhere(a, b):   # the same, its shapes taken from the operands
        bs = tuple(a.shape[i] for i in lb)
        lf, rf = tuple(a.shape[i] for i in lfree), tuple(b.shape[i] for i in rfree)
        k = math.prod(a.shape[i] for i in lc)
        return np.matmul(np.transpose(a, xperm).reshape(bs + (math.prod(lf), k)),
                         np.transpose(b, yperm).reshape(bs + (k, math.prod(rf)))).reshape(bs + lf + rf)
    return _holds(lambda a, b: np.matmul(np.transpose(a, xperm).reshape(xshape),
                                         np.transpose(b, yperm).reshape(yshape)).reshape(out),
                  STATIC, anywhere), True


def _integer_pow(ins, outs, params, known):
    """The impl's square-and-multiply (one rounding per product, ``x ** 3`` is ``x * (x * x)``),
    with ``np.multiply`` (which never warns, unlike ``*`` on numpy's integer scalars)."""
    x, y = np.asarray(ins[0]), params["y"]
    if y == 0 or x.dtype not in FLOATS + COMPLEX + INTS:
        return None
    one = np.ones((), x.dtype)

    def kernel(v):
        acc, base, n = None, v, abs(y)
        while n:
            if n & 1:
                acc = base if acc is None else np.multiply(acc, base)
            n >>= 1
            if n:
                base = np.multiply(base, base)
        return np.true_divide(one, acc) if y < 0 else acc
    return _holds(kernel, ANY), abs(y) > 1 or y < 0   # (x ** 1 is x itself)


def _logistic(ins, outs, params, known):
    """The impl's ``1 / (1 + exp(-x))`` for real floats, without its checks."""
    if np.asarray(ins[0]).dtype not in FLOATS:
        return None
    return _holds(lambda v: 1.0 / (1.0 + np.exp(-v)), ANY), True


def _slice(ins, outs, params, known):
    """The impl's copy; a view where only ufuncs read it (``_lazy_views``)."""
    x = np.asarray(ins[0])
    strides = params.get("strides") or (1,) * x.ndim
    index = tuple(slice(a, b, c) for a, b, c in zip(params["start_indices"], params["limit_indices"], strides))
    return _with_view(_holds(lambda v: np.array(v[index]), STATIC), _holds(lambda v: v[index], STATIC),
                      outs), True


def _with_view(kernel, view, outs):
    """``kernel`` (a copy laid out as the impl lays it out), carrying ``view``: the same
    values without the copy, for ``_lazy_views``. A matrix product or a reduction of a view
    may round differently (BLAS and numpy's pairwise sums follow the memory layout); an
    elementwise ufunc computes the same bits from either."""
    kernel.lazy = view
    kernel.lazy_shape = np.shape(outs[0])
    return kernel


def _concatenate(ins, outs, params, known):
    """The impl's ``np.concatenate`` of the operands (the size operands left out)."""
    n, axis = params["num_operands"], params["dimension"]
    return _holds(lambda *vs: np.concatenate(vs[:n], axis=axis), ANY, reads=n), True
