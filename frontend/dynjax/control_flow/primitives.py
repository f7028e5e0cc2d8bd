"""Control-flow primitives: for_loop, while_loop, cond, scan (impl and abstract evaluation).

Nested programs are closed jaxprs without constvars: their leading invars receive the
constant operands (``*_nconsts``). Loop bodies carry ``nimplicit`` dimension values in
front of the explicit carries; results of a primitive get their types from the nested
jaxpr's types, with references to the body's inputs mapped to the equation's operands
and references to carried dimensions mapped to the equation's own results (``OutDBIdx``).

Operand layouts (``C`` consts, ``K`` implicit carried dims, ``X`` explicit carries):

* ``for_loop``   operands ``C lower upper step i0 K X``; body ``C i K X -> K X``
* ``while_loop`` operands ``Ccond Cbody K X``; cond ``Ccond K X -> bool``; body ``Cbody K X -> K X``
* ``cond``       operands ``index C A``; every branch ``C A -> outs`` (same out_type)
* ``scan``       operands ``C length K X xs``; body ``C K X x -> K X y``; results ``K X ys``
"""
from __future__ import annotations

import numpy as np

from ..core.avals import InDBIdx, OutDBIdx, bool_, make_aval, same_dim
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Literal, Var
from ..core.primitive import Primitive, abstract_eval_rules, as_dim, impl_rules
from ..lax.base import aval as aval_of

for_loop_p = Primitive("for_loop", multiple_results=True)
while_loop_p = Primitive("while_loop", multiple_results=True)
cond_p = Primitive("cond", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)


# ----------------------------------------------------------------------------------------------
# Type helpers shared by the rules
# ----------------------------------------------------------------------------------------------

def _known_dim(x):
    if hasattr(x, "as_dim"):
        return x.as_dim()
    if isinstance(x, (int, np.integer)) or (isinstance(x, np.ndarray) and x.ndim == 0):
        return int(x)
    return x


def _dim_matches(declared, actual) -> bool:
    """Loose dim equality for carried values: the same object, or equal known ints."""
    if same_dim(declared, actual):
        return True
    d, a = _known_dim(declared), _known_dim(actual)
    return isinstance(d, int) and isinstance(a, int) and d == a


def _check_operands(name, invars, operands):
    """Operand types must match the nested jaxpr's input types (dims substituted)."""
    if len(invars) != len(operands):
        raise TypeError(f"{name}: the nested jaxpr takes {len(invars)} inputs but got {len(operands)}")
    env = {}
    for v, x in zip(invars, operands):
        a = aval_of(x)
        expected = [env.get(id(d), d) if isinstance(d, Var) else d for d in v.aval.shape]
        if v.aval.dtype != a.dtype or len(expected) != len(a.shape) or not all(
                _dim_matches(e, d) for e, d in zip(expected, a.shape)):
            raise TypeError(f"{name}: operand of type {a.str_short()} does not match the nested "
                            f"program's input type {v.aval.str_short()}")
        env[id(v)] = x


def _result_avals(name, in_vars, operands, carry_vars, out_vars):
    """Result avals for the carried block ``carry_vars`` (body invars) of a loop.

    Dims of a carried input that refer to earlier carried inputs become ``OutDBIdx``;
    dims referring to other body inputs (constants) become the matching operands.
    Also checks that the body's outputs have the carried types.
    """
    in_pos = {id(v): i for i, v in enumerate(in_vars)}
    carry_pos = {id(v): k for k, v in enumerate(carry_vars)}
    results = []
    for k, v in enumerate(carry_vars):
        shape = []
        for d in v.aval.shape:
            if isinstance(d, Var):
                if id(d) in carry_pos:
                    shape.append(OutDBIdx(carry_pos[id(d)]))
                else:
                    shape.append(as_dim(operands[in_pos[id(d)]]))
            else:
                shape.append(d)
        results.append(make_aval(tuple(shape), v.aval.dtype))
    # body outputs must reproduce the carried types
    if len(out_vars) != len(carry_vars):
        raise TypeError(f"{name}: the body returns {len(out_vars)} values for {len(carry_vars)} carried values")
    out_of = {id(v): out_vars[k] for k, v in enumerate(carry_vars)}
    for k, (v, o) in enumerate(zip(carry_vars, out_vars)):
        oa = o.aval
        if oa.dtype != v.aval.dtype or len(oa.shape) != len(v.aval.shape):
            raise TypeError(f"{name}: carried value {k} has type {v.aval.str_short()} at input but "
                            f"{oa.str_short()} at output")
        for d_in, d_out in zip(v.aval.shape, oa.shape):
            expected = out_of.get(id(d_in), d_in) if isinstance(d_in, Var) else d_in
            if not _dim_matches(expected, d_out):
                raise TypeError(f"{name}: carried value {k} changes type from {v.aval.str_short()} to "
                                f"{oa.str_short()} in the loop body")
    return results


