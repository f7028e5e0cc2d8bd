"""Diagonals and Einstein summation: ``diag``, ``diagonal``, ``trace`` and ``einsum``.

These are built from existing lax primitives, so they trace, lower, differentiate and batch
like everything else, with dimensions that may be unknown until run time:

- A diagonal is a ``gather`` whose index rows ``(i + r0, i + c0)`` come from an ``iota`` of
  the diagonal's length ``max(0, min(n - r0, m - c0))`` (``r0 = max(-k, 0)``,
  ``c0 = max(k, 0)``). With dynamic ``n``/``m`` that length is a traced size whose symbolic
  expression is simplified as usual (``n`` for the main diagonal of an ``n x n`` matrix).
  ``diag`` of a vector gathers ``v[min(row, col)]`` and keeps it where ``col - row == k``.
- ``einsum`` parses the subscripts into labels (letters, plus one internal label per axis
  covered by ``...``), takes the diagonal of labels repeated within an operand, drops axes of
  static size 1 that broadcast against a larger size, sums labels that only one operand has
  and the output does not need, then contracts two operands at a time with ``dot_general``
  (shared labels that are still needed are batch dims, the others are contracted) and
  finally transposes to the requested order. No new primitive is needed.

Sizes of the same label are compared with ``same_dim``, the project's one notion of
dimension equality: static sizes that differ are a ``ValueError`` (as in numpy); dynamic
sizes not known to be equal are the usual trace-time ``TypeError``. Axes of size 1 broadcast
only when they are statically 1.
"""
from __future__ import annotations

import itertools
import numbers

import numpy as np

from .. import lax
from ..core.avals import canonical_dtype, int64, same_dim
from ..core.trace import Tracer, typeof
from ..lax.base import dim_str, dynamic_hint
from ._promote import promote
from .shape_ops import _as_array

__all__ = ["diag", "diagonal", "trace", "einsum"]


# --- size arithmetic on ints or traced sizes -----------------------------------------------------
def _static(*ds):
    return all(isinstance(d, int) for d in ds)


def _sub(a, b):
    return a - b if _static(a, b) else lax.sub(a, b)


def _add(a, b):
    return a + b if _static(a, b) else lax.add(a, b)


def _max(a, b):
    return max(a, b) if _static(a, b) else lax.max(a, b)


def _min(a, b):
    return min(a, b) if _static(a, b) else lax.min(a, b)


def _offset(k, what):
    """A static int, or a traced integer scalar as int64."""
    if isinstance(k, Tracer):
        a = k.aval
        if a.shape != () or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"{what}: the offset must be an integer scalar, got {a.str_short()}")
        lit = getattr(k, "literal", None)
        if lit is not None:
            return int(lit.val)
        return lax.convert_element_type(k, int64)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{what}: the offset must be an integer, got {type(k).__name__} {k!r}")
    return int(k)


def _axis(ax, nd, what):
    if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, numbers.Integral):
        raise TypeError(f"{what}: an axis must be an integer, got {ax!r}")
    ax = int(ax)
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(f"{what}: axis {ax} is out of bounds for an array of dimension {nd}")
    return ax % nd


# --- diagonals -------------------------------------------------------------------------------------
def _take_diagonal(x, k, a1, a2):
    """The ``k``-th diagonal of axes ``a1``, ``a2`` of ``x`` as its last axis (a gather)."""
    shape = typeof(x).shape
    n, m = shape[a1], shape[a2]
    if not isinstance(k, int):
        r0, c0 = lax.max(lax.neg(k), np.int64(0)), lax.max(k, np.int64(0))
    else:
        r0, c0 = max(-k, 0), max(k, 0)
    if isinstance(k, int) and k == 0 and same_dim(n, m):
        length = n
    else:
        length = _max(_min(_sub(n, r0), _sub(m, c0)), 0)
    rows = lax.broadcasted_iota(int64, (length, 2), 0)
    if _static(r0, c0):
        if r0 or c0:
            rows = lax.add(rows, lax.broadcast_in_dim(np.array([r0, c0], int64), (length, 2), (1,)))
    else:
        start = lax.concatenate([lax.broadcast_in_dim(lax.convert_element_type(s, int64), (1,), ())
                                 for s in (r0, c0)], 0)
        rows = lax.add(rows, lax.broadcast_in_dim(start, (length, 2), (1,)))
    out = lax.gather(x, rows, (a1, a2))           # shape (length,) + the other axes
    nd = typeof(out).ndim
    return lax.transpose(out, tuple(range(1, nd)) + (0,)) if nd > 1 else out


