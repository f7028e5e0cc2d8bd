"""Binding the control-flow primitives: one function per primitive, shared by both APIs.

Each binder expands its inputs (the loop strategy in ``loops``, or branch unification
here), traces the nested programs with ``core.expansion.trace_nested``, binds the
primitive, and collapses the results (drops the implicit dimension results).
"""
from __future__ import annotations

from typing import Any, Callable, List, Sequence

import numpy as np

from ..core import pytree
from ..core.avals import bool_, int64, make_aval
from ..core.expansion import trace_nested
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.trace import Tracer, current_trace, typeof
from ..lax.api import convert_element_type
from .loops import trace_loop_body
from .primitives import cond_p, for_loop_p, scan_p, while_loop_p


def _as_int_scalar(x, what: str):
    a = typeof(x)
    if a.shape != () or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{what} must be an integer scalar, got {a.str_short()}")
    if isinstance(x, Tracer):
        return convert_element_type(x, int64) if a.dtype != int64 else x
    return np.int64(x)


def _carry_leaves(init):
    leaves, tree = pytree.tree_flatten(init)
    out = []
    for x in leaves:
        if isinstance(x, (list, tuple)):
            x = np.asarray(x)
        out.append(x)
    return out, tree


def bind_for_loop(body: Callable, lower, upper, step, init, preserve: bool):
    """``for i in range(lower, upper, step): init = body(i, init)`` as one ``for_loop``.

    ``body(i, carry)`` takes and returns the carried pytree.
    """
    lower = _as_int_scalar(lower, "for_loop lower bound")
    upper = _as_int_scalar(upper, "for_loop upper bound")
    step = _as_int_scalar(step, "for_loop step")
    if not isinstance(step, Tracer) and int(step) == 0:
        raise ValueError("for_loop: step must not be zero (the loop would never end)")
    leaves, tree = _carry_leaves(init)

    def flat_body(i, *carries):
        return body(i, pytree.tree_unflatten(tree, carries))

    def split(result):
        out_leaves, out_tree = pytree.tree_flatten(result)
        return out_leaves, out_tree, []

    lb = trace_loop_body(flat_body, [typeof(lower).strip_weak_type()], leaves, tree, [], preserve,
                         "for_loop", split)
    prog = lb.program
    outs = for_loop_p.bind(*prog.consts, lower, upper, step, lower, *lb.implicit_inits, *leaves,
                           body_jaxpr=prog.jaxpr, body_nconsts=prog.nconsts, nimplicit=lb.nimplicit,
                           apply_reverse_transform=False, preserve_dimensions=preserve)
    return pytree.tree_unflatten(tree, outs[lb.nimplicit:])


def bind_while_loop(cond_fun: Callable, body: Callable, init, preserve: bool):
    """``while cond_fun(carry): carry = body(carry)`` as one ``while_loop``."""
    leaves, tree = _carry_leaves(init)

    def flat_body(*carries):
        return body(pytree.tree_unflatten(tree, carries))

    def split(result):
        out_leaves, out_tree = pytree.tree_flatten(result)
        return out_leaves, out_tree, []

    lb = trace_loop_body(flat_body, [], leaves, tree, [], preserve, "while_loop", split)
    body_prog = lb.program

    def flat_cond(*carries):
        return cond_fun(pytree.tree_unflatten(tree, carries))

    def cond_out(result):
        leaves_, tree_ = pytree.tree_flatten(result)
        if len(leaves_) != 1:
            raise TypeError("while_loop: the condition must return a single boolean scalar")
        a = typeof(leaves_[0])
        if a.shape != () or a.dtype != bool_:
            raise TypeError(f"while_loop: the condition must return a boolean scalar, got {a.str_short()}")
        return leaves_, tree_

    # the condition sees the carried types the body settled on
    cond_prog = trace_nested(flat_cond, lb.in_type, cond_out, expand=False)
    outs = while_loop_p.bind(*cond_prog.consts, *body_prog.consts, *lb.implicit_inits, *leaves,
                             cond_jaxpr=cond_prog.jaxpr, body_jaxpr=body_prog.jaxpr,
                             cond_nconsts=cond_prog.nconsts, body_nconsts=body_prog.nconsts,
                             nimplicit=lb.nimplicit, preserve_dimensions=preserve)
    return pytree.tree_unflatten(tree, outs[lb.nimplicit:])