# ----------------------------------------------------------------------------------------------
# for_loop
# ----------------------------------------------------------------------------------------------

def _for_loop_abstract(*operands, body_jaxpr, body_nconsts, nimplicit, apply_reverse_transform,
                       preserve_dimensions):
    nc = body_nconsts
    consts, (lower, upper, step, i0), carries = operands[:nc], operands[nc:nc + 4], operands[nc + 4:]
    for x in (lower, upper, step, i0):
        a = aval_of(x)
        if a.shape != () or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"for_loop: bounds and step must be integer scalars, got {a.str_short()}")
    inv = body_jaxpr.invars
    body_ops = list(consts) + [i0] + list(carries)
    _check_operands("for_loop", inv, body_ops)
    carry_vars = inv[nc + 1:]
    return _result_avals("for_loop", inv, body_ops, carry_vars, body_jaxpr.outvars)


def _for_loop_impl(*operands, body_jaxpr, body_nconsts, nimplicit, apply_reverse_transform,
                   preserve_dimensions):
    nc = body_nconsts
    consts = operands[:nc]
    lower, upper, step = (int(x) for x in operands[nc:nc + 3])
    carries = list(operands[nc + 4:])
    if step == 0:
        raise ValueError("for_loop: step must not be zero (the loop would never end)")
    i = lower
    while (i < upper) if step > 0 else (i > upper):
        carries = eval_jaxpr(body_jaxpr, [], *consts, np.int64(i), *carries)
        i += step
    return [np.asarray(c) for c in carries]


abstract_eval_rules[for_loop_p] = _for_loop_abstract
impl_rules[for_loop_p] = _for_loop_impl


# ----------------------------------------------------------------------------------------------
# while_loop
# ----------------------------------------------------------------------------------------------

def _while_abstract(*operands, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                    preserve_dimensions):
    cc, bc = cond_nconsts, body_nconsts
    cconsts, bconsts, carries = operands[:cc], operands[cc:cc + bc], operands[cc + bc:]
    _check_operands("while_loop (cond)", cond_jaxpr.invars, list(cconsts) + list(carries))
    if len(cond_jaxpr.outvars) != 1:
        raise TypeError("while_loop: the condition must return one value")
    ca = cond_jaxpr.outvars[0].aval
    if ca.shape != () or ca.dtype != bool_:
        raise TypeError(f"while_loop: the condition must return a boolean scalar, got {ca.str_short()}")
    body_ops = list(bconsts) + list(carries)
    _check_operands("while_loop", body_jaxpr.invars, body_ops)
    carry_vars = body_jaxpr.invars[bc:]
    return _result_avals("while_loop", body_jaxpr.invars, body_ops, carry_vars, body_jaxpr.outvars)


def _while_impl(*operands, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, nimplicit,
                preserve_dimensions):
    cc, bc = cond_nconsts, body_nconsts
    cconsts, bconsts, carries = operands[:cc], operands[cc:cc + bc], list(operands[cc + bc:])
    while bool(eval_jaxpr(cond_jaxpr, [], *cconsts, *carries)[0]):
        carries = eval_jaxpr(body_jaxpr, [], *bconsts, *carries)
    return [np.asarray(c) for c in carries]


abstract_eval_rules[while_loop_p] = _while_abstract
impl_rules[while_loop_p] = _while_impl


# ----------------------------------------------------------------------------------------------
# cond
# ----------------------------------------------------------------------------------------------

