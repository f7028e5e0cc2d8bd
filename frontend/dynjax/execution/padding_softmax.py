"""Padded attention without masks: a softmax over the free axis of a matrix product.

Padding is garbage, so a padded program masks it before every reduction over a padded axis
(``padding._reduction``). In ``softmax(q @ k.T / c) @ v`` over the keys' axis that is three
masks of the whole score matrix: before the row max, before the row sum, before the product
with ``v``. XLA:CPU materializes each (a pass over the matrix) and they split the fusion of
the product with the reductions: the padded program took 2.2-2.6x the exact one and XLA 1.5-2x
as long to compile it. Here the padding of the scores is made to hold what the softmax needs:

* **The product** ``s = x . y`` whose free axis ``a`` of ``y`` is padded gets one more
  contraction term: ``y``'s padding along ``a`` is set to 0 (a pass over ``y``, not over the
  scores; none when ``y`` is an input, which the host pads with zeros) and ``[x, 1] . [y, b]``
  is computed, with ``b = -0.0`` on the logical positions of
  ``a`` and ``-inf`` on the padding. A logical score is unchanged (``t + -0.0 == t`` for every
  ``t``); a padding score is ``x_i . 0 - inf = -inf`` when row ``x_i`` is finite, and NaN when
  it holds an infinity or a NaN -- and then every logical score of that row is an infinity or
  a NaN (a sum with an infinite or NaN term is never finite).
* **Scalings** ``s / c`` and ``s * c`` by a positive finite literal, conversions to other
  float types and transpositions keep both facts (``nn.dot_product_attention`` transposes,
  scales and converts its scores).
* **The softmax** (``nn.softmax``'s ``custom_jvp`` function, recognized by its body) then runs
  without masks: in a row whose scores are finite or ``-inf`` beside finite ones, the max and
  the sum see ``-inf`` and ``exp(-inf - m) = 0`` in the padding, which change neither, and its
  padding is exactly 0; a row whose logical scores are all infinities or NaNs is all NaN in the
  exact program (an ``inf`` makes ``inf - inf``, all ``-inf`` makes ``-inf + inf``, a NaN
  reaches the sum), and is all NaN here.
* **The product of the softmax with another array** over ``a`` masks only the other operand
  (its padding set to 0, unless it is an input): a padding weight is 0, or its row's logical weights are all NaN and
  so is the row's result in both programs. An empty axis (``n == 0``), where the exact result
  is 0 and the weights here are NaN, is selected back to 0 on the result.

``plan(jaxpr)`` finds these equations and returns the rules that replace their padding rules
(``padding.interpret`` asks it once per program); anything that does not match exactly keeps
the masks. ``tests/test_padded_attention.py`` checks the rows of every kind above against
numpy, and ``lit_tests/mlir/padded_attention.py`` the module.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

import numpy as np

from .. import lax
from ..core.avals import is_float_dtype
from ..core.jaxpr import Jaxpr, Literal, Var
from ..lax import primitives as P
from .padding import _i64, interpret, lax_shape
from .padding_control_flow import subcontext


def plan(jaxpr: Jaxpr) -> Dict[int, Callable]:
    """The padding rules that replace the generic ones for this program's attention-shaped
    equations, by ``id`` of the equation (empty when there are none)."""
    calls = [e for e in jaxpr.eqns if e.primitive.name == "custom_jvp_call"]
    if not calls:
        return {}
    producer = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    found = []   # (softmax call, its shift and norm equations, axis, product, key side, key axis)
    for call in calls:
        body = _softmax_body(call.params["call_jaxpr"])
        if body is None:
            continue
        x_index, axis, shift, norm = body
        product, product_axis = _scaled_product(call.invars[x_index], axis, producer)
        if product is None:
            continue
        side, free_dim = _key_side(product, product_axis)
        if side is None or isinstance(product.invars[side].aval.shape[free_dim], int):
            continue   # a batch axis, or a static axis: no padding
        found.append((call, shift, norm, axis, product, side, free_dim))
    rules: Dict[int, Callable] = {}
    for call, shift, norm, axis, product, side, free_dim in found:
        if any(p is product and (s, d) != (side, free_dim) for _, _, _, _, p, s, d in found):
            continue   # softmaxes over different axes of one product: the masks stay
        rules[id(product)] = _augmented_product(side, free_dim)
        rules[id(call)] = _unmasked_softmax(shift, norm)
        weights = {id(call.outvars[0]): call.outvars[0]}   # and its conversions to other floats
        for e in jaxpr.eqns:
            if e.primitive is P.convert_element_type_p and id(e.invars[0]) in weights and \
                    is_float_dtype(e.outvars[0].aval.dtype):
                weights[id(e.outvars[0])] = e.outvars[0]
            elif e.primitive is P.dot_general_p:
                for w in weights.values():
                    if _contracts_only(e, w, axis):
                        rules[id(e)] = _weighted_product(e.invars.index(w))
    return rules


# --- recognizing the softmax ----------------------------------------------------------------
def _softmax_body(body: Jaxpr):
    """``(index of the array input, axis, shift equation, norm equation)`` when ``body``
    computes ``t / sum(t, a)`` with ``t = exp(x - max(x, a))`` (the max and the sum broadcast
    back along ``a`` alone) and nothing else; else None."""
    arrays = [k for k, v in enumerate(body.invars) if v.aval.shape != ()]
    if len(arrays) != 1 or len(body.outvars) != 1 or not isinstance(body.outvars[0], Var):
        return None
    x = body.invars[arrays[0]]
    if not is_float_dtype(x.aval.dtype):
        return None
    producer = {id(v): e for e in body.eqns for v in e.outvars}
    used = set()

    def made(v, name):
        e = producer.get(id(v)) if isinstance(v, Var) else None
        if e is None or e.primitive.name != name:
            return None
        used.add(id(e))
        return e

    div = made(body.outvars[0], "div")
    exp = div and made(div.invars[0], "exp")
    sub = exp and made(exp.invars[0], "sub")
    if sub is None or sub.invars[0] is not x:
        return None
    shift = _broadcast_back(sub.invars[1], x, x, producer, used, "reduce_max")
    norm = _broadcast_back(div.invars[1], exp.outvars[0], x, producer, used, "reduce_sum")
    if shift is None or norm is None or shift.params["axes"] != norm.params["axes"]:
        return None
    if len(used) != len(body.eqns):   # an equation of another kind
        return None
    return arrays[0], shift.params["axes"][0], shift, norm


def _broadcast_back(v, operand, x, producer, used, reduction):
    """The ``reduction`` equation over one axis ``a`` of ``operand`` (of ``x``'s shape) whose
    result ``v`` is, broadcast back along ``a`` (through reshapes and squeezes of unit axes, broadcasts,
    ``max(., -inf)`` and identity ``custom_jvp`` calls: ``stop_gradient``); else None.

    Each value on the way carries, per axis, the axis of ``x`` it runs along (None: a unit
    or broadcast axis), so that a transposition or a mixing reshape is refused."""
    chain = []
    while True:
        e = producer.get(id(v)) if isinstance(v, Var) else None
        if e is None:
            return None
        chain.append(e)
        used.add(id(e))
        name = e.primitive.name
        if name == reduction:
            break
        if name in ("broadcast_in_dim", "reshape", "squeeze"):
            v = e.invars[0]
        elif name == "max" and _is_literal(e.invars[1], -np.inf):
            v = e.invars[0]
        elif name == "custom_jvp_call" and _identity_call(e) is not None:
            v = e.invars[_identity_call(e)]
        else:
            return None
    red = chain.pop()
    if red.invars[0] is not operand or len(red.params["axes"]) != 1:
        return None
    (axis,) = red.params["axes"]
    rank = len(x.aval.shape)
    dims: List[Optional[int]] = [d for d in range(rank) if d != axis]   # per axis of the result
    for e in reversed(chain):
        src, out = e.invars[0].aval.shape, e.outvars[0].aval.shape
        name = e.primitive.name
        if name == "squeeze":
            drop = {d % len(src) for d in e.params["dimensions"]}
            if any(not _unit(src[d]) for d in drop):
                return None
            dims = [m for d, m in enumerate(dims) if d not in drop]
        elif name == "reshape":
            if e.params.get("dimensions") is not None:
                return None
            keep_in = [(d, m) for d, m in zip(src, dims) if not _unit(d)]
            keep_out = [d for d in out if not _unit(d)]
            if len(keep_in) != len(keep_out) or any(not _same(a, b) for (a, _), b in zip(keep_in, keep_out)):
                return None
            it = iter(m for _, m in keep_in)
            dims = [None if _unit(d) else next(it) for d in out]
        elif name == "broadcast_in_dim":
            bd = list(e.params["broadcast_dimensions"])
            if bd != sorted(bd):
                return None
            new: List[Optional[int]] = [None] * len(out)
            for i, j in enumerate(bd):
                if _same(src[i], out[j]):
                    new[j] = dims[i]
                elif not _unit(src[i]):
                    return None
            dims = new
        # max(., -inf) and an identity call keep the axes
    if len(dims) != rank or dims[axis] is not None or any(
            dims[d] != d and not (dims[d] is None and _unit(x.aval.shape[d])) for d in range(rank) if d != axis):
        return None   # (an axis of length 1 holds one row whichever way it was made)
    if any(not _same(a, b) for a, b in zip(chain[0].outvars[0].aval.shape if chain else (), x.aval.shape)):
        return None
    return red


def _identity_call(e) -> Optional[int]:
    """The operand a ``custom_jvp`` call returns as it is (``stop_gradient``), or None."""
    body = e.params.get("call_jaxpr")
    if not isinstance(body, Jaxpr) or body.eqns or len(body.outvars) != 1:
        return None
    out = body.outvars[0]
    for k, v in enumerate(body.invars):
        if v is out and v.aval.shape != ():
            return k
    return None


def _unit(d) -> bool:
    return isinstance(d, int) and d == 1


def _same(a, b) -> bool:
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)


def _is_literal(a, value) -> bool:
    return isinstance(a, Literal) and np.shape(a.val) == () and np.asarray(a.val) == value


def _positive_literal(a) -> bool:
    if not isinstance(a, Literal) or np.shape(a.val) != ():
        return False
    v = np.asarray(a.val)
    return v.dtype.kind in "fiu" and bool(np.isfinite(v)) and v > 0


# --- the product before it, and the product after it ----------------------------------------
def _scaled_product(v, axis, producer):
    """The ``dot_general`` whose result ``v`` is, scaled by positive finite literals, converted
    to other float types and transposed (a scaling keeps an infinity and a NaN, a conversion
    too), and the axis of its result that ``v``'s ``axis`` is; (None, None) otherwise."""
    while True:
        e = producer.get(id(v)) if isinstance(v, Var) else None
        if e is None:
            return None, None
        if e.primitive is P.dot_general_p:
            dtype = e.outvars[0].aval.dtype
            pref = e.params.get("preferred_element_type")
            (lc, rc), _ = e.params["dimension_numbers"]
            if len(lc) != 1 or len(rc) != 1 or not is_float_dtype(dtype) or \
                    (pref is not None and np.dtype(pref) != np.dtype(dtype)) or \
                    e.invars[0].aval.dtype != e.invars[1].aval.dtype:
                return None, None
            return e, axis
        if e.primitive is P.div_p and _positive_literal(e.invars[1]):
            v = e.invars[0]
        elif e.primitive is P.mul_p and _positive_literal(e.invars[1]):
            v = e.invars[0]
        elif e.primitive is P.mul_p and _positive_literal(e.invars[0]):
            v = e.invars[1]
        elif e.primitive is P.convert_element_type_p and is_float_dtype(e.invars[0].aval.dtype) \
                and is_float_dtype(e.outvars[0].aval.dtype):
            v = e.invars[0]
        elif e.primitive is P.transpose_p:
            axis = e.params["permutation"][axis]
            v = e.invars[0]
        else:
            return None, None


def _key_side(e, axis):
    """Which operand of the product ``e`` the result's ``axis`` comes from, and its axis
    there; (None, None) for a batch axis."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    x, y = e.invars[0].aval, e.invars[1].aval
    lfree = [d for d in range(len(x.shape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(y.shape)) if d not in rc and d not in rb]
    k = axis - len(lb)
    if k < 0:
        return None, None
    if k < len(lfree):
        return 0, lfree[k]
    return 1, rfree[k - len(lfree)]


def _contracts_only(e, weights, axis) -> bool:
    """Whether the product ``e`` reads ``weights`` once, contracting exactly its ``axis``."""
    if [a is weights for a in e.invars].count(True) != 1:
        return False
    side = e.invars.index(weights)
    (lc, rc), _ = e.params["dimension_numbers"]
    return tuple((lc, rc)[side]) == (axis,)


# --- the rules ------------------------------------------------------------------------------
def _augmented_product(side: int, free_dim: int):
    """``[x, 1] . [y, b]``: the key operand's padding along ``free_dim`` set to 0 and one
    contraction term more, ``-0.0`` on its logical positions and ``-inf`` on its padding."""
    def rule(ctx, eqn, *ops):
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        ops = [ctx.fill(ops[0], eqn.invars[0], lc, 0), ctx.fill(ops[1], eqn.invars[1], rc, 0)]   # as padding._dot_general
        key, other = ops[side], ops[1 - side]
        key_aval = eqn.invars[side].aval
        key = ctx.fill(key, eqn.invars[side], (free_dim,), 0)
        dtype = np.dtype(key_aval.dtype)
        key_shape = list(lax_shape(key))
        length = key_shape[free_dim]
        valid = ctx.valid((length,), 0, ctx.size(key_aval.shape[free_dim]))
        bias = lax.select(valid, lax.broadcast_in_dim(np.asarray(-0.0, dtype), (length,), ()),
                          lax.broadcast_in_dim(np.asarray(-np.inf, dtype), (length,), ()))
        key_c = (lc, rc)[side][0]
        other_c = (lc, rc)[1 - side][0]
        bias_shape = list(key_shape)
        bias_shape[key_c] = 1
        bias = lax.broadcast_in_dim(bias, tuple(bias_shape), (free_dim,))
        ones_shape = list(lax_shape(other))
        ones_shape[other_c] = 1
        ones = lax.broadcast_in_dim(np.asarray(1.0, dtype), tuple(ones_shape), ())
        key = lax.concatenate([key, bias], key_c)
        other = lax.concatenate([other, ones], other_c)
        pair = [other, key] if side == 1 else [key, other]
        return lax.dot_general(pair[0], pair[1], eqn.params["dimension_numbers"],
                               eqn.params.get("preferred_element_type"))
    return rule


def _unmasked_softmax(shift, norm):
    """The softmax body padded with its two reductions (``shift``, ``norm``) left unmasked."""
    def rule(ctx, eqn, *ops):
        body = eqn.params["call_jaxpr"]
        sub = subcontext(ctx, eqn, body, [(k, k) for k in range(len(body.invars))])
        sub.unmasked = {id(shift), id(norm)}
        return interpret(sub, body, [], list(ops))
    return rule


def _weighted_product(side: int):
    """``w . v`` over the softmax's axis: ``v``'s padding set to 0, ``w``'s left (0, or its row
    is all NaN); an empty axis gives 0, as the exact program."""
    def rule(ctx, eqn, *ops):
        (lc, rc), _ = eqn.params["dimension_numbers"]
        avals = [v.aval for v in eqn.invars]
        ops = list(ops)
        other = 1 - side
        ops[other] = ctx.fill(ops[other], eqn.invars[other], (lc, rc)[other], 0)
        out = eqn.primitive.bind(*ops, **eqn.params)
        d = avals[side].shape[(lc, rc)[side][0]]
        if isinstance(d, int):
            return out
        shape = tuple(lax_shape(out))
        dtype = np.dtype(eqn.outvars[0].aval.dtype)
        empty = lax.broadcast_in_dim(lax.eq(_i64(ctx.size(d)), np.int64(0)), shape, ())
        return lax.select(empty, lax.broadcast_in_dim(np.asarray(0, dtype), shape, ()), out)
    return rule
