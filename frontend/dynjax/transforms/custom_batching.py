"""``vmap`` of ``custom_jvp`` / ``custom_vjp`` functions: the batching rules of
``custom_jvp_call``, ``custom_vjp_call`` and ``custom_lin``.

A batched call is again a call of the same primitive, so that differentiating it later
still uses the user's rule:

* its ``call_jaxpr`` is the function's jaxpr evaluated under ``vmap`` (batched operands
  carry their batch axis first; every output is batched, batch axis first);
* its ``rules`` are ``BatchedRules``: the original rules run under ``vmap`` over the same
  batch. ``apply_jvp`` is the user's jvp vectorized, ``apply_fwd`` the user's ``fwd``
  (residuals come out batched), ``apply_bwd`` the user's ``bwd`` (the cotangent of an
  argument that is the same for every member is summed over the members).

This holds in every order of composition: ``jvp(vmap(f))`` and ``grad(vmap-sum)`` call the
batched rule, ``vmap(jvp(f))`` runs the rule itself under the vmap, and a batched call
recorded in a loop body or a branch keeps its batched rules for the loop's own
differentiation rules. Non-differentiable operands (``nondiff_argnums`` values that are
traced) are batched like any operand and reach the rule one member at a time.

While the ``vmap`` that batched the call is still running (``jvp(vmap(f))``, the jvp rule
runs inside it), the rule is vectorized by that same ``BatchTrace``: values of that vmap
the user's rule closes over are then batched along the same axis. Afterwards (a call
recorded in a loop body, a ``bwd`` that runs when transposing) a new ``BatchTrace`` over
the same batch size vectorizes it.
"""
from __future__ import annotations

from typing import Any, Callable, List, Sequence

from ..core.expansion import trace_nested
from ..core.jaxpr import Var
from ..core.trace import typeof
from ..lax import api as lax
from .batching import BatchTracer, _eval_batched, _front_all, batching_rules, to_front, vmap_flat
from .custom import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from .jvp import Zero, instantiate

__all__ = ["BatchedRules", "dims_of_args"]


def _leading_size(values: Sequence[Any], flags: Sequence[bool], avals: Sequence[Any] = ()):
    """The batch size: the leading dim of the first flagged value (or of the first aval)."""
    for v, f in zip(values, flags):
        if f:
            return typeof(v).shape[0]
    for a in avals:
        if a.shape:
            return a.shape[0]
    return None


def dims_of_args(jaxpr, values, batched):
    """``values`` for ``jaxpr``'s inputs where an unbatched input used as a dim of another
    input's type is that dim of the other value (its member shape): the very dim, not a copy
    the nested trace made of it."""
    values = list(values)
    pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
    for k, v in enumerate(jaxpr.invars):
        for j, d in enumerate(v.aval.shape):
            if isinstance(d, Var) and id(d) in pos and not batched[pos[id(d)]]:
                values[pos[id(d)]] = typeof(values[k]).shape[j + (1 if batched[k] else 0)]
    return values


def _member_zero(z: Zero, batched: bool) -> Zero:
    """A symbolic zero (co)tangent of the batch as a member's: without the batch axis."""
    return Zero(z.aval.update(shape=z.aval.shape[1:])) if batched else z


def _split_zeros(ts: Sequence[Any], flags: Sequence[bool]):
    """The (co)tangents that are arrays with their batch flags, and a function rebuilding a
    member's full list from the members' arrays (symbolic zeros put back, member-sized):
    a symbolic zero stays symbolic through ``vmap`` (the rule may ask to see it)."""
    keep = [not isinstance(t, Zero) for t in ts]
    vals = [t for t, k in zip(ts, keep) if k]
    vflags = [f for f, k in zip(flags, keep) if k]
    zeros = [None if k else _member_zero(t, f) for t, f, k in zip(ts, flags, keep)]

    def rebuild(member_vals):
        it = iter(member_vals)
        return [next(it) if z is None else z for z in zeros]
    return vals, vflags, rebuild


def _run_batched(trace, size, fun: Callable, vals: Sequence[Any], flags: Sequence[bool]) -> List[Any]:
    """``fun`` (on members, returning a flat list of arrays) applied to a batch: ``vals[i]``
    has its batch axis first where ``flags[i]``. Returns the results, batch axis first.

    Vectorized by ``trace`` (the vmap that batched the call) while it runs, otherwise by a
    new ``BatchTrace`` of batch size ``size``."""
    if trace is not None and trace.active:
        ins = [BatchTracer(trace, v, 0) if f else v for v, f in zip(vals, flags)]
        outs = []
        for o in fun(*ins):
            if isinstance(o, BatchTracer) and o._trace is trace:
                outs.append(to_front(o.val, o.bdim, size))
            else:
                typeof(o)
                outs.append(to_front(o, None, size))
        return outs
    outs, dims, _ = vmap_flat(fun, size, list(vals), [0 if f else None for f in flags])
    return [to_front(o, d, size) for o, d in zip(outs, dims)]