def _cond_abstract(index, *operands, branches):
    ia = aval_of(index)
    if ia.shape != () or not np.issubdtype(ia.dtype, np.integer):
        raise TypeError(f"cond: the branch index must be an integer scalar, got {ia.str_short()}")
    for b in branches:
        _check_operands("cond", b.invars, operands)
    out_type = branches[0].out_type
    for j, b in enumerate(branches[1:], 1):
        other = b.out_type
        if len(other) != len(out_type) or any(
                x.dtype != y.dtype or len(x.shape) != len(y.shape)
                or not all(_dim_matches(p, q) for p, q in zip(x.shape, y.shape))
                for (x, _), (y, _) in zip(out_type, other)):
            raise TypeError(f"cond: branch {j} has output type {[a.str_short() for a, _ in other]} but "
                            f"branch 0 has {[a.str_short() for a, _ in out_type]}")
    results = []
    for a, _ in out_type:
        shape = tuple(as_dim(operands[d.val]) if isinstance(d, InDBIdx) else d for d in a.shape)
        results.append(make_aval(shape, a.dtype))
    return results


def _cond_impl(index, *operands, branches):
    i = min(max(int(index), 0), len(branches) - 1)
    return [np.asarray(x) for x in eval_jaxpr(branches[i], [], *operands)]


abstract_eval_rules[cond_p] = _cond_abstract
impl_rules[cond_p] = _cond_impl


# ----------------------------------------------------------------------------------------------
# scan
# ----------------------------------------------------------------------------------------------

