"""``custom_vmap`` and ``sequential_vmap``: functions with a user-defined batching rule
(JAX's ``jax.custom_batching``; public names in ``dynjax.custom_batching``).

Calling a ``custom_vmap`` function traces it into a jaxpr (a scope nested in the caller's)
and binds one ``custom_vmap_call`` equation (operands ``C A``: the values the function
closes over, then the flat arguments). Evaluating, typing, lowering and costing it run the
jaxpr, as for ``custom_jvp_call``. Under ``vmap`` its batching rule calls the user's rule
``rule(axis_size, in_batched, *args) -> (out, out_batched)`` on the arguments with their
batch axis first (``axis_size`` may be a traced size inside ``qjit``).

Differentiation follows JAX:

* forward mode: the primal is the same call; the tangent is a ``custom_vmap_call`` of the
  function's jvp whose batching rule is the jvp of the user's rule, so ``vmap(jvp(f))``
  and ``jvp(vmap(f))`` both use the rule;
* reverse mode is not supported (JAX documents it): ``grad`` / ``vjp`` raise a
  ``NotImplementedError`` that says to combine ``custom_vmap`` with ``custom_vjp``, which
  works in every order (``custom_vjp``'s rules then do the differentiation, the batching
  rule the batching).

A function that closes over a value batched by the ``vmap`` (rather than taking it as an
argument) cannot be given to the rule: that is a ``ValueError`` naming the function.
"""
from __future__ import annotations

import functools
from typing import Callable

from ..core.errors import api_boundary
from ..core.expansion import trace_nested
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import Var
from ..core.primitive import Primitive, abstract_eval_rules, impl_rules, jvp_rules, transpose_rules
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import leaf_avals, typeof
from ..lowering.core import register_lowering
from .batching import batching_rules, to_front
from .custom.call import (_call_abstract, _call_impl, _call_lowering, _computed_dim_message, _fun_name,
                     _resolve_args)
from .jvp import Zero, instantiate, jvp_flat

__all__ = ["custom_vmap", "sequential_vmap", "custom_vmap_call_p"]

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)


class _VmapRule:
    """The batching rule one call carries, on flat values: ``batch(size, flags, leaves)``
    returns ``(out_leaves, out_flags)``; batched leaves have their batch axis first."""
    who = "custom_vmap"

    def __init__(self, name: str, batch: Callable):
        self.name = name
        self.batch = batch

    def __repr__(self):
        return f"<custom_vmap rule of {self.name}>"


def _user_rule(name, rule, in_tree, out_tree, out_avals):
    """The user's ``rule(axis_size, in_batched, *args)`` on flat values, checked."""
    def batch(size, flags, leaves):
        args = tree_unflatten(in_tree, list(leaves))
        in_batched = tree_unflatten(in_tree, list(flags))
        res = rule(size, in_batched, *args)
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(f"custom_vmap: the vmap rule of {name} must return a pair (out, out_batched), "
                            f"got {type(res).__name__}")
        out, out_batched = res
        leaves_out, tree = tree_flatten(out)
        if tree != out_tree:
            raise TypeError(f"custom_vmap: the vmap rule of {name} returns an output of structure {tree}, "
                            f"but the function returns {out_tree}")
        if isinstance(out_batched, bool):
            o_flags = [out_batched] * len(leaves_out)
        else:
            o_flags, f_tree = tree_flatten(out_batched)
            if f_tree != out_tree or not all(isinstance(f, bool) for f in o_flags):
                raise TypeError(f"custom_vmap: the vmap rule of {name} must return out_batched as a "
                                f"pytree of bools with the output's structure {out_tree}, got {out_batched!r}")
        for k, (x, b, a) in enumerate(zip(leaves_out, o_flags, out_avals)):
            xa = typeof(x)
            if xa.ndim != a.ndim + (1 if b else 0) or xa.dtype != a.dtype:
                want = f"batched ({size},) + " if b else ""
                raise TypeError(f"custom_vmap: output {k} of the vmap rule of {name} has type "
                                f"{xa.str_short()}; expected {want}the function's {a.str_short()} "
                                f"(out_batched[{k}] is {b})")
        return list(leaves_out), list(o_flags)
    return batch


