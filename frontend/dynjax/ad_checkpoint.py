"""Gradient checkpointing (rematerialization): ``checkpoint`` (alias ``remat``),
``checkpoint_name`` and ``checkpoint_policies``, with JAX's signatures
(``jax.checkpoint``, ``jax.ad_checkpoint``).

``checkpoint(fun)`` computes what ``fun`` computes; under ``grad`` / ``vjp`` / ``linearize``
the values computed inside ``fun`` are not stored for the backward pass (unless the
``policy`` saves them) but recomputed there from ``fun``'s inputs: less memory, more work.
The primitive and its rules are in ``transforms/remat.py``; see doc/autodiff.md,
"Rematerialization".
"""
from __future__ import annotations

import functools
import numbers
from typing import Callable, Sequence, Union

from . import checkpoint_policies
from .checkpoint_policies import Policy
from .core.errors import api_boundary
from .core.pytree import tree_flatten, tree_map, tree_unflatten
from .core.trace import typeof
from .transforms.remat import bind_checkpoint, name_p

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "saved_residuals",
           "print_saved_residuals"]


def _static_argnums(static_argnums) -> tuple:
    if isinstance(static_argnums, numbers.Integral) and not isinstance(static_argnums, bool):
        return (int(static_argnums),)
    try:
        nums = tuple(static_argnums)
    except TypeError:
        raise TypeError(f"checkpoint: static_argnums must be an int or a sequence of ints, got "
                        f"{type(static_argnums).__name__}") from None
    for i in nums:
        if not isinstance(i, numbers.Integral) or isinstance(i, bool):
            raise TypeError(f"checkpoint: static_argnums must hold ints, got {i!r}")
    return tuple(int(i) for i in nums)


def _as_policy(policy):
    if policy is None or isinstance(policy, Policy):
        return policy
    if not callable(policy):
        raise TypeError(f"checkpoint: policy must be None or a function policy(primitive, *avals, **params) "
                        f"-> bool (see dynjax.checkpoint_policies), got {type(policy).__name__}")
    return Policy(policy, getattr(policy, "__name__", type(policy).__name__))


def _leaf(x, where, who="checkpoint", hint="; pass non-array arguments with static_argnums"):
    try:
        typeof(x)
    except TypeError:
        raise TypeError(f"{who}: {where} is a {type(x).__name__}, not an array or a scalar{hint}") from None
    return x


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Union[Callable, None] = None,
               static_argnums: Union[int, Sequence[int]] = ()) -> Callable:
    """``fun`` with rematerialization (JAX's ``jax.checkpoint``): the same values, but under
    ``grad`` / ``vjp`` / ``linearize`` the values computed inside ``fun`` are recomputed in
    the backward pass from ``fun``'s inputs instead of being stored, except those the
    ``policy`` saves (see ``dynjax.checkpoint_policies``; None saves nothing).

    ``prevent_cse`` (default True) keeps the recomputation from being merged with the
    forward computation by common-subexpression elimination (which would store the values
    after all), through an optimization barrier on its inputs. ``static_argnums`` names
    positional arguments that are Python values, not arrays (closed over, not traced).
    Arguments are pytrees of arrays; outputs may only have static sizes or sizes of the
    inputs.
    """
    if not callable(fun):
        raise TypeError(f"checkpoint: the first argument must be a function, got {type(fun).__name__}")
    statics = _static_argnums(static_argnums)
    policy = _as_policy(policy)
    prevent_cse = bool(prevent_cse)

    @functools.wraps(fun)
    @api_boundary
    def checkpointed(*args, **kwargs):
        nargs = len(args)
        static = {}
        for i in statics:
            if not -nargs <= i < nargs:
                raise ValueError(f"checkpoint: static_argnums entry {i} is out of range for {nargs} "
                                 "positional arguments")
            static[i % nargs] = args[i]
        dynamic = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten((dynamic, kwargs))
        leaves = [_leaf(x, f"argument leaf {k}") for k, x in enumerate(leaves)]
        box = []

        def flat(*xs):
            dyn, kw = tree_unflatten(in_tree, list(xs))
            it = iter(dyn)
            full = [static[i] if i in static else next(it) for i in range(nargs)]
            out_leaves, out_tree = tree_flatten(fun(*full, **kw))
            box.append(out_tree)
            return [_leaf(x, f"output leaf {k}", hint="") for k, x in enumerate(out_leaves)]

        outs = bind_checkpoint(flat, leaves, policy=policy, prevent_cse=prevent_cse)
        return tree_unflatten(box[0], outs)
    return checkpointed


#: JAX's other name for ``checkpoint``.
remat = checkpoint


def checkpoint_name(x, name):
    """``x`` (a pytree of arrays) unchanged, labelled ``name`` for the name policies
    (``save_only_these_names(name)`` ...). The identity under every transformation."""
    try:
        hash(name)
    except TypeError:
        raise TypeError(f"checkpoint_name: name must be hashable (a string), got a {type(name).__name__}") from None
    return tree_map(lambda leaf: name_p.bind(_leaf(leaf, "a leaf of x", "checkpoint_name", ""), name=name), x)


def saved_residuals(f: Callable, *args, **kwargs) -> list:
    """What reverse mode stores for ``f`` at ``args`` (JAX's ``jax.ad_checkpoint.saved_residuals``):
    one ``(aval, description)`` per residual of the linearized ``f`` (the values its backward
    pass reads), the description saying where the value comes from: ``"from the argument
    args[0]"`` or ``"output of cos"`` (the primitive that computed it). Differentiates with
    respect to every floating-point leaf of ``args`` and ``kwargs``."""
    from .core.jaxpr import Var
    from .tracing import make_jaxpr
    from .transforms.jvp import _leaf_names
    from .transforms.partial_eval import linearize_flat
    if not callable(f):
        raise TypeError(f"saved_residuals: the first argument must be a function, got {type(f).__name__}")
    leaves, tree = tree_flatten((args, kwargs))
    leaves = [_leaf(x, f"argument leaf {k}", "saved_residuals", "") for k, x in enumerate(leaves)]

    def call(*ys):
        a, kw = tree_unflatten(tree, list(ys))
        return f(*a, **kw)

    def residuals(*xs):
        return linearize_flat(call, list(xs)).consts
    closed = make_jaxpr(residuals)(*leaves)
    jaxpr = closed.jaxpr
    names = _leaf_names(tree, "")
    explicit = [v for v, e in zip(jaxpr.invars, jaxpr.in_explicit) if e]
    arg_of = {id(v): names[k] for k, v in enumerate(explicit)}
    made_by = {id(v): eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    out = []
    for v in jaxpr.outvars:
        if not isinstance(v, Var):
            out.append((v.aval, "a constant"))
        elif id(v) in arg_of:
            out.append((v.aval, f"from the argument {_argument_name(arg_of[id(v)])}"))
        elif id(v) in made_by:
            out.append((v.aval, f"output of {made_by[id(v)].primitive.name}"))
        elif v in jaxpr.invars:
            out.append((v.aval, "a size of an argument"))
        else:
            out.append((v.aval, "a constant"))
    return out


def _argument_name(path: str) -> str:
    """``[0][1]['w']`` (a path in ``(args, kwargs)``) as ``args[1]['w']`` / ``kwargs['w']``."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    return "kwargs" + path[3:]


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print ``saved_residuals(f, *args, **kwargs)``, one residual per line (JAX's
    ``jax.ad_checkpoint.print_saved_residuals``)."""
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")
