"""Padded execution: one static program for a whole bucket of sizes.

XLA compiles static shapes only, so serving a new size used to mean a new compile. This
interpretation rewrites a segment's jaxpr into a program whose arrays have *bucket* shapes
(every dynamic dim padded up to a bound) and whose logical sizes are ordinary ``i64`` inputs
computed at run time. One executable then serves every size in the bucket: the host pads
the inputs, runs it, and cuts each result to its logical size.

Each value of the original jaxpr is represented by a padded array whose dynamic axes have
the static length ``bound(d)`` and whose first ``size(d)`` elements along that axis are the
logical ones; what lies beyond is unspecified (garbage). Every rule keeps that invariant:
elementwise operations need nothing, reductions first replace the padding by the
operation's identity, sorts sort it last, slices and concatenations place pieces at their
logical offsets, gathers clamp to the logical sizes and scatters drop rows that are padding.

Bounds come from interval arithmetic on the integer scalars that compute sizes: an input
size ``n`` in a bucket lies in ``[0, B]``, ``n - 1`` in ``[-1, B - 1]``, ``2 * n`` in
``[0, 2B]``, and a dim's bound is the upper end of its interval. A primitive without a rule
here, or a size whose interval is unknown, raises ``NotPaddable``: that segment then always
runs exact-size executables (``segment.Segment``).

``padding_rules`` maps a primitive to ``rule(ctx, eqn, *operands) -> result(s)`` over
padded operands; ``interval_rules`` gives the intervals of integer scalars. A consumer may
need a size padded further than its interval says (a ``shard_map`` block length ``n // t``
is bounded by ``ceil(bound(n) / t)``, the length of its longest block when ``t`` does not
divide ``n``): ``bound_hint_rules`` maps a primitive to ``rule(eqn) -> [(atom, fn(ctx))]``,
and the upper end of each such atom is raised to ``fn(ctx)`` where it is defined, before
any value takes its shape from it (raising an upper end keeps every bound valid).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import lax
from ..core.avals import ShapedArray, bool_, int64, is_float_dtype, is_integer_dtype
from ..core.cooperative import checkpoint
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ..lax import primitives as P
from .host_prologue import hoist_epilogue, hoist_prologue


class NotPaddable(Exception):
    """This jaxpr cannot run padded (a primitive without a padding rule, an unbounded size)."""


padding_rules: Dict[Any, Callable] = {}
interval_rules: Dict[Any, Callable] = {}
bound_hint_rules: Dict[Any, Callable] = {}

#: the smallest bucket: sizes 0..16 share one executable
MIN_BUCKET = 16
#: up to this size the buckets are powers of two; above it, four buckets per octave
FINE_ABOVE = 1024


def bucket(n: int) -> int:
    """The bound of the bucket holding size ``n``: the next power of two, at least MIN_BUCKET,
    up to FINE_ABOVE; above it the next multiple of an eighth of that power of two, so that
    a bucket pads by at most 25% (``bucket(1025) == 1280``, not 2048) where the work, not the
    number of executables, is what padding costs. (Finer buckets below cost more compiles
    than they save: 50 new sizes in 1..1000 took twice as long with them above 256.)"""
    n = int(n)
    if n <= MIN_BUCKET:
        return MIN_BUCKET
    power = 1 << (n - 1).bit_length()
    if power <= FINE_ABOVE:
        return power
    step = power // 8
    return -(-n // step) * step


def next_bucket(b: int) -> int:
    """The bucket after bucket ``b`` (compiled ahead for growing sizes)."""
    return bucket(b + 1)


# --- the interpretation ---------------------------------------------------------------------
class Context:
    """What a rule knows: the logical value and the interval of every integer scalar."""

    def __init__(self, clip: Optional[Dict[int, int]] = None):
        self.env: Dict[int, Any] = {}
        self.intervals: Dict[int, Tuple[Optional[int], Optional[int]]] = {}
        # upper ends known from a check made before (a capacity loop's carried sizes)
        self.clip = dict(clip or {})
        # resizing loops (see _resizing_loop): the capacities of each (by id of its
        # equation), whether no loop has stopped early so far (None: statically true), and
        # what each reports
        self.capacities: Dict[int, Sequence[int]] = {}
        self.running = None
        self.reports: List[Tuple[Any, List[Any], Tuple[int, ...], List[Any]]] = []
        # reductions (by id of the equation) whose operand's padding already holds what they
        # need (``padding_softmax``): no mask
        self.unmasked: set = set()
        # the axes along which a value's padding holds zeros (all bits clear), by id of its
        # variable: the program's array inputs (``padded_runs.PaddedRun.inputs`` pads them
        # with zeros), and what ``_zero_padding`` derives from them
        self.zero_padded: Dict[int, frozenset] = {}

    def read(self, a):
        return a.val if isinstance(a, Literal) else self.env[id(a)]

    def interval(self, a) -> Tuple[Optional[int], Optional[int]]:
        if isinstance(a, Literal):
            v = np.asarray(a.val)
            if v.shape == () and v.dtype.kind in "iub":
                return int(v), int(v)
            return None, None
        return self.intervals.get(id(a), (None, None))

    # dims of an aval: an int, or a Var whose value is in env
    def size(self, d):
        """The logical size of a dim (an int or a traced i64 scalar)."""
        return d if isinstance(d, int) else self.env[id(d)]

    def bound(self, d) -> int:
        """The static length of a dim in the padded program."""
        if isinstance(d, int):
            return d
        lo, hi = self.intervals.get(id(d), (None, None))
        if hi is None:
            raise NotPaddable(f"no bound for the size {d}")
        return max(int(hi), 0)

    def padded_shape(self, aval) -> Tuple[int, ...]:
        return tuple(self.bound(d) for d in aval.shape)

    def is_dynamic(self, d) -> bool:
        return not isinstance(d, int)

    def valid(self, shape: Sequence[int], axis: int, n) -> Any:
        """A bool mask of ``shape``: true where the index along ``axis`` is below ``n``."""
        idx = lax.broadcasted_iota(int64, tuple(shape), axis)
        return lax.lt(idx, lax.broadcast_in_dim(_i64(n), tuple(shape), ()))

    def fill(self, x, atom, axes, value):
        """``x`` (the padded value of jaxpr atom ``atom``) with the padding along ``axes`` (those
        that are dynamic) set to ``value``: as it is where that padding holds zeros already and
        ``value`` is a zero of ``x``'s dtype with every bit clear (``zero_padded``)."""
        aval = atom.aval
        dynamic = [ax for ax in axes if self.is_dynamic(aval.shape[ax])]
        if dynamic and set(dynamic) <= self.zero_padded.get(id(atom), frozenset()) and \
                not np.asarray(value, np.dtype(aval.dtype)).tobytes().strip(b"\0"):
            return x
        shape = tuple(lax_shape(x))
        mask = None
        for ax in axes:
            d = aval.shape[ax]
            if self.is_dynamic(d):
                m = self.valid(shape, ax, self.size(d))
                mask = m if mask is None else lax.bitwise_and(mask, m)
        if mask is None:
            return x
        dtype = np.dtype(aval.dtype)
        fill = lax.broadcast_in_dim(np.asarray(value, dtype), shape, ())
        return lax.select(mask, x, fill)