def bind_scan(f: Callable, init, xs, length, reverse: bool, preserve: bool = True):
    """``lax.scan``: ``carry, y = f(carry, x)`` over the leading axis of ``xs``; ys stacked."""
    leaves, tree = _carry_leaves(init)
    x_leaves, x_tree = pytree.tree_flatten(xs)
    x_leaves = [np.asarray(x) if isinstance(x, (list, tuple)) else x for x in x_leaves]
    lengths = [typeof(x).shape[0] if typeof(x).ndim else None for x in x_leaves]
    if any(n is None for n in lengths):
        raise TypeError("scan: every scanned input must have a leading axis")
    if length is None:
        if not lengths:
            raise TypeError("scan: give length= when there is nothing to scan over")
        n = lengths[0]
    else:
        from ..lax.api import canonicalize_dim
        n = canonicalize_dim(length, "scan length")
    from ..core.avals import same_dim
    for m in lengths:
        if not same_dim(m, n):
            raise TypeError("scan: the scanned inputs' leading sizes are not the same dimension "
                            "(or differ from length=)")
    slice_avals = [typeof(x).update(shape=typeof(x).shape[1:]) for x in x_leaves]
    ncarry = len(leaves)
    y_tree_box = []

    def flat_body(*args):
        carries, xs_ = args[:ncarry], args[ncarry:]
        return f(pytree.tree_unflatten(tree, carries), pytree.tree_unflatten(x_tree, xs_))

    def split(result):
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError("scan: the body must return a pair (carry, y)")
        c_leaves, c_tree = pytree.tree_flatten(result[0])
        y_leaves, y_tree = pytree.tree_flatten(result[1])
        y_tree_box[:] = [y_tree]
        return c_leaves, c_tree, y_leaves

    lb = trace_loop_body(flat_body, [], leaves, tree, slice_avals, preserve, "scan", split)
    prog = lb.program
    length_op = n if isinstance(n, Tracer) else np.int64(n)
    outs = scan_p.bind(*prog.consts, length_op, *lb.implicit_inits, *leaves, *x_leaves,
                       jaxpr=prog.jaxpr, num_consts=prog.nconsts, num_carry=lb.nimplicit + ncarry,
                       nimplicit=lb.nimplicit, reverse=bool(reverse), preserve_dimensions=preserve)
    carries = outs[lb.nimplicit:lb.nimplicit + ncarry]
    ys = outs[lb.nimplicit + ncarry:]
    return pytree.tree_unflatten(tree, carries), pytree.tree_unflatten(y_tree_box[0], ys)


# ----------------------------------------------------------------------------------------------
# cond / switch
# ----------------------------------------------------------------------------------------------

def bind_cond(index, branches: Sequence[Callable], operands: Sequence[Any]):
    """Run ``branches[index](*operands)``; all branches must return the same structure and
    dtypes. Outputs whose sizes differ between branches get a fresh dimension: an implicit
    result (``OutDBIdx`` in the output type) that each branch computes its own way."""
    op_leaves, op_tree = pytree.tree_flatten(tuple(operands))
    op_leaves = [np.asarray(x) if isinstance(x, (list, tuple)) else x for x in op_leaves]
    in_type = tuple((typeof(x), True) for x in op_leaves)

    def trace_all(hook=None):
        progs = []
        for b in branches:
            def flat(*args, b=b):
                return b(*pytree.tree_unflatten(op_tree, args))
            # a branch receives exactly the operands: an integer operand (a size, e.g. one a
            # transformation passes for a branch's captured dim) keeps its expression inside
            progs.append(trace_nested(flat, in_type, pytree.tree_flatten, expand=False, outputs_hook=hook,
                                      same_as=op_leaves))
        return progs

    progs = trace_all()
    _check_same_outputs(progs)
    fresh = _disagreeing_dims(progs)
    if fresh:
        progs = trace_all(_fresh_dims_hook(fresh))
    jaxprs, consts = _share_constants(progs)
    idx = index if isinstance(index, Tracer) else np.int64(index)
    outs = cond_p.bind(idx, *consts, *op_leaves, branches=tuple(jaxprs))
    _common_sizes(progs, fresh, outs)
    return pytree.tree_unflatten(progs[0].out_tree, outs[len(fresh):])