def _scan_abstract(*operands, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    nc = num_consts
    consts, length, rest = operands[:nc], operands[nc], operands[nc + 1:]
    la = aval_of(length)
    if la.shape != () or not np.issubdtype(la.dtype, np.integer):
        raise TypeError("scan: the length must be an integer scalar")
    carries, xs = rest[:num_carry], rest[num_carry:]
    n = as_dim(length)
    inv = jaxpr.invars
    x_vars = inv[nc + num_carry:]
    if len(x_vars) != len(xs):
        raise TypeError(f"scan: the body takes {len(x_vars)} scanned inputs, got {len(xs)}")
    for xv, x in zip(x_vars, xs):
        xa = aval_of(x)
        if not xa.shape or not _dim_matches(xa.shape[0], n):
            raise TypeError(f"scan: scanned input of type {xa.str_short()} does not have the scan length "
                            "as its leading dimension")
    slices = [_Slice(x) for x in xs]
    body_ops = list(consts) + list(carries) + slices
    _check_operands("scan", inv, body_ops)
    carry_vars = inv[nc:nc + num_carry]
    outs = jaxpr.outvars
    res = _result_avals("scan", inv, body_ops, carry_vars, outs[:num_carry])
    in_pos = {id(v): i for i, v in enumerate(inv)}
    for y in outs[num_carry:]:
        shape = [n]
        for d in y.aval.shape:
            if isinstance(d, Var):
                if id(d) not in in_pos:
                    raise TypeError("scan: the shape of a stacked output must not change between iterations")
                if in_pos[id(d)] >= nc:
                    raise TypeError("scan: the shape of a stacked output must not depend on the carried values")
                shape.append(as_dim(consts[in_pos[id(d)]]))
            elif isinstance(d, Literal):
                shape.append(int(d.val))
            else:
                shape.append(d)
        res.append(make_aval(tuple(shape), y.aval.dtype))
    return res


class _Slice:
    """The type of one slice of a scanned operand (used only for type checking)."""
    def __init__(self, x):
        a = aval_of(x)
        self.aval = a.update(shape=a.shape[1:])


def _scan_impl(*operands, jaxpr, num_consts, num_carry, nimplicit, reverse, preserve_dimensions):
    nc = num_consts
    consts, length, rest = operands[:nc], int(operands[nc]), operands[nc + 1:]
    carries, xs = list(rest[:num_carry]), [np.asarray(x) for x in rest[num_carry:]]
    # the stacked ys are written in place (not a list stacked at the end: twice the memory)
    stacked_ys = None
    order = range(length - 1, -1, -1) if reverse else range(length)
    for t in order:
        outs = eval_jaxpr(jaxpr, [], *consts, *carries, *[x[t] for x in xs])
        carries, y = outs[:num_carry], [np.asarray(v) for v in outs[num_carry:]]
        if stacked_ys is None:
            stacked_ys = [np.empty((length,) + v.shape, v.dtype) for v in y]
        for buf, v in zip(stacked_ys, y):
            buf[t] = v
    ny = len(jaxpr.outvars) - num_carry
    stacked = []
    for j in range(ny):
        if stacked_ys is not None:
            stacked.append(stacked_ys[j])
        else:
            yv = jaxpr.outvars[num_carry + j]
            in_pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
            shape = [0] + [int(consts[in_pos[id(d)]]) if isinstance(d, Var) else int(d) for d in yv.aval.shape]
            stacked.append(np.zeros(shape, yv.aval.dtype))
    return [np.asarray(c) for c in carries] + stacked


abstract_eval_rules[scan_p] = _scan_abstract
impl_rules[scan_p] = _scan_impl


# ----------------------------------------------------------------------------------------------
# Structure shared by the planner and the lowering
# ----------------------------------------------------------------------------------------------

def passthrough_results(eqn):
    """``[(result index, operand index)]`` for loop results equal to their initial operand
    because the body passes that carried value through unchanged."""
    p = eqn.params
    if eqn.primitive is for_loop_p:
        body, first_in, first_op = p["body_jaxpr"], p["body_nconsts"] + 1, p["body_nconsts"] + 4
        ncarry = len(body.outvars)
    elif eqn.primitive is while_loop_p:
        body, first_in = p["body_jaxpr"], p["body_nconsts"]
        first_op, ncarry = p["cond_nconsts"] + p["body_nconsts"], len(p["body_jaxpr"].outvars)
    elif eqn.primitive is scan_p:
        body, first_in, first_op, ncarry = p["jaxpr"], p["num_consts"], p["num_consts"] + 1, p["num_carry"]
    else:
        return []
    return [(k, first_op + k) for k in range(ncarry) if body.outvars[k] is body.invars[first_in + k]]


def fixed_inputs(eqn):
    """For each nested jaxpr of ``eqn``: ``[(invar index, operand index)]`` for the invars whose
    value is the same operand during the whole execution -- constants, and loop-carried
    values the body passes through unchanged (e.g. dims that a resizing loop never resizes)."""
    p = eqn.params

    def loop(body, nconsts, carry_invar0, carry_operand0, ncarry):
        pairs = [(k, k) for k in range(nconsts)]
        for k in range(ncarry):
            if body.outvars[k] is body.invars[carry_invar0 + k]:
                pairs.append((carry_invar0 + k, carry_operand0 + k))
        return pairs

    if eqn.primitive is for_loop_p:
        nc, body = p["body_nconsts"], p["body_jaxpr"]
        return [loop(body, nc, nc + 1, nc + 4, len(body.outvars))]
    if eqn.primitive is while_loop_p:
        cc, bc, body = p["cond_nconsts"], p["body_nconsts"], p["body_jaxpr"]
        body_pairs = [(k, cc + k) for k in range(bc)]
        cond_pairs = [(k, k) for k in range(cc)]
        for k in range(len(body.outvars)):
            if body.outvars[k] is body.invars[bc + k]:
                body_pairs.append((bc + k, cc + bc + k))
                cond_pairs.append((cc + k, cc + bc + k))
        return [cond_pairs, body_pairs]
    if eqn.primitive is scan_p:
        nc, body = p["num_consts"], p["jaxpr"]
        return [loop(body, nc, nc, nc + 1, p["num_carry"])]
    if eqn.primitive is cond_p:
        return [[(k, k + 1) for k in range(len(eqn.invars) - 1)] for _ in p["branches"]]
    return []


# ----------------------------------------------------------------------------------------------
# Helpers for the transformations of loops and conditionals (jvp, linearize, vmap)
# ----------------------------------------------------------------------------------------------

def carry_fixpoint(body, lead_flags, carry_flags, tail_flags, nimplicit: int, flows):
    """Which carried values of a loop (and which extra outputs after them) a property
    reaches, iterated until the carried flags are stable. ``flows(jaxpr, in_flags)`` gives
    the output flags of one pass (data dependence on tangents, differing across a batch ...);
    ``body``'s invars are ``lead + carries + tail`` and its outvars ``implicit + carries + extras``."""
    flags = list(carry_flags)
    while True:
        out = flows(body, list(lead_flags) + flags + list(tail_flags))[nimplicit:]
        new = [a or b for a, b in zip(flags, out[:len(flags)])]
        if new == flags:
            return flags, out[len(flags):]
        flags = new


def dim_positions(dim_vars, avals):
    """For each variable of ``dim_vars`` (implicit carried sizes): the first (value index,
    axis) whose type uses it, so a transformation can read the size off the value."""
    where = []
    for d in dim_vars:
        for k, a in enumerate(avals):
            hit = next((ax for ax, e in enumerate(a.shape) if e is d), None)
            if hit is not None:
                where.append((k, hit))
                break
        else:
            raise NotImplementedError("a carried size that no carried array uses")
    return where