def lax_shape(x):
    from ..core.trace import typeof
    return typeof(x).shape


def _i64(n):
    if isinstance(n, (int, np.integer)):
        return np.int64(n)
    from ..core.trace import typeof
    return n if typeof(n).dtype == int64 else lax.convert_element_type(n, int64)


def _is_int_scalar(v) -> bool:
    return v.aval.shape == () and (is_integer_dtype(v.aval.dtype) or v.aval.dtype == bool_)


def _is_int_array(v) -> bool:
    return is_integer_dtype(v.aval.dtype) or v.aval.dtype == bool_


def interpret(ctx: Context, jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> List[Any]:
    """Run ``jaxpr`` under the padding rules (``args`` padded, int scalars logical); the
    intervals of the int scalar inputs must already be in ``ctx``."""
    for v, c in zip(jaxpr.constvars, consts):
        ctx.env[id(v)] = c
        if np.shape(c) == () and np.asarray(c).dtype.kind in "iub":
            ctx.intervals[id(v)] = (int(c), int(c))
    for v, x in zip(jaxpr.invars, args):
        ctx.env[id(v)] = x
    hints = _bound_hints(jaxpr)
    planned = padding_softmax.plan(jaxpr)   # attention-shaped equations: rules without masks
    for eqn in jaxpr.eqns:
        checkpoint()   # (background work waits here for the runs being served)
        rule = planned.get(id(eqn)) or padding_rules.get(eqn.primitive)
        if rule is None:
            raise NotPaddable(f"no padding rule for {eqn.primitive}")
        ins = [ctx.read(a) for a in eqn.invars]
        outs = rule(ctx, eqn, *ins)
        outs = outs if eqn.primitive.multiple_results else [outs]
        if ctx.zero_padded:
            _zero_padding(ctx, eqn)
        for v, x in zip(eqn.outvars, outs):
            ctx.env[id(v)] = x
            if _is_int_scalar(v) or (_is_int_array(v) and eqn.primitive in interval_rules):
                # an integer array's interval holds every element (elementwise rules only)
                irule = interval_rules.get(eqn.primitive)
                lo, hi = irule(ctx, eqn) if irule else (None, None)
                if id(v) in ctx.clip:
                    hi = ctx.clip[id(v)] if hi is None else min(hi, ctx.clip[id(v)])
                    lo = 0 if lo is None else lo
                if hi is not None and id(v) in hints:
                    hi = max([hi] + [fn(ctx) for fn in hints[id(v)]])
                ctx.intervals[id(v)] = (lo, hi)
                if lo is not None and lo == hi and v.aval.shape == ():
                    # a point: the value itself, so that the rules after it see a constant
                    # (a slice one element wide, not a select on whether it is empty)
                    ctx.env[id(v)] = np.asarray(lo, v.aval.dtype)[()]
            for d in v.aval.shape:   # every dim of a result must have a bound
                ctx.bound(d)
    return [ctx.read(a) for a in jaxpr.outvars]


def _zero_padding(ctx: Context, eqn) -> None:
    """The axes along which ``eqn``'s result has zeros in its padding, from its operand's: a
    transpose moves them, a conversion keeps them (a zero converts to a zero), a broadcast
    keeps those of the operand's axes it maps (not the axes it broadcasts along)."""
    name = eqn.primitive.name
    if name not in ("transpose", "convert_element_type", "broadcast_in_dim") or not eqn.invars:
        return
    axes = ctx.zero_padded.get(id(eqn.invars[0]))
    if not axes:
        return
    if name == "transpose":
        perm = eqn.params["permutation"]
        out = {j for j, p in enumerate(perm) if p in axes}
    elif name == "convert_element_type":
        out = set(axes)
    else:
        src, dst = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
        out = {j for i, j in enumerate(eqn.params["broadcast_dimensions"])
               if i in axes and (src[i] is dst[j] or src[i] == dst[j])}
    if out:
        ctx.zero_padded[id(eqn.outvars[0])] = frozenset(out)


def _bound_hints(jaxpr: Jaxpr) -> Dict[int, List[Callable]]:
    """The upper ends ``bound_hint_rules`` ask of the integer scalars ``jaxpr`` computes."""
    hints: Dict[int, List[Callable]] = {}
    for eqn in jaxpr.eqns:
        rule = bound_hint_rules.get(eqn.primitive)
        if rule is not None:
            for atom, fn in rule(eqn):
                if not isinstance(atom, Literal):
                    hints.setdefault(id(atom), []).append(fn)
    return hints


class PaddedProgram:
    """A segment's jaxpr as one static program for a bucket of sizes.

    ``closed`` takes, in order, every int scalar input of the segment (its logical value)
    and every array input padded to its bucket shape. It returns the padded outputs, except
    the i64 scalars, then the scalars from which the host computes the *meta* values
    (``epilogue``, see ``host_prologue``): those i64 scalars, the logical length of every
    dynamic axis of the outputs and the reports of the resizing loops.

    Per output of the jaxpr: ``out_index[k]`` is its position among the run's outputs, or
    None when it is ``meta[out_meta[k]]``; ``out_dims[k][axis]`` is the static length, or
    ``(j,)``: the length is ``meta[j]``. ``loops`` locates each resizing loop's report."""

    def __init__(self, closed: ClosedJaxpr, in_shapes, in_avals, out_index, out_meta, out_dims, out_avals,
                 loops=(), prologue=None, prologue_inputs=(), epilogue=None):
        self.closed = closed
        # the size arithmetic the host does (``host_prologue``): its results are the
        # program's trailing inputs, computed from the int scalar inputs at prologue_inputs
        self.prologue = prologue
        self.prologue_inputs = tuple(prologue_inputs)
        # the meta values, from the run's inputs and its trailing scalar outputs
        self.epilogue = epilogue
        self.in_shapes = in_shapes      # per segment input: None (a scalar) or the padded shape
        self.in_avals = in_avals
        self.out_index = out_index
        self.out_meta = out_meta
        self.out_dims = out_dims
        self.out_avals = out_avals
        self.has_meta = any(m is not None for m in out_meta) or bool(loops) or any(
            isinstance(d, tuple) for dims in out_dims for d in dims)
        self.loops: List[LoopReport] = list(loops)


def pad_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], size_bounds: Dict[int, int],
              capacities: Optional[Dict[int, Sequence[int]]] = None) -> PaddedProgram:
    """The padded program of ``jaxpr`` for int scalar inputs bounded by ``size_bounds``
    (input position -> bound B: the value lies in ``[0, B]``), its resizing loops built for
    ``capacities`` (id of the loop equation -> one capacity per carried size; see
    ``_resizing_loop``). Raises NotPaddable."""
    from ..tracing import trace_flat
    in_type, in_shapes = [], []
    ctx = Context()
    ctx.capacities = dict(capacities or {})
    for i, v in enumerate(jaxpr.invars):
        if _is_int_scalar(v):
            in_type.append((ShapedArray((), v.aval.dtype), True))
            in_shapes.append(None)
            if i in size_bounds:
                ctx.intervals[id(v)] = (0, size_bounds[i])
        else:
            shape = ctx.padded_shape(v.aval)
            in_type.append((ShapedArray(shape, v.aval.dtype, v.aval.weak_type), True))
            in_shapes.append(shape)
            ctx.zero_padded[id(v)] = frozenset(range(len(shape)))   # (PaddedRun.inputs)
    out_index: List[Optional[int]] = []
    out_meta: List[Optional[int]] = []
    out_dims: List[List[Any]] = []
    loops: List[LoopReport] = []

    def run(*args):
        outs = interpret(ctx, jaxpr, consts, args)
        data, meta = [], []

        def to_meta(x) -> int:
            meta.append(_i64(x))
            return len(meta) - 1
        for v, x in zip(jaxpr.outvars, outs):
            if v.aval.shape == () and np.dtype(v.aval.dtype) == np.int64:
                out_index.append(None)
                out_meta.append(to_meta(x))
            else:
                out_index.append(len(data))
                out_meta.append(None)
                data.append(x)
            out_dims.append([d if isinstance(d, int) else (to_meta(ctx.size(d)),) for d in v.aval.shape])
        for over, needed, caps, reached in ctx.reports:
            loops.append(LoopReport(to_meta(over), [to_meta(n) for n in needed], caps,
                                    [to_meta(n) for n in reached]))
        n_data.append(len(data))
        return data + meta, None

    n_data: List[int] = []
    closed, _ = trace_flat(run, in_type)
    closed, prologue, prologue_inputs = hoist_prologue(closed)
    closed, epilogue = hoist_epilogue(closed, n_data[0])
    return PaddedProgram(closed, in_shapes, [v.aval for v in jaxpr.invars], out_index, out_meta, out_dims,
                         [v.aval for v in jaxpr.outvars], loops, prologue, prologue_inputs, epilogue)