def _common_sizes(progs, fresh, outs):
    """A size every branch computes the same way (``n + 1`` in each) is that expression
    outside too: the cond's fresh size result is known equal to it."""
    from ..core.symbolic import Expr, decide_eq
    for j, (k, ax) in enumerate(fresh):
        syms = []
        for p in progs:
            d = p.jaxpr.outvars[len(fresh) + k].aval.shape[ax]
            syms.append(Expr.const(d) if isinstance(d, int) else getattr(d, "sym", None))
        if all(s is not None for s in syms) and all(decide_eq(syms[0], s) for s in syms[1:]):
            trace = getattr(outs[j], "_trace", None)
            if hasattr(trace, "refine_sym"):
                trace.refine_sym(outs[j], syms[0])


def _check_same_outputs(progs):
    trees = [p.out_tree for p in progs]
    for j, t in enumerate(trees[1:], 1):
        if t != trees[0]:
            raise TypeError(f"cond: branch {j} returns structure {t} but branch 0 returns {trees[0]}")
    outs0 = progs[0].jaxpr.outvars
    for j, p in enumerate(progs[1:], 1):
        for k, (a, b) in enumerate(zip(outs0, p.jaxpr.outvars)):
            if a.aval.dtype != b.aval.dtype or a.aval.ndim != b.aval.ndim:
                raise TypeError(f"cond: output {k} of branch {j} has type {b.aval.str_short()} but "
                                f"branch 0 returns {a.aval.str_short()}")


def _disagreeing_dims(progs):
    """Output (index, axis) positions whose dim is not the same in every branch."""
    def describe(p, d):
        if isinstance(d, int):
            return ("static", d)
        if isinstance(d, Literal):
            return ("static", int(d.val))
        for i, v in enumerate(p.jaxpr.invars):
            if v is d:
                return ("outer", id(p.consts[i])) if i < p.nconsts else ("arg", i - p.nconsts)
        return ("inner", id(d))

    fresh = []
    outs0 = progs[0].jaxpr.outvars
    for k in range(len(outs0)):
        for ax in range(outs0[k].aval.ndim):
            descs = [describe(p, p.jaxpr.outvars[k].aval.shape[ax]) for p in progs]
            if any(dd[0] == "inner" for dd in descs) or len(set(descs)) > 1:
                fresh.append((k, ax))
    return fresh


def _fresh_dims_hook(fresh):
    """Outputs hook emitting one implicit output per disagreeing dim; a static dim is first
    made a value (and the output reshaped to it) so that its type can refer to it."""
    from ..lax.api import reshape

    def hook(arg_tracers, leaves):
        leaves = list(leaves)
        implicit = []
        for k, ax in fresh:
            d = typeof(leaves[k]).shape[ax]
            if isinstance(d, int):
                d = current_trace().value_of_constant(d, int64)
                shape = list(typeof(leaves[k]).shape)
                shape[ax] = d
                leaves[k] = reshape(leaves[k], shape)
            implicit.append(d)
        return implicit + leaves, (False,) * len(implicit) + (True,) * len(leaves)
    return hook


def _share_constants(progs):
    """Give every branch the same leading inputs: the union of all branches' constants."""
    union: List[Any] = []
    position = {}
    for p in progs:
        for c in p.consts:
            if id(c) not in position:
                position[id(c)] = len(union)
                union.append(c)
    jaxprs = []
    for p in progs:
        jx = p.jaxpr
        own = {id(c): v for c, v in zip(p.consts, jx.invars[:p.nconsts])}
        var_of = {}
        invars = []
        for c in union:
            v = own.get(id(c))
            if v is None:  # a constant only other branches use: an unused input here
                a = typeof(c)
                v = Var(make_aval(tuple(var_of[id(d)] if isinstance(d, Tracer) else d for d in a.shape), a.dtype))
            var_of[id(c)] = v
            invars.append(v)
        jaxprs.append(Jaxpr([], invars + jx.invars[p.nconsts:], jx.eqns, jx.outvars,
                            (False,) * len(union) + tuple(jx.in_explicit[p.nconsts:]), jx.out_explicit))
    return jaxprs, union