# ----------------------------------------------------------------------------------------------
# The call primitive: evaluated, typed and lowered as its jaxpr
# ----------------------------------------------------------------------------------------------
impl_rules[custom_vmap_call_p] = _call_impl
abstract_eval_rules[custom_vmap_call_p] = _call_abstract
register_lowering(custom_vmap_call_p, _call_lowering)


def _bind(fun_flat, leaves, rule_of):
    """Trace ``fun_flat`` (flat leaves -> pytree) and bind a call; ``rule_of(out_tree,
    out_avals)`` makes its ``_VmapRule``. Returns ``(out_leaves, out_tree)``."""
    prog = trace_nested(fun_flat, tuple((typeof(x), True) for x in leaves), tree_flatten, expand=False)
    inputs = {id(v) for v in prog.jaxpr.invars}
    rule = rule_of(prog.out_tree, [v.aval for v in prog.jaxpr.outvars])
    for k, v in enumerate(prog.jaxpr.outvars):
        if any(isinstance(d, Var) and id(d) not in inputs for d in v.aval.shape):
            raise TypeError(_computed_dim_message(rule, k).replace("custom_jvp / custom_vjp", "custom_vmap"))
    outs = custom_vmap_call_p.bind(*prog.consts, *leaves, call_jaxpr=prog.jaxpr, num_consts=prog.nconsts,
                                   rules=rule)
    return list(outs), prog.out_tree


