"""``custom_jvp``: a function with a user-defined forward-mode derivative, and the jvp rule
of its call primitive ``custom_jvp_call`` (which runs the user's rule)."""
from __future__ import annotations

import operator
from typing import Callable, Optional, Sequence

from ...core.errors import api_boundary
from ...core.primitive import jvp_rules
from ...core.pytree import tree_map
from .call import (_as_tangent, _bind_call, _call_abstract, _check_output_types, _closure_check,
                   _CustomFunction, _fun_name, _Rules, _split_operands, custom_jvp_call_p)
from .symbolic import SymbolicZero

__all__ = ["custom_jvp"]


class custom_jvp(_CustomFunction):
    """A function with a user-defined forward-mode derivative (JVP), as ``jax.custom_jvp``::

        @dynjax.custom_jvp
        def f(x, y):
            return jnp.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            x_dot, y_dot = tangents
            return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

    Calling ``f`` runs the original function (eagerly, or staged under ``qjit``). Under
    ``jvp``, ``grad``, ``vjp``, ``jacfwd`` / ``jacrev``, the rule is used instead of
    differentiating ``f``'s body: ``f_jvp(primals, tangents)`` receives tuples of the
    positional arguments and of their tangents (arrays of zeros for arguments that are not
    differentiated, or ``SymbolicZero`` objects with ``defjvp(rule, symbolic_zeros=True)``)
    and returns ``(primal_out, tangent_out)`` with the output's structure. For reverse mode
    the tangent must be computed linearly from ``tangents`` (it is transposed).

    ``nondiff_argnums`` / ``nondiff_argnames`` name arguments that are not differentiated
    (Python values, functions, arrays): they are passed first to the rule,
    ``f_jvp(*nondiff_args, primals, tangents)``, and left out of ``primals``. Keyword
    arguments are matched to positions. Outputs may only have static sizes or sizes of the
    inputs. ``f`` may not close over a value being differentiated (pass it as an argument,
    or use ``closure_convert``).
    """
    who = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the JVP rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns
        ``jvp`` (so it can be used as a decorator). With ``symbolic_zeros=True`` the tangent
        of an argument that is not differentiated is a ``SymbolicZero`` (not an array), and
        the rule may return ``SymbolicZero`` objects for zero output tangents."""
        if not callable(jvp):
            raise TypeError(f"custom_jvp.defjvp: expected a function, got {type(jvp).__name__}")
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Optional[Callable]) -> None:
        """One JVP per positional argument: ``jvps[i](tangent_i, primal_out, *primals)`` is
        the output tangent's part due to argument ``i`` (None: the output does not depend on
        it). The output tangent is the sum over the differentiated arguments."""
        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps cannot be used with nondiff_argnums; use defjvp")
        for i, fn in enumerate(jvps):
            if fn is not None and not callable(fn):
                raise TypeError(f"custom_jvp.defjvps: entry {i} must be a function or None, got "
                                f"{type(fn).__name__}")

        def rule(primals, tangents):
            if len(jvps) != len(primals):
                raise TypeError(f"custom_jvp.defjvps: {_fun_name(self.fun)} takes {len(primals)} "
                                f"positional arguments but {len(jvps)} JVPs were given")
            out = self(*primals)
            total = None
            for fn, t in zip(jvps, tangents):
                if fn is None or isinstance(t, SymbolicZero):
                    continue
                part = fn(t, out, *primals)
                total = part if total is None else tree_map(operator.add, total, part)
            if total is None:
                total = tree_map(SymbolicZero.from_primal_value, out)
            return out, total
        self.defjvp(rule, symbolic_zeros=True)

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"custom_jvp function {_fun_name(self.fun)} has no JVP rule: "
                                 "define one with @f.defjvp before calling it")

        def make_rules(nargs, nondiff, num_nd, in_tree, out_tree):
            return _Rules("custom_jvp", _fun_name(self.fun), nargs, nondiff, num_nd, in_tree, out_tree,
                          jvp=self.jvp, symbolic_zeros=self.symbolic_zeros)
        return _bind_call(custom_jvp_call_p, "custom_jvp", self.fun, args, kwargs, self.nondiff_argnums,
                          make_rules)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, num_consts, rules):
    """The jvp of a call: the user's rule on the primals and the arguments' tangents (which
    may be symbolic ``Zero``s: the rule's ``apply_jvp`` decides how the user sees them)."""
    _closure_check(rules, tangents, num_consts)
    nd, args = _split_operands(primals, num_consts, rules)
    expected = _call_abstract(*primals, call_jaxpr=call_jaxpr, num_consts=num_consts, rules=rules)
    p_leaves, t_leaves = rules.apply_jvp(nd, args, list(tangents[num_consts:]), expected)
    _check_output_types(rules, p_leaves, expected, "the primal output of the JVP rule")
    t_out = [_as_tangent(rules, t, p, k, "tangent output") for k, (t, p) in enumerate(zip(t_leaves, p_leaves))]
    return p_leaves, t_out


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
