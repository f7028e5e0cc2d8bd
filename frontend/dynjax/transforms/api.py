"""The user-level differentiation API: ``linearize``, ``vjp``, ``grad``, ``value_and_grad``,
``jacfwd``, ``jacrev`` (``jacobian``) and ``hessian``.

All of them are built from ``jvp_flat`` (forward mode), ``linearize_flat`` (partial
evaluation into a linear jaxpr) and ``backward_pass`` (its transpose). They work eagerly,
inside ``qjit`` (the tangent and cotangent types carry the primal's dynamic dims) and
composed with each other (``grad(grad(f))``, ``jacfwd(jacrev(f))``).

Jacobians vectorize one jvp (or vjp) over the basis vectors with ``vmap`` (their number is
the input's or output's size, which may be known only at run time).
"""
from __future__ import annotations

import numbers
from typing import Callable, Sequence, Union

import numpy as np

from ..core.avals import float0, is_complex_dtype, is_inexact_dtype, same_dim
from ..core.errors import api_boundary
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import Tracer, typeof
from .jvp import Zero, _leaf_names, _tangent_out, instantiate, jvp_flat
from .partial_eval import linearize_flat
from .transpose import zeros



def _check_fun(fun, who):
    if not callable(fun):
        raise TypeError(f"{who}: the first argument must be a function, got {type(fun).__name__}")


def _aval(x, who, what):
    try:
        return typeof(x)
    except TypeError:
        raise TypeError(f"{who}: {what} is a {type(x).__name__}, not an array or a scalar") from None


def _same_type(a, b) -> bool:
    return a.dtype == b.dtype and a.ndim == b.ndim and all(same_dim(p, q) for p, q in zip(a.shape, b.shape))


def _split_aux(out, has_aux, who):
    if not has_aux:
        return out, None
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{who}(has_aux=True): the function must return a pair (output, aux), "
                        f"got {type(out).__name__}")
    return out


def _no_cotangent(x, who="vjp"):
    """The cotangent of an integer / bool input: float0 zeros of its shape."""
    shape = typeof(x).shape
    if not all(isinstance(d, int) for d in shape):
        raise TypeError(f"{who}: an integer or bool input with a dynamic shape has no cotangent "
                        "(float0 arrays have static shapes); close over it (pass it to the "
                        "function another way) instead")
    return np.zeros(shape, dtype=float0)


def is_float0(x) -> bool:
    """Whether ``x`` is an array of dtype ``float0`` (the tangent type of integers and bools)."""
    return isinstance(x, (np.ndarray, np.generic)) and x.dtype == float0


def _check_float0(x, primal_aval, who, what):
    """A float0 tangent or cotangent ``x`` for a value of type ``primal_aval``: only integer
    and bool values take one, and its shape must be theirs (JAX's rule)."""
    if is_inexact_dtype(primal_aval.dtype):
        raise ValueError(f"{who}: {what} has dtype float0 but the corresponding value has type "
                         f"{primal_aval.str_short()}; float0 is the tangent type of integer and "
                         "bool values only")
    if len(x.shape) != primal_aval.ndim or not all(
            same_dim(a, b) for a, b in zip(x.shape, primal_aval.shape)):
        raise ValueError(f"{who}: {what} has shape {tuple(x.shape)} but the corresponding value has "
                         f"type {primal_aval.str_short()}")


# ----------------------------------------------------------------------------------------------
# linearize and vjp
# ----------------------------------------------------------------------------------------------
def _linearize(fun, primals, has_aux, who):
    leaves, tree = tree_flatten(tuple(primals))
    for x, name in zip(leaves, _leaf_names(tree, "primals")):
        _aval(x, who, name)

    def flat(*xs):
        out = fun(*tree_unflatten(tree, xs))
        return _split_aux(out, has_aux, who) if has_aux else out

    lin = linearize_flat(flat, leaves, has_aux)
    return lin, leaves, tree, lin.aux