class custom_vmap:
    """A function with a user-defined ``vmap`` rule (JAX's ``custom_batching.custom_vmap``)::

        @custom_vmap
        def f(x, y):
            return x + y

        @f.def_vmap
        def f_vmap_rule(axis_size, in_batched, xs, ys):
            return xs * ys, True

    Called directly (eagerly, under ``qjit``, under ``jvp``) it runs ``f``. Under ``vmap``
    the rule runs instead: ``in_batched`` is a pytree of bools with the arguments'
    structure (batched arguments have their batch axis first), and the rule returns the
    batched output and ``out_batched`` (a pytree of bools with the output's structure, or
    one bool). Forward-mode derivatives use the rule under ``vmap`` too; reverse mode is
    not supported (combine with ``custom_vjp``)."""

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise TypeError(f"custom_vmap: expected a function, got {type(fun).__name__}")
        self._fun = fun            # not ``fun`` in __dict__: a wrapper (custom_vjp) copies it
        self.vmap_rule = None
        functools.update_wrapper(self, fun)

    @property
    def fun(self) -> Callable:
        """The wrapped function."""
        return self._fun

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Set the rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``;
        returns it unchanged (usable as a decorator)."""
        if not callable(vmap_rule):
            raise TypeError(f"custom_vmap.def_vmap: expected a function, got {type(vmap_rule).__name__}")
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    @api_boundary
    def __call__(self, *args, **kwargs):
        name = _fun_name(self._fun)
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
        args = _resolve_args(self._fun, "custom_vmap", args, kwargs)   # keywords matched to positions
        leaves, in_tree = tree_flatten(tuple(args))
        leaf_avals(leaves, lambda k, x: (f"custom_vmap: an argument leaf of {name} is a {type(x).__name__}, "
                                         "not an array or a scalar"))
        fun = self._fun

        def flat(*xs):
            return fun(*tree_unflatten(in_tree, list(xs)))
        outs, out_tree = _bind(flat, leaves, lambda ot, oa: _VmapRule(
            name, _user_rule(name, self.vmap_rule, in_tree, ot, oa)))
        return tree_unflatten(out_tree, outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """A ``custom_vmap`` function whose batching rule calls ``f`` on one member at a time, in
    a loop (``lax.map``): for functions with no batched form of their own."""
    from ..lax.derived import map as lax_map
    g = custom_vmap(f)

    @g.def_vmap
    def rule(axis_size, in_batched, *args):
        leaves, tree = tree_flatten(args)
        flags, _ = tree_flatten(in_batched)
        batched = [x for x, b in zip(leaves, flags) if b]

        def member(xs):
            it = iter(xs)
            return f(*tree_unflatten(tree, [next(it) if b else x for x, b in zip(leaves, flags)]))
        out = lax_map(member, batched)
        return out, True
    return g


# ----------------------------------------------------------------------------------------------
# vmap, jvp, transpose
# ----------------------------------------------------------------------------------------------
def _batch(size, vals, dims, *, call_jaxpr, num_consts, rules):
    if any(d is not None for d in dims[:num_consts]):
        raise ValueError(f"custom_vmap: {rules.name} closes over a value batched by this vmap; the vmap "
                         "rule only sees the function's arguments. Pass the value as an argument")
    flags = [d is not None for d in dims[num_consts:]]
    args = [to_front(v, d, size) if d is not None else v for v, d in zip(vals[num_consts:], dims[num_consts:])]
    outs, out_flags = rules.batch(size, flags, args)
    return list(outs), [0 if b else None for b in out_flags]


def _jvp(primals, tangents, *, call_jaxpr, num_consts, rules):
    outs = custom_vmap_call_p.bind(*primals, call_jaxpr=call_jaxpr, num_consts=num_consts, rules=rules)
    arg_t = tangents[num_consts:]
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        # a closed-over value being differentiated: differentiate the function itself
        _, t_out = jvp_flat(lambda *a: eval_jaxpr(call_jaxpr, [], *a), list(primals), list(tangents))
        return list(outs), list(t_out)
    if all(isinstance(t, Zero) for t in arg_t):
        return list(outs), [Zero(typeof(o)) for o in outs]
    consts, args = list(primals[:num_consts]), list(primals[num_consts:])
    ts = [instantiate(t) for t in arg_t]
    n = len(args)
    out_avals = [v.aval for v in call_jaxpr.outvars]

    def tangent_fun(*xs):
        _, t = jvp_flat(lambda *a: eval_jaxpr(call_jaxpr, [], *consts, *a), list(xs[:n]), list(xs[n:]))
        return [instantiate(x) for x in t]

    def tangent_rule(out_tree, _):
        def batch(size, flags, leaves):
            pf, tf = flags[:n], flags[n:]
            ps, tl = list(leaves[:n]), list(leaves[n:])
            both = [a or b for a, b in zip(pf, tf)]
            ps = [to_front(p, None, size) if b and not f else p for p, b, f in zip(ps, both, pf)]
            tl = [to_front(t, None, size) if b and not f else t for t, b, f in zip(tl, both, tf)]
            _, t_out = jvp_flat(lambda *p: rules.batch(size, both, list(p))[0], ps, tl)
            t_out = [instantiate(t) for t in t_out]
            # a tangent is batched when it carries the batch axis (the rule says so for its primal)
            return t_out, [typeof(t).ndim == a.ndim + 1 for t, a in zip(t_out, out_avals)]
        return _VmapRule(rules.name, batch)
    t_outs, _ = _bind(tangent_fun, args + ts, tangent_rule)
    return list(outs), t_outs


def _transpose(cts, *operands, call_jaxpr, num_consts, rules):
    raise NotImplementedError(f"custom_vmap functions do not support reverse-mode autodiff ({rules.name}); "
                              "to customize both vmap and reverse-mode autodiff, combine custom_vmap with "
                              "custom_vjp")


batching_rules[custom_vmap_call_p] = _batch
jvp_rules[custom_vmap_call_p] = _jvp
transpose_rules[custom_vmap_call_p] = _transpose


def _register_with_the_planner_and_cost_model():
    from ..cost_model import _WHOLE, cost_rules, jaxpr_cost
    from ..execution import analysis
    analysis.call_primitives.add(custom_vmap_call_p)
    cost_rules[custom_vmap_call_p] = lambda eqn, sz: jaxpr_cost(eqn.params["call_jaxpr"], sz)
    _WHOLE.add(custom_vmap_call_p)


_register_with_the_planner_and_cost_model()