class BatchedRules:
    """The rules of a batched call: ``base``'s (a ``custom._Rules`` or another
    ``BatchedRules``) run under ``vmap``.

    ``nd_b`` / ``arg_b``: which non-differentiable operands and arguments carry the batch
    axis (first). ``res_b``: which residuals do, for a batched ``custom_lin`` (None: a
    batched call, whose ``apply_fwd`` returns every residual batched). Every output of a
    batched call, and every output cotangent, is batched."""

    def __init__(self, base, trace, nd_b: Sequence[bool], arg_b: Sequence[bool], res_b=None):
        self.base = base
        self.trace = trace
        self.nd_b = list(nd_b)
        self.arg_b = list(arg_b)
        self.res_b = None if res_b is None else list(res_b)
        self.who, self.name, self.num_nd = base.who, base.name, base.num_nd

    def __repr__(self):
        return f"<{self.who} {self.name}, batched>"

    def apply_jvp(self, nd, args, tangents, out_avals=()):
        """The user's jvp, vectorized: primal outputs and tangents, batch axis first.
        ``tangents`` may hold symbolic ``Zero``s (of the batched types)."""
        n_nd, n = len(nd), len(args)
        size = _leading_size(list(nd) + list(args), self.nd_b + self.arg_b, out_avals)
        t_vals, t_flags, rebuild = _split_zeros(tangents, self.arg_b)
        box = []

        def member(*xs):
            p, t = self.base.apply_jvp(list(xs[:n_nd]), list(xs[n_nd:n_nd + n]), rebuild(xs[n_nd + n:]))
            box.append(len(p))
            return list(p) + [instantiate(x) for x in t]
        outs = _run_batched(self.trace, size, member, list(nd) + list(args) + list(t_vals),
                            self.nd_b + self.arg_b + t_flags)
        nout = box[0]
        return outs[:nout], outs[nout:]

    def apply_fwd(self, nd, args, out_avals=(), perturbed=None):
        """The user's fwd, vectorized: outputs and residuals, batch axis first."""
        n_nd = len(nd)
        size = _leading_size(list(nd) + list(args), self.nd_b + self.arg_b, out_avals)
        box = []

        def member(*xs):
            outs, res, res_tree = self.base.apply_fwd(list(xs[:n_nd]), list(xs[n_nd:]), (), perturbed)
            box.append((len(outs), res_tree))
            return list(outs) + list(res)
        outs = _run_batched(self.trace, size, member, list(nd) + list(args), self.nd_b + self.arg_b)
        nout, res_tree = box[0]
        return outs[:nout], outs[nout:], res_tree

    def apply_bwd(self, nd, res, res_tree, cts, arg_avals):
        """The user's bwd, vectorized. The cotangent of an argument shared by every member
        (not batched) is the sum of the members' cotangents."""
        res_b = [True] * len(res) if self.res_b is None else self.res_b
        ct_vals, ct_flags, rebuild = _split_zeros(cts, [True] * len(cts))
        flags = self.nd_b + res_b + ct_flags
        vals = list(nd) + list(res) + list(ct_vals)
        size = _leading_size(vals, flags) if any(flags) else _leading_size([], [], [
            z.aval for z in cts if isinstance(z, Zero)])
        member_avals = [None if a is None else a.update(shape=a.shape[1:]) if b else a
                        for a, b in zip(arg_avals, self.arg_b)]
        n_nd, n_res = len(nd), len(res)
        box = []

        def member(*xs):
            out = self.base.apply_bwd(list(xs[:n_nd]), list(xs[n_nd:n_nd + n_res]), res_tree,
                                      rebuild(xs[n_nd + n_res:]), member_avals)
            box.append([c is None for c in out])
            return [c for c in out if c is not None]
        outs = iter(_run_batched(self.trace, size, member, vals, flags))
        result = []
        for is_none, b in zip(box[0], self.arg_b):
            if is_none:
                result.append(None)
                continue
            c = next(outs)
            result.append(c if b else lax.reduce_sum(c, (0,)))
        return result


def _call_batch(primitive):
    """The batching rule of a call primitive: the same primitive on the batched function
    with ``BatchedRules``."""
    def rule(size, vals, dims, *, trace, call_jaxpr, num_consts, rules):
        flags = [d is not None for d in dims]
        vals = _front_all(vals, dims, size, flags)
        nout = len(call_jaxpr.outvars)

        def batched(*xs):
            return _eval_batched(call_jaxpr, size, dims_of_args(call_jaxpr, xs, flags), flags, [True] * nout)
        prog = trace_nested(batched, tuple((typeof(v), True) for v in vals), lambda r: (list(r), None),
                            expand=False)
        nd_b = flags[num_consts - rules.num_nd:num_consts]
        new_rules = BatchedRules(rules, trace, nd_b, flags[num_consts:])
        # the batched jaxpr's captured values (the batch size) come first: the constant block
        # still ends with the non-differentiable operands
        outs = primitive.bind(*prog.consts, *vals, call_jaxpr=prog.jaxpr, num_consts=prog.nconsts + num_consts,
                              rules=new_rules)
        return list(outs), [0] * nout
    rule.needs_trace = True
    return rule


def _custom_lin_batch(size, vals, dims, *, trace, num_res, num_out, res_tree, rules):
    """A batched ``custom_lin`` (linear in its tangents): ``bwd`` vectorized over the batch.
    Its results (and so the output cotangents) are batched."""
    flags = [d is not None for d in dims]
    flags[num_res:num_res + num_out] = [True] * num_out
    vals = _front_all(vals, dims, size, flags)
    nd_b = flags[:rules.num_nd]
    res_b = flags[rules.num_nd:num_res]
    new_rules = BatchedRules(rules, trace, nd_b, flags[num_res + num_out:], res_b)
    outs = custom_lin_p.bind(*vals, num_res=num_res, num_out=num_out, res_tree=res_tree, rules=new_rules)
    return list(outs), [0] * num_out


_custom_lin_batch.needs_trace = True

batching_rules[custom_jvp_call_p] = _call_batch(custom_jvp_call_p)
batching_rules[custom_vjp_call_p] = _call_batch(custom_vjp_call_p)
batching_rules[custom_lin_p] = _custom_lin_batch