# --- intervals of integer scalars -----------------------------------------------------------
# An interval is (lo, hi); an end that nothing bounds is None. Each end is derived on its own
# where it can be (``min(i, n)`` has the upper end of ``n`` whatever the loop index ``i``).
def _known(*xs) -> bool:
    return all(x is not None for x in xs)


def _interval_binary(fn):
    """A rule that needs both operands' whole intervals."""
    def rule(ctx, eqn):
        (a_lo, a_hi), (b_lo, b_hi) = (ctx.interval(a) for a in eqn.invars)
        if not _known(a_lo, a_hi, b_lo, b_hi):
            return None, None
        return fn(a_lo, a_hi, b_lo, b_hi)
    return rule


def _mul_interval(a_lo, a_hi, b_lo, b_hi):
    c = [a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi]
    return min(c), max(c)


def _div_interval(a_lo, a_hi, b_lo, b_hi):
    if b_lo <= 0 <= b_hi:
        return None, None
    c = [int(np.trunc(x / y)) for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
    return min(c), max(c)


def _add_interval(ctx, eqn):
    (al, ah), (bl, bh) = (ctx.interval(a) for a in eqn.invars)
    return (al + bl if _known(al, bl) else None), (ah + bh if _known(ah, bh) else None)


def _sub_interval(ctx, eqn):
    (al, ah), (bl, bh) = (ctx.interval(a) for a in eqn.invars)
    return (al - bh if _known(al, bh) else None), (ah - bl if _known(ah, bl) else None)


def _max_interval(ctx, eqn):
    """At least the larger known lower end; at most the larger upper end if both are known."""
    (al, ah), (bl, bh) = (ctx.interval(a) for a in eqn.invars)
    lows = [x for x in (al, bl) if x is not None]
    return (max(lows) if lows else None), (max(ah, bh) if _known(ah, bh) else None)


def _min_interval(ctx, eqn):
    """At most the smaller known upper end; at least the smaller lower end if both are known."""
    (al, ah), (bl, bh) = (ctx.interval(a) for a in eqn.invars)
    highs = [x for x in (ah, bh) if x is not None]
    return (min(al, bl) if _known(al, bl) else None), (min(highs) if highs else None)


interval_rules[P.add_p] = _add_interval
interval_rules[P.sub_p] = _sub_interval
interval_rules[P.mul_p] = _interval_binary(_mul_interval)
interval_rules[P.div_p] = _interval_binary(_div_interval)
interval_rules[P.max_p] = _max_interval
interval_rules[P.min_p] = _min_interval
interval_rules[P.rem_p] = _interval_binary(
    lambda al, ah, bl, bh: (None, None) if bl <= 0 else ((0 if al >= 0 else -(bh - 1)), bh - 1))


def _neg_interval(ctx, eqn):
    lo, hi = ctx.interval(eqn.invars[0])
    return (None if hi is None else -hi), (None if lo is None else -lo)


def _same_interval(ctx, eqn):
    return ctx.interval(eqn.invars[0])


def _select_interval(ctx, eqn):
    cases = [ctx.interval(a) for a in eqn.invars[1:]]
    lows, highs = [lo for lo, _ in cases], [hi for _, hi in cases]
    return (min(lows) if _known(*lows) else None), (max(highs) if _known(*highs) else None)


def _abs_interval(ctx, eqn):
    lo, hi = ctx.interval(eqn.invars[0])
    if not _known(lo, hi):
        return (0 if lo is None or lo < 0 else lo), None
    return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def _bool_interval(ctx, eqn):
    return 0, 1


def _reduce_sum_interval(ctx, eqn):
    """A sum of integers each in ``[lo, hi]`` (e.g. a count of true elements, ``[0, 1]``):
    at most as many terms as the padded reduced axes hold."""
    lo, hi = ctx.interval(eqn.invars[0])
    if not _known(lo, hi):
        return None, None
    shape = eqn.invars[0].aval.shape
    count = 1
    for ax in eqn.params["axes"]:
        count *= ctx.bound(shape[ax])
    return min(0, lo * count), max(0, hi * count)


interval_rules[P.reduce_sum_p] = _reduce_sum_interval
interval_rules[P.neg_p] = _neg_interval
interval_rules[P.convert_element_type_p] = _same_interval
interval_rules[P.select_n_p] = _select_interval
interval_rules[P.abs_p] = _abs_interval
for _p in (P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p, P.not_p, P.is_finite_p):
    interval_rules[_p] = _bool_interval


# --- rules: operations that need nothing ----------------------------------------------------
def _same(ctx, eqn, *args):
    """The operation on the padded operands: what lies in the padding stays there."""
    return eqn.primitive.bind(*args, **eqn.params)


ELEMENTWISE_NAMES = ("neg sign floor ceil round is_finite exp log log1p expm1 tanh logistic sin cos "
                "tan asin acos atan sinh cosh sqrt rsqrt cbrt abs not real imag conj integer_pow "
                "convert_element_type add sub mul div rem pow max min atan2 complex and or xor eq "
                "ne lt le gt ge select_n shift_left shift_right").split()
for _name in ELEMENTWISE_NAMES:
    padding_rules[getattr(P, f"{_name}_p")] = _same
for _p in (P.transpose_p, P.squeeze_p):
    padding_rules[_p] = _same
from ..lax import prng as _prng  # noqa: E402
padding_rules[_prng.threefry2x32_p] = _same   # elementwise random bits
from ..lax import bits as _bits  # noqa: E402
for _p in (_bits.population_count_p, _bits.clz_p, _bits.nextafter_p, _bits.reduce_precision_p,
           _bits.bitcast_convert_type_p):
    padding_rules[_p] = _same   # elementwise (a bitcast changes only a static trailing axis)
from ..lax import special as _special  # noqa: E402
for _p in _special.UNARY + _special.BINARY:   # elementwise special functions
    padding_rules[_p] = _same
from ..lax import barrier as _barrier  # noqa: E402
padding_rules[_barrier.optimization_barrier_p] = _same   # the identity
from ..lax import sharding as _sharding_constraint  # noqa: E402
padding_rules[_sharding_constraint.sharding_constraint_p] = _same   # an annotation


def _slice(ctx, eqn, x):
    # dynamic axes are kept whole (``slice`` only cuts static ones)
    return _same(ctx, eqn, x)


padding_rules[P.slice_p] = _slice


def _pad(ctx, eqn, x, value):
    a = eqn.invars[0].aval
    for d, (lo, hi, interior) in zip(a.shape, eqn.params["padding_config"]):
        if ctx.is_dynamic(d) and (lo, hi, interior) != (0, 0, 0):
            raise NotPaddable("pad of a dynamic axis")
    return _same(ctx, eqn, x, value)


padding_rules[P.pad_p] = _pad


# --- shapes ---------------------------------------------------------------------------------
def _out_shape(ctx, eqn, k=0):
    return ctx.padded_shape(eqn.outvars[k].aval)


def _broadcast_in_dim(ctx, eqn, x, *dyn):
    return lax.broadcast_in_dim(x, _out_shape(ctx, eqn), eqn.params["broadcast_dimensions"])


def _iota(ctx, eqn, *dyn):
    return lax.broadcasted_iota(eqn.params["dtype"], _out_shape(ctx, eqn), eqn.params["dimension"])


padding_rules[P.broadcast_in_dim_p] = _broadcast_in_dim
padding_rules[P.iota_p] = _iota


def _reshape(ctx, eqn, x, *dyn):
    """Row-major reshapes keep the logical elements a prefix when every dynamic dim, before
    and after, is the leading one: ``(n, 3) -> (3n,)``, ``(n,) -> (n, 1)``; one that only
    inserts or drops axes of length 1 keeps them in place wherever the dynamic dims are:
    ``(3, n) -> (3, n, 1)``."""
    a, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if eqn.params.get("dimensions") is not None:
        x = lax.transpose(x, tuple(eqn.params["dimensions"]))
        a = a.update(shape=tuple(a.shape[i] for i in eqn.params["dimensions"]))
    if _unit_axes_only(a.shape, out.shape):   # (n, m) -> (n, m, 1) and back: the layout stays
        return lax.reshape(x, _out_shape(ctx, eqn))
    if any(ctx.is_dynamic(d) for d in a.shape[1:]) or any(ctx.is_dynamic(d) for d in out.shape[1:]):
        raise NotPaddable("reshape of a dynamic axis that is not the leading one")
    shape = _out_shape(ctx, eqn)
    total = int(np.prod(lax_shape(x), dtype=np.int64))
    rest = int(np.prod(shape[1:], dtype=np.int64))
    if not shape or rest == 0:
        if total != int(np.prod(shape, dtype=np.int64)):
            raise NotPaddable("reshape to an empty padded shape")
        return lax.reshape(x, shape)
    if total % rest:
        raise NotPaddable("reshape whose padded size does not divide")
    lead = total // rest
    y = lax.reshape(x, (lead,) + tuple(shape[1:]))
    return _resize_axis(y, 0, shape[0])


def _unit_axes_only(before, after) -> bool:
    """Whether a reshape from ``before`` to ``after`` only inserts or drops axes of length 1
    (the other axes, dynamic ones included, the same and in the same order)."""
    keep = lambda shape: [d for d in shape if not (isinstance(d, int) and d == 1)]  # noqa: E731
    x, y = keep(before), keep(after)
    return len(x) == len(y) and all(p is q or (isinstance(p, int) and isinstance(q, int) and p == q)
                                    for p, q in zip(x, y))


def _resize_axis(x, axis, length):
    """``x`` cut or extended (with zeros) to ``length`` along ``axis``."""
    shape = list(lax_shape(x))
    if shape[axis] == length:
        return x
    if shape[axis] > length:
        limit = list(shape)
        limit[axis] = length
        return lax.slice(x, (0,) * len(shape), tuple(limit))
    from ..core.trace import typeof
    zero = np.zeros((), typeof(x).dtype)
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (0, length - shape[axis], 0)
    return lax.pad(x, zero, tuple(cfg))


padding_rules[P.reshape_p] = _reshape


# --- reductions and scans -------------------------------------------------------------------
def reduction_identity(kind, dtype):
    """The value that leaves a ``kind`` reduction (sum / prod / max / min) of ``dtype`` unchanged:
    what padding (and a masked-out element) is replaced by before the reduction."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return -0.0 if dtype.kind in "fc" or is_float_dtype(dtype) else 0
    if kind == "prod":
        return 1
    big = kind == "min"
    if dtype == bool_:
        return big
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if big else info.min
    return np.inf if big else -np.inf


def _reduction(kind):
    def rule(ctx, eqn, x):
        if id(eqn) in ctx.unmasked:
            return _same(ctx, eqn, x)
        a = eqn.invars[0].aval
        axes = eqn.params["axes"]
        value = reduction_identity(kind, a.dtype)
        if kind == "sum":
            # +0.0 rather than -0.0: the lowering turns a zero sum into +0.0 anyway (numpy's;
            # ``lowering/reductions._no_negative_zero``), and zero-padded inputs need no mask
            value = np.zeros((), a.dtype)
        return _same(ctx, eqn, ctx.fill(x, eqn.invars[0], axes, value))
    return rule


padding_rules[P.reduce_sum_p] = _reduction("sum")
padding_rules[P.reduce_prod_p] = _reduction("prod")
padding_rules[P.reduce_max_p] = _reduction("max")
padding_rules[P.reduce_min_p] = _reduction("min")
def _arg_extremum(kind):
    """The first index of the extremum, the padding filled so it never wins; an axis that is
    logically empty gives what the exact program gives (the index dtype's maximum)."""
    reduce_rule = _reduction(kind)

    def rule(ctx, eqn, x):
        out = reduce_rule(ctx, eqn, x)
        (axis,) = eqn.params["axes"]
        d = eqn.invars[0].aval.shape[axis]
        if not ctx.is_dynamic(d):
            return out
        dt = np.dtype(eqn.params["index_dtype"])
        shape = tuple(lax_shape(out))
        empty = lax.broadcast_in_dim(lax.eq(_i64(ctx.size(d)), np.int64(0)), shape, ())
        return lax.select(empty, lax.broadcast_in_dim(np.asarray(np.iinfo(dt).max, dt), shape, ()), out)
    return rule


padding_rules[P.argmax_p] = _arg_extremum("max")
padding_rules[P.argmin_p] = _arg_extremum("min")


def _scan(kind):
    def rule(ctx, eqn, x):
        a = eqn.invars[0].aval
        return _same(ctx, eqn, ctx.fill(x, eqn.invars[0], (eqn.params["axis"],), reduction_identity(kind, a.dtype)))
    return rule


padding_rules[P.cumsum_p] = _scan("sum")
padding_rules[P.cumprod_p] = _scan("prod")
from ..lax import cumulative as _cumulative  # noqa: E402
padding_rules[_cumulative.cummax_p] = _scan("max")
padding_rules[_cumulative.cummin_p] = _scan("min")


def _sort(ctx, eqn, *ops):
    """Along a dynamic axis, a first key that is 1 on the padding sorts it last."""
    a = eqn.invars[0].aval
    dim, nk = eqn.params["dimension"], eqn.params["num_keys"]
    if not ctx.is_dynamic(a.shape[dim]):
        return _same(ctx, eqn, *ops)
    shape = tuple(lax_shape(ops[0]))
    pad_key = lax.convert_element_type(lax.bitwise_not(ctx.valid(shape, dim, ctx.size(a.shape[dim]))), np.int32)
    outs = P.sort_p.bind(pad_key, *ops, dimension=dim, num_keys=nk + 1)
    return list(outs[1:])


padding_rules[P.sort_p] = _sort


def _dot_general(ctx, eqn, x, y):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    x = ctx.fill(x, eqn.invars[0], lc, 0)
    y = ctx.fill(y, eqn.invars[1], rc, 0)
    return _same(ctx, eqn, x, y)


padding_rules[P.dot_general_p] = _dot_general


class LoopReport:
    """Where a padded program reports on one of its resizing loops: the output that says the
    loop stopped early (an iteration would not fit), the outputs holding the carried sizes
    that iteration needed, the capacities the loop was built for, and the outputs holding
    the carried sizes the loop ended with (``reached``: what a run of these inputs needs,
    for a loop whose sizes only grow)."""

    def __init__(self, over: int, needed: Sequence[int], capacities: Sequence[int],
                 reached: Sequence[int] = ()):
        self.over = over
        self.needed = list(needed)
        self.capacities = tuple(capacities)
        self.reached = list(reached)


# the rules of control flow and of loops whose carried sizes change, of slicing, placement,
# gather and scatter, of attention and of convolutions (imported last: they use the
# interpretation above)
from . import padding_control_flow  # noqa: E402,F401,I100
from . import padding_indexing  # noqa: E402,F401,I100
from . import padding_softmax  # noqa: E402,I100
from . import padding_convolution  # noqa: E402,F401,I100