def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the ``offset``-th diagonal of axes ``axis1``/``axis2``, appended as the
    last axis (the other axes keep their order). Sizes and a traced ``offset`` may be dynamic."""
    a = _as_array(a)
    nd = typeof(a).ndim
    if nd < 2:
        raise ValueError(f"diagonal: the input must have at least two dimensions, got {nd}")
    a1, a2 = _axis(axis1, nd, "diagonal"), _axis(axis2, nd, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    return _take_diagonal(a, _offset(offset, "diagonal"), a1, a2)


def diag(v, k=0):
    """numpy.diag: for 1-D ``v`` the square matrix with ``v`` on its ``k``-th diagonal (size
    ``len(v) + |k|``), for 2-D ``v`` its ``k``-th diagonal."""
    v = _as_array(v)
    av = typeof(v)
    k = _offset(k, "diag")
    if av.ndim == 2:
        return _take_diagonal(v, k, 0, 1)
    if av.ndim != 1:
        raise ValueError(f"diag: the input must be 1- or 2-d, got {av.ndim} dimensions")
    n = av.shape[0]
    size = n + abs(k) if _static(n, k) else _add(n, lax.abs(k) if isinstance(k, Tracer) else abs(k))
    rows = lax.broadcasted_iota(int64, (size, size), 0)
    cols = lax.broadcasted_iota(int64, (size, size), 1)
    on = lax.eq(lax.sub(cols, rows), k if isinstance(k, Tracer) else np.int64(k))
    # on the diagonal, v's index is the row for k >= 0 and the column for k < 0: the smaller one
    picks = lax.gather(v, lax.broadcast_in_dim(lax.min(rows, cols), (size, size, 1), (0, 1)), (0,))
    zero = lax.broadcast_in_dim(np.zeros((), av.dtype), (size, size), ())
    return lax.select(on, picks, zero)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """numpy.trace: the sum along a diagonal, accumulated like ``sum`` (small integers and
    bools in int64, small unsigned integers in uint64) unless ``dtype`` is given."""
    from .reductions import sum as _sum
    d = diagonal(a, offset, axis1, axis2)
    return _sum(d, axis=-1, dtype=dtype)


# --- einsum: parsing ---------------------------------------------------------------------------------
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _from_sublists(first, rest):
    """``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` as a subscripts string."""
    args = (first,) + tuple(rest)
    ops, terms = list(args[0::2]), list(args[1::2])
    out = None
    if len(terms) < len(ops):       # odd count: the last positional is the output sublist
        out = ops.pop()

    def term(sub):
        s = []
        for x in sub:
            if x is Ellipsis:
                s.append("...")
            elif isinstance(x, numbers.Integral) and not isinstance(x, bool) and 0 <= int(x) < 52:
                x = int(x)
                s.append(chr(ord("A") + x) if x < 26 else chr(ord("a") + x - 26))
            else:
                raise ValueError(f"einsum: a subscript in a sublist must be an integer in [0, 52) "
                                 f"or Ellipsis, got {x!r}")
        return "".join(s)
    subscripts = ",".join(term(t) for t in terms)
    if out is not None:
        subscripts += "->" + term(out)
    return subscripts, ops


def _split_term(term, what):
    """The letters of one term and the position of its ellipsis (or None)."""
    if term.count(".") not in (0, 3) or (term.count(".") == 3 and "..." not in term):
        raise ValueError(f"einsum: invalid '.' in {what} '{term}': an ellipsis is written '...', "
                         "at most once per term")
    pos = term.find("...")
    letters = term.replace("...", "")
    for c in letters:
        if c not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript {c!r} in {what} '{term}': subscripts "
                             "must be letters (a-z, A-Z)")
    return letters, (None if pos < 0 else pos)


def _parse(subscripts, ranks):
    """``(input label lists, output label list)``. Labels are letters, and ints ``0..E-1`` for
    the broadcast axes covered by ``...`` (right-aligned across operands, as numpy does)."""
    s = "".join(subscripts.split())
    if s.count("->") > 1 or s.count("-") != s.count("->") or s.count(">") != s.count("->"):
        raise ValueError(f"einsum: subscripts {subscripts!r} must contain at most one '->' "
                         "(and no other '-' or '>')")
    explicit = "->" in s
    lhs, rhs = s.split("->") if explicit else (s, None)
    terms = lhs.split(",")
    if len(terms) < len(ranks):
        raise ValueError(f"einsum: more operands ({len(ranks)}) provided than the subscripts "
                         f"{subscripts!r} specify ({len(terms)})")
    if len(terms) > len(ranks):
        raise ValueError(f"einsum: fewer operands ({len(ranks)}) provided than the subscripts "
                         f"{subscripts!r} specify ({len(terms)})")
    parsed = [_split_term(t, "input subscripts") for t in terms]
    widths = []
    for i, ((letters, ell), r) in enumerate(zip(parsed, ranks)):
        if ell is None and len(letters) != r:
            raise ValueError(f"einsum: operand {i} has {r} dimensions but its subscripts "
                             f"'{terms[i]}' give {len(letters)}"
                             + (" (use '...' to broadcast the extra dimensions)" if r > len(letters) else ""))
        if ell is not None and len(letters) > r:
            raise ValueError(f"einsum: the subscripts '{terms[i]}' give more dimensions than "
                             f"operand {i} has ({r})")
        widths.append(0 if ell is None else r - len(letters))
    total = max(widths, default=0)
    inputs = []
    for (letters, ell), w in zip(parsed, widths):
        if ell is None:
            inputs.append(list(letters))
        else:
            inputs.append(list(letters[:ell]) + list(range(total - w, total)) + list(letters[ell:]))
    seen = {c for letters, _ in parsed for c in letters}
    if explicit:
        letters, ell = _split_term(rhs, "output subscripts")
        for c in letters:
            if c not in seen:
                raise ValueError(f"einsum: output subscript {c!r} does not appear in any input")
            if letters.count(c) > 1:
                raise ValueError(f"einsum: output subscript {c!r} appears more than once")
        if ell is None:
            output = list(letters)    # broadcast axes not in the output are summed
        else:
            output = list(letters[:ell]) + list(range(total)) + list(letters[ell:])
    else:
        counts = {}
        for letters, _ in parsed:
            for c in letters:
                counts[c] = counts.get(c, 0) + 1
        output = list(range(total)) + sorted(c for c, n in counts.items() if n == 1)
    return inputs, output


def _label(lb):
    return f"'{lb}'" if isinstance(lb, str) else f"'...' axis {lb}"


def _check_equal(lb, d1, where1, d2, where2):
    if same_dim(d1, d2):
        return
    if _static(d1, d2):
        raise ValueError(f"einsum: subscript {_label(lb)} has size {d1} in {where1} but size {d2} "
                         f"in {where2}; the sizes must be equal (or 1, to broadcast)")
    raise TypeError(f"einsum: subscript {_label(lb)} has size {dim_str(d1)} in {where1} but size "
                    f"{dim_str(d2)} in {where2}: " + dynamic_hint((d1,), (d2,)))


# --- einsum: evaluation ------------------------------------------------------------------------------
def _collapse_repeats(x, labels, index):
    """Take the diagonal of every label repeated within one operand."""
    labels = list(labels)
    while True:
        dup = next((lb for lb in labels if labels.count(lb) > 1), None)
        if dup is None:
            return x, labels
        p = labels.index(dup)
        q = labels.index(dup, p + 1)
        shape = typeof(x).shape
        _check_equal(dup, shape[p], f"operand {index}", shape[q], f"operand {index} (repeated)")
        x = _take_diagonal(x, 0, p, q)
        labels = [lb for i, lb in enumerate(labels) if i not in (p, q)] + [dup]


def _sum_labels(x, labels, drop):
    axes = [i for i, lb in enumerate(labels) if lb in drop]
    if not axes:
        return x, labels
    return lax.reduce_sum(x, axes), [lb for lb in labels if lb not in drop]


def _contract(a, la, b, lb, keep):
    """``a`` and ``b`` contracted with dot_general: shared labels in ``keep`` are batch dims,
    the other shared labels are summed. The result's labels: batch, then ``a``'s, then ``b``'s."""
    shared = [lbl for lbl in la if lbl in lb]
    batch = [lbl for lbl in shared if lbl in keep]
    summed = [lbl for lbl in shared if lbl not in keep]
    dims = (([la.index(lbl) for lbl in summed], [lb.index(lbl) for lbl in summed]),
            ([la.index(lbl) for lbl in batch], [lb.index(lbl) for lbl in batch]))
    out = lax.dot_general(a, b, dims)
    labels = batch + [lbl for lbl in la if lbl not in shared] + [lbl for lbl in lb if lbl not in shared]
    return out, labels


def _pair(a_entry, b_entry, keep):
    """Contract two operands, first summing the labels that only one of them has and that
    nothing later (``keep``) needs."""
    (a, la), (b, lb) = a_entry, b_entry
    a, la = _sum_labels(a, la, set(la) - set(lb) - keep)
    b, lb = _sum_labels(b, lb, set(lb) - set(la) - keep)
    return _contract(a, la, b, lb, keep)


def _greedy_pair(ops, output, sizes):
    """The pair whose intermediate is smallest (static sizes), then fewest multiplications."""
    best = None
    for i, j in itertools.combinations(range(len(ops)), 2):
        la, lb = ops[i][1], ops[j][1]
        others = set(output).union(*[set(o[1]) for k, o in enumerate(ops) if k not in (i, j)])
        result = [lbl for lbl in dict.fromkeys(la + lb) if lbl not in set(la) & set(lb) or lbl in others]
        cost = (int(np.prod([sizes[lbl] for lbl in result], dtype=np.int64)),
                int(np.prod([sizes[lbl] for lbl in set(la) | set(lb)], dtype=np.int64)))
        if best is None or cost < best[0]:
            best = (cost, (i, j))
    return best[1]


def _path_steps(optimize, nops):
    """An explicit contraction path (numpy's ``einsum_path`` format) as index tuples, or None."""
    if not isinstance(optimize, (list, tuple)):
        return None
    steps = [tuple(int(i) for i in s) for s in optimize if not isinstance(s, str)]
    count = nops
    for s in steps:
        if not s or len(set(s)) != len(s) or not all(0 <= i < count for i in s):
            raise ValueError(f"einsum: invalid contraction {s} in the path for {count} operands")
        count -= len(s) - 1
    if count != 1:
        raise ValueError("einsum: the contraction path does not reduce the operands to one")
    return steps


_STRATEGIES = frozenset({"greedy", "optimal", "auto", "dp", "branch-all", "branch-2", "branch-1"})


def einsum(subscripts, *operands, optimize="greedy", precision=None, preferred_element_type=None):
    """numpy.einsum: Einstein summation over the labelled axes of the operands.

    Supports explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``) modes, ``...`` broadcasting,
    labels repeated within an operand (diagonals), numpy's sublist form, and any number of
    operands, contracted two at a time with ``dot_general``. ``optimize``: ``False`` contracts
    left to right; ``True``/``"greedy"``/``"optimal"`` pick the pair with the smallest
    intermediate when every size is static (left to right otherwise); a list is an explicit
    path as ``numpy.einsum_path`` returns it. ``precision`` is accepted for JAX compatibility
    and ignored (products are computed in the operands' dtype); ``preferred_element_type``
    sets the dtype of the computation and the result. The result dtype is the promotion of the
    operands' dtypes."""
    del precision
    if isinstance(optimize, (list, tuple)) and optimize and isinstance(optimize[0], str) \
            and optimize[0] != "einsum_path":
        optimize = optimize[0]        # numpy's (strategy, memory_limit)
    if not isinstance(optimize, (bool, list, tuple, type(None))) and optimize not in _STRATEGIES:
        raise ValueError(f"einsum: optimize must be a bool, one of {sorted(_STRATEGIES)} or a "
                         f"contraction path, got {optimize!r}")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists(subscripts, operands)
    if not operands:
        raise ValueError("einsum: no operands given")
    ops = promote(*[_as_array(o) for o in operands])
    ops = [o if isinstance(o, (Tracer, np.ndarray)) else np.asarray(o) for o in ops]
    if preferred_element_type is not None:
        ops = [lax.convert_element_type(o, canonical_dtype(preferred_element_type)) for o in ops]
    inputs, output = _parse(subscripts, [typeof(o).ndim for o in ops])

    # repeated labels within an operand: their diagonal
    work = [_collapse_repeats(x, labels, i) for i, (x, labels) in enumerate(zip(ops, inputs))]

    # one size per label; axes of static size 1 broadcast (they are dropped from their operand)
    sizes, where = {}, {}
    for i, (x, labels) in enumerate(work):
        for ax, (lbl, d) in enumerate(zip(labels, typeof(x).shape)):
            if isinstance(d, int) and d == 1:
                continue
            if lbl in sizes:
                _check_equal(lbl, sizes[lbl], where[lbl], d, f"operand {i} (axis {ax})")
            else:
                sizes[lbl], where[lbl] = d, f"operand {i} (axis {ax})"
    big = set(sizes)
    for i, (x, labels) in enumerate(work):
        ones = [ax for ax, (lbl, d) in enumerate(zip(labels, typeof(x).shape))
                if isinstance(d, int) and d == 1 and lbl in big]
        if ones:
            work[i] = (lax.squeeze(x, ones), [lbl for ax, lbl in enumerate(labels) if ax not in ones])
        for lbl in labels:
            sizes.setdefault(lbl, 1)

    def needed(others):
        return set(output).union(*[set(labels) for _, labels in others])

    # labels only one operand has and the output does not need are summed first
    for i in range(len(work)):
        x, labels = work[i]
        work[i] = _sum_labels(x, labels, set(labels) - needed(work[:i] + work[i + 1:]))

    steps = _path_steps(optimize, len(work))
    greedy = (optimize not in (False, None) and steps is None
              and all(isinstance(d, int) for d in sizes.values()))
    while len(work) > 1:
        if steps is not None:
            # numpy's path format: contract the listed operands, append the result
            step = steps.pop(0)
            group = [work[k] for k in step]
            rest = [w for k, w in enumerate(work) if k not in step]
            x, labels = group[0]
            x, labels = _sum_labels(x, labels, set(labels) - needed(rest + group[1:]))
            for g in range(1, len(group)):
                x, labels = _pair((x, labels), group[g], needed(rest + group[g + 1:]))
            work = rest + [(x, labels)]
            continue
        i, j = _greedy_pair(work, output, sizes) if greedy else (0, 1)
        rest = [w for k, w in enumerate(work) if k not in (i, j)]
        result = _pair(work[i], work[j], needed(rest))
        work = rest + [result] if greedy else [result] + rest

    x, labels = work[0]
    x, labels = _sum_labels(x, labels, set(labels) - set(output))
    perm = [labels.index(lbl) for lbl in output]
    if perm != list(range(len(perm))):
        x = lax.transpose(x, perm)
    return x