@api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` (``(out, f_jvp, aux)`` with ``has_aux``) where
    ``f_jvp(*tangents)`` evaluates the Jacobian-vector product at ``primals`` without re-running
    ``fun``: the primal computation is done once, the linear map is a jaxpr of the tangent
    operations alone (``doc/autodiff.md``). Tangents must have their primals' shapes and dtypes
    (a ValueError otherwise, as in JAX); an integer or bool primal takes a float0 (or zero)
    tangent. Inside ``qjit`` the tangents have the primals' dynamic dims."""
    _check_fun(fun, "linearize")
    lin, leaves, tree, aux = _linearize(fun, primals, has_aux, "linearize")

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != tree:
            raise ValueError(f"linearize: the linearized function was called with tangents of "
                             f"structure {t_tree}, but the primals have the structure {tree}")
        ts = []
        names = _leaf_names(tree, "tangents")
        for i, (t, p) in enumerate(zip(t_leaves, leaves)):
            pa = typeof(p)
            if is_float0(t):
                _check_float0(t, pa, "linearize", names[i])
                continue
            ta = _aval(t, "linearize", names[i])
            if not _same_type(ta.strip_weak_type(), pa.strip_weak_type()):
                if not isinstance(t, Tracer) and np.ndim(t) == 0 and pa.ndim == 0 and \
                        isinstance(t, (int, float, complex)):
                    t = np.asarray(t, pa.dtype)
                else:
                    raise ValueError(f"linearize: the linearized function was called with {names[i]} "
                                     f"of type {ta.str_short()} for a primal of type "
                                     f"{pa.str_short()}; tangents must match the original primals")
            if i in lin.diff:
                ts.append(t)
        outs = lin.apply(ts)
        return tree_unflatten(lin.out_tree, [_tangent_out(t) for t in outs])

    out = tree_unflatten(lin.out_tree, lin.primal_out)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False, reduce_axes: Sequence = ()):
    """``(fun(*primals), f_vjp)`` (plus ``aux`` with ``has_aux``) where ``f_vjp(ct)`` returns
    the cotangents of ``primals`` for an output cotangent ``ct`` (a pytree of ``fun``'s output
    structure): ``ct @ J``. The cotangent of an integer or bool input has dtype ``float0``;
    an integer or bool output takes a float0 (or integer) cotangent. A cotangent of another
    structure, shape or dtype than the output's is a ValueError (as in JAX)."""
    _check_reduce_axes(reduce_axes, "vjp")
    return _vjp(fun, primals, has_aux, "vjp")


def _vjp(fun, primals, has_aux, who):
    """vjp, with ``who`` naming the user-level function in error messages."""
    _check_fun(fun, who)
    lin, leaves, tree, aux = _linearize(fun, primals, has_aux, who)
    primal_out = tree_unflatten(lin.out_tree, lin.primal_out)

    def f_vjp(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != lin.out_tree:
            raise ValueError(f"vjp: the cotangent's structure {ct_tree} differs from the structure "
                             f"{lin.out_tree} of the differentiated function's output; the argument "
                             "of the VJP function must match it")
        cts = []
        for c, p, nz in zip(ct_leaves, lin.primal_out, lin.nonzero):
            pa = typeof(p)
            if is_float0(c):
                _check_float0(c, pa, "vjp", "a cotangent")
                continue
            ca = _aval(c, "vjp", "a cotangent")
            if not _same_type(ca.strip_weak_type(), pa.strip_weak_type()):
                if not isinstance(c, Tracer) and np.ndim(c) == 0 and pa.ndim == 0 and \
                        isinstance(c, (int, float, complex)):
                    c = np.asarray(c, pa.dtype)
                else:
                    raise ValueError(f"vjp: unexpected type for the argument of the VJP function: got "
                                     f"{ca.str_short()}, but expected {pa.str_short()} (the type of "
                                     "the corresponding output of the differentiated function)")
            if nz:
                cts.append(c)
        in_cts = lin.transpose(cts)
        by_leaf = dict(zip(lin.diff, in_cts))
        out = []
        for i, x in enumerate(leaves):
            if i not in by_leaf:
                out.append(_no_cotangent(x, who))
            else:
                c = by_leaf[i]
                out.append(zeros(typeof(x).strip_weak_type()) if c is None else c)
        return tree_unflatten(tree, out)

    if has_aux:
        return primal_out, f_vjp, aux
    return primal_out, f_vjp


# ----------------------------------------------------------------------------------------------
# grad and value_and_grad
# ----------------------------------------------------------------------------------------------
def _argnums(argnums, nargs, who):
    """``(single, positions)``: whether ``argnums`` is one int, and the positions it names
    (negative ones count from the end). JAX's errors: a TypeError for a non-int entry or a
    position the call does not pass, a ValueError for an empty tuple."""
    single = isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool)
    if not single and not isinstance(argnums, (tuple, list)):
        raise TypeError(f"{who}: argnums must be an int or a tuple of ints, got {argnums!r}")
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{who}: argnums must name at least one argument, got {argnums!r}")
    for a in nums:
        if not isinstance(a, numbers.Integral) or isinstance(a, bool):
            raise TypeError(f"{who}: argnums must be integers, got {a!r}")
    if any(not -nargs <= a < nargs for a in nums):
        need = max(a + 1 if a >= 0 else -a for a in nums)
        raise TypeError(f"{who}: differentiating with respect to argnums={argnums!r} requires at "
                        f"least {need} positional arguments to be passed by the caller, but got "
                        f"only {nargs} positional arguments")
    positions = tuple(int(a) % nargs for a in nums)
    if len(set(positions)) != len(positions):   # jax fails on it too (a TypeError)
        raise TypeError(f"{who}: argnums={argnums!r} names an argument more than once")
    return single, positions


def _check_input(x, where, who, holomorphic=False, allow_int=False, forward=False):
    """JAX's input dtype rules. Reverse mode (grad, jacrev): inexact inputs, integer / bool
    ones with ``allow_int`` (their gradient is float0). Forward mode (jacfwd): real floating
    inputs. ``holomorphic=True``: complex inputs only."""
    leaves, _ = tree_flatten(x)
    for leaf in leaves:
        dt = _aval(leaf, who, where).dtype
        if holomorphic:
            if not is_complex_dtype(dt):
                raise TypeError(f"{who} with holomorphic=True requires inputs with complex dtype, but "
                                f"got {dt.name} ({where})")
        elif forward:
            if not is_inexact_dtype(dt) or is_complex_dtype(dt):
                raise TypeError(f"{who} requires real-valued inputs (input dtype that is a sub-dtype "
                                f"of np.floating), but got {dt.name} ({where}). For holomorphic "
                                "differentiation, pass holomorphic=True. For differentiation of "
                                "non-holomorphic functions involving complex inputs or integer "
                                "inputs, use jvp directly.")
        elif not is_inexact_dtype(dt) and not allow_int:
            raise TypeError(f"{who} requires real- or complex-valued inputs (input dtype that is a "
                            f"sub-dtype of np.inexact), but got {dt.name} ({where}). If you want to "
                            "use Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_output(out, who, holomorphic, what="outputs"):
    """JAX's output dtype rules: real floating outputs, complex ones with ``holomorphic``."""
    for leaf in tree_flatten(out)[0]:
        dt = _aval(leaf, who, "the function's output").dtype
        if holomorphic:
            if not is_complex_dtype(dt):
                raise TypeError(f"{who} with holomorphic=True requires {what} with complex dtype, "
                                f"but got {dt.name}.")
        elif not is_inexact_dtype(dt) or is_complex_dtype(dt):
            hint = ("For holomorphic differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use vjp directly."
                    if is_complex_dtype(dt) else "For differentiation of functions with integer "
                    "outputs, use vjp directly.")
            raise TypeError(f"{who} requires real-valued {what} (output dtype that is a sub-dtype of "
                            f"np.floating), but got {dt.name}. {hint}")


def _value_and_grad_impl(fun, argnums, has_aux, holomorphic, allow_int, who, args, kwargs):
    single, nums = _argnums(argnums, len(args), who)
    for i in nums:
        _check_input(args[i], f"argument {i}", who, holomorphic, allow_int)

    def partial(*dyn):
        full = list(args)
        for i, x in zip(nums, dyn):
            full[i] = x
        return fun(*full, **kwargs)

    res = _vjp(partial, [args[i] for i in nums], has_aux, who)
    out, f_vjp = res[0], res[1]
    out_leaves, _ = tree_flatten(out)
    a = _aval(out, who, "the function's output") if len(out_leaves) == 1 and not isinstance(out, (list, tuple, dict)) else None
    if a is None or a.shape != ():
        got = f"shape {a.str_short()}" if a is not None else f"a {type(out).__name__}"
        raise TypeError(f"{who}: gradient only defined for scalar-output functions. Output had "
                        f"{got}; use vjp or jacrev for a non-scalar output")
    _check_output(out, who, holomorphic)
    g = f_vjp(np.ones((), a.dtype))
    g = g[0] if single else tuple(g)
    if has_aux:
        return (out, res[2]), g
    return out, g


def _check_reduce_axes(reduce_axes, who):
    if reduce_axes:
        raise NotImplementedError(f"{who}: reduce_axes (named axes) is not supported by dynjax")


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes: Sequence = ()):
    """A function returning ``(fun(*args), grad)`` (``((value, aux), grad)`` with ``has_aux``);
    the options are ``grad``'s."""
    _check_fun(fun, "value_and_grad")
    _check_reduce_axes(reduce_axes, "value_and_grad")

    @api_boundary
    def value_and_grad_f(*args, **kwargs):
        return _value_and_grad_impl(fun, argnums, has_aux, holomorphic, allow_int, "value_and_grad",
                                    args, kwargs)
    value_and_grad_f.__name__ = f"value_and_grad({getattr(fun, '__name__', 'f')})"
    return value_and_grad_f


def grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False, reduce_axes: Sequence = ()):
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums`` (an int,
    or a tuple giving a tuple of gradients; negative positions count from the end), as JAX
    defines it: ``(grad, aux)`` with ``has_aux``; ``holomorphic=True`` for complex inputs and
    output; ``allow_int=True`` lets integer / bool arguments through (their gradient is a
    float0 array). Works eagerly, under ``qjit`` (a gradient of ``f64[n]`` is ``f64[n]``)
    and composed (``grad(grad(f))``)."""
    _check_fun(fun, "grad")
    _check_reduce_axes(reduce_axes, "grad")

    @api_boundary
    def grad_f(*args, **kwargs):
        (out, g) = _value_and_grad_impl(fun, argnums, has_aux, holomorphic, allow_int, "grad", args, kwargs)
        if has_aux:
            return g, out[1]
        return g
    grad_f.__name__ = f"grad({getattr(fun, '__name__', 'f')})"
    return grad_f


# ----------------------------------------------------------------------------------------------
# Jacobians: a for_loop over the basis vectors (their number may be dynamic)
# ----------------------------------------------------------------------------------------------
def _size(shape):
    from ..lax.api import canonicalize_dim
    n = 1
    for d in shape:
        n = n * d
    return n if isinstance(n, int) else canonicalize_dim(n)


def _basis(i, shape, dtype):
    """The i-th standard basis vector of an array of ``shape`` (row-major)."""
    from ..lax import api as lax
    from .. import numpy as jnp
    n = _size(shape)
    e = jnp.equal(lax.iota(np.int64, n), i).astype(dtype)
    return e if len(shape) == 1 else lax.reshape(e, shape)


def _over_basis(fun, n):
    """``fun(i)`` (a list of arrays) for every basis index i = 0 .. n-1, vectorized with
    ``vmap`` (one batched jvp or vjp instead of n; n may be dynamic): each result gets a
    leading axis of size n."""
    from ..lax import api as lax
    from .batching import to_front, vmap_flat
    outs, dims, _ = vmap_flat(fun, n, [lax.iota(np.int64, n)], [0])
    return [to_front(o, d, n) for o, d in zip(outs, dims)]


def _jacobian_block(stacked, out_shape, in_shape, batch_is_input):
    """A Jacobian block of shape ``out_shape + in_shape`` from a result stacked over the basis
    (the basis axis first): over the input's basis (jacfwd), the axis moves last."""
    from ..lax import api as lax
    from .batching import move_axis
    if batch_is_input:
        stacked = move_axis(stacked, 0, typeof(stacked).ndim - 1)
    return lax.reshape(stacked, tuple(out_shape) + tuple(in_shape))


def _jac_wrap(fun, argnums, has_aux, holomorphic, who, mode, allow_int=False):
    _check_fun(fun, who)

    @api_boundary
    def jac_f(*args, **kwargs):
        single, nums = _argnums(argnums, len(args), who)
        for i in nums:
            _check_input(args[i], f"argument {i}", who, holomorphic, allow_int, forward=mode == "fwd")
        in_leaves, in_tree = tree_flatten(tuple(args[i] for i in nums))
        aux_box = []

        def flat(*xs):
            full = list(args)
            for i, x in zip(nums, tree_unflatten(in_tree, xs)):
                full[i] = x
            out, aux = _split_aux(fun(*full, **kwargs), has_aux, who)
            aux_box.append(aux)
            return (out, aux) if has_aux else out

        # blocks[o][k]: the derivative of output leaf o with respect to input leaf k
        if mode == "fwd":
            out_box = []
            primal_out, _ = jvp_flat(lambda *xs: flat(*xs)[0] if has_aux else flat(*xs), in_leaves,
                                     [Zero(typeof(x)) for x in in_leaves], out_box)
            out_tree, aux = out_box[0], aux_box[0]
            if holomorphic:
                _check_output(primal_out, who, holomorphic)
            blocks = [[None] * len(in_leaves) for _ in primal_out]
            for k, x in enumerate(in_leaves):
                xa = typeof(x)

                def column(i, k=k, xa=xa):
                    ts = [Zero(typeof(y)) for y in in_leaves]
                    ts[k] = _basis(i, xa.shape, xa.dtype)
                    _, t_out = jvp_flat(lambda *xs: flat(*xs)[0] if has_aux else flat(*xs), in_leaves, ts)
                    return [instantiate(t) for t in t_out]
                for o, col in enumerate(_over_basis(column, _size(xa.shape))):
                    blocks[o][k] = _jacobian_block(col, typeof(primal_out[o]).shape, xa.shape, True)
        else:
            lin = linearize_flat(flat, in_leaves, has_aux)
            primal_out, out_tree, aux = lin.primal_out, lin.out_tree, lin.aux
            _check_output(primal_out, who, holomorphic)
            blocks = [[None] * len(in_leaves) for _ in primal_out]
            for o, p in enumerate(primal_out):
                pa = typeof(p)

                def row(j, o=o, pa=pa):
                    cts = [_basis(j, pa.shape, pa.dtype) if q == o else zeros(typeof(pp))
                           for q, (pp, nz) in enumerate(zip(primal_out, lin.nonzero)) if nz]
                    by_leaf = dict(zip(lin.diff, lin.transpose(cts)))
                    return [zeros(typeof(x)) if by_leaf.get(k) is None else by_leaf[k]
                            for k, x in enumerate(in_leaves)]
                # (an integer input's block, with allow_int, is zeros of its dtype, as in JAX)
                for k, r in enumerate(_over_basis(row, _size(pa.shape))):
                    blocks[o][k] = _jacobian_block(r, pa.shape, typeof(in_leaves[k]).shape, False)
        rows = [tree_unflatten(in_tree, row) for row in blocks]
        result = tree_unflatten(out_tree, [r[0] if single else r for r in rows])
        return (result, aux) if has_aux else result
    jac_f.__name__ = f"{who}({getattr(fun, '__name__', 'f')})"
    return jac_f


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by forward mode: one ``jvp`` per input element (shape
    ``out.shape + in.shape``). Inputs must be real floating-point (complex with
    ``holomorphic=True``, whose outputs must be complex too)."""
    return _jac_wrap(fun, argnums, has_aux, holomorphic, "jacfwd", "fwd")


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False):
    """The Jacobian of ``fun`` by reverse mode: one ``vjp`` per output element (shape
    ``out.shape + in.shape``); the primal computation runs once. ``allow_int=True`` lets
    integer / bool arguments through (their block is zeros of their dtype, as in JAX)."""
    return _jac_wrap(fun, argnums, has_aux, holomorphic, "jacrev", "rev", allow_int)


#: Catalyst's name for the Jacobian (reverse mode, as ``jacrev``).
jacobian = jacrev


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
            holomorphic: bool = False):
    """The Hessian of a scalar-valued ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


__all__ = ["linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian",
           "float0"]
