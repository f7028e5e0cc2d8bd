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

from ..core.avals import is_complex_dtype, is_inexact_dtype, same_dim
from ..core.errors import api_boundary
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.trace import Tracer, typeof
from .jvp import Zero, _leaf_names, instantiate, jvp_flat
from .partial_eval import linearize_flat
from .transpose import zeros

#: The dtype of the cotangent of an integer or bool input (as JAX's ``float0``): no data.
float0 = np.dtype([("float0", np.void, 0)])


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


def _no_cotangent(x):
    """The cotangent of an integer / bool input: float0 zeros of its shape."""
    shape = typeof(x).shape
    if not all(isinstance(d, int) for d in shape):
        raise TypeError("vjp: an integer or bool input with a dynamic shape has no cotangent; "
                        "close over it (pass it to the function another way) instead")
    return np.zeros(shape, dtype=float0)


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
def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the Jacobian-vector
    product at ``primals`` without re-running ``fun``: the primal computation is done once,
    the linear map is a jaxpr of the tangent operations alone (``doc/autodiff.md``)."""
    _check_fun(fun, "linearize")
    lin, leaves, tree, _ = _linearize(fun, primals, False, "linearize")

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != tree:
            raise TypeError(f"linearize: the tangents' structure {t_tree} differs from the primals' {tree}")
        ts = []
        for i in lin.diff:
            t, p = t_leaves[i], leaves[i]
            ta, pa = _aval(t, "linearize", "a tangent"), typeof(p)
            if not _same_type(ta.strip_weak_type(), pa.strip_weak_type()):
                if not isinstance(t, Tracer) and np.ndim(t) == 0 and pa.ndim == 0:
                    t = np.asarray(t, pa.dtype)
                else:
                    raise TypeError(f"linearize: a tangent of type {ta.str_short()} for a primal of type "
                                    f"{pa.str_short()}")
            ts.append(t)
        outs = lin.apply(ts)
        return tree_unflatten(lin.out_tree, [instantiate(t) for t in outs])

    return tree_unflatten(lin.out_tree, lin.primal_out), f_jvp


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_vjp)`` (plus ``aux`` with ``has_aux``) where ``f_vjp(ct)`` returns
    the cotangents of ``primals`` for an output cotangent ``ct`` (a pytree of ``fun``'s output
    structure): ``ct @ J``. The cotangent of an integer or bool input has dtype ``float0``."""
    _check_fun(fun, "vjp")
    lin, leaves, tree, aux = _linearize(fun, primals, has_aux, "vjp")
    primal_out = tree_unflatten(lin.out_tree, lin.primal_out)

    def f_vjp(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != lin.out_tree:
            raise TypeError(f"vjp: the cotangent's structure {ct_tree} differs from the output's "
                            f"{lin.out_tree}")
        cts = []
        for c, p, nz in zip(ct_leaves, lin.primal_out, lin.nonzero):
            ca, pa = _aval(c, "vjp", "a cotangent"), typeof(p)
            if not _same_type(ca.strip_weak_type(), pa.strip_weak_type()):
                if not isinstance(c, Tracer) and np.ndim(c) == 0 and pa.ndim == 0:
                    c = np.asarray(c, pa.dtype)
                else:
                    raise TypeError(f"vjp: a cotangent of type {ca.str_short()} for an output of type "
                                    f"{pa.str_short()}; it must have the output's shape and dtype")
            if nz:
                cts.append(c)
        in_cts = lin.transpose(cts)
        by_leaf = dict(zip(lin.diff, in_cts))
        out = []
        for i, x in enumerate(leaves):
            if i not in by_leaf:
                out.append(_no_cotangent(x))
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
    single = isinstance(argnums, numbers.Integral)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{who}: argnums must name at least one argument")
    out = []
    for a in nums:
        if not isinstance(a, numbers.Integral):
            raise TypeError(f"{who}: argnums must be integers, got {a!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{who}: argnums {a} is out of range for {nargs} positional arguments")
        out.append(int(a) % nargs)
    return single, tuple(out)


def _check_differentiable(x, where, who, holomorphic=False):
    leaves, _ = tree_flatten(x)
    for leaf in leaves:
        a = _aval(leaf, who, where)
        if not is_inexact_dtype(a.dtype):
            raise TypeError(f"{who}: {where} has type {a.str_short()}; only floating-point (or "
                            "complex) inputs can be differentiated. Use a float array, or leave the "
                            "argument out of argnums")
        if is_complex_dtype(a.dtype) and not holomorphic:
            raise TypeError(f"{who}: {where} is complex ({a.str_short()}); pass holomorphic=True to "
                            "differentiate a holomorphic function of complex inputs")


def _value_and_grad_impl(fun, argnums, has_aux, holomorphic, who, args, kwargs):
    single, nums = _argnums(argnums, len(args), who)
    for i in nums:
        _check_differentiable(args[i], f"argument {i}", who, holomorphic)

    def partial(*dyn):
        full = list(args)
        for i, x in zip(nums, dyn):
            full[i] = x
        return fun(*full, **kwargs)

    res = vjp(partial, *[args[i] for i in nums], has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    out_leaves, _ = tree_flatten(out)
    a = _aval(out, who, "the function's output") if len(out_leaves) == 1 and not isinstance(out, (list, tuple, dict)) else None
    if a is None or a.shape != ():
        got = a.str_short() if a is not None else f"a {type(out).__name__}"
        raise TypeError(f"{who}: the function must return a scalar (a 0-d array), got {got}; use "
                        "vjp or jacrev for a non-scalar output")
    if not is_inexact_dtype(a.dtype) or (is_complex_dtype(a.dtype) and not holomorphic):
        raise TypeError(f"{who}: the function must return a real floating-point scalar, got "
                        f"{a.str_short()}")
    g = f_vjp(np.ones((), a.dtype))
    g = g[0] if single else tuple(g)
    if has_aux:
        return (out, res[2]), g
    return out, g


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
                   holomorphic: bool = False):
    """A function returning ``(fun(*args), grad)`` (``((value, aux), grad)`` with ``has_aux``)."""
    _check_fun(fun, "value_and_grad")

    @api_boundary
    def value_and_grad_f(*args, **kwargs):
        return _value_and_grad_impl(fun, argnums, has_aux, holomorphic, "value_and_grad", args, kwargs)
    value_and_grad_f.__name__ = f"value_and_grad({getattr(fun, '__name__', 'f')})"
    return value_and_grad_f


def grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
         holomorphic: bool = False):
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums``
    (``(grad, aux)`` with ``has_aux``). Works eagerly, under ``qjit`` (a gradient of
    ``f64[n]`` is ``f64[n]``) and composed (``grad(grad(f))``)."""
    _check_fun(fun, "grad")

    @api_boundary
    def grad_f(*args, **kwargs):
        (out, g) = _value_and_grad_impl(fun, argnums, has_aux, holomorphic, "grad", args, kwargs)
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


def _jac_wrap(fun, argnums, has_aux, holomorphic, who, mode):
    _check_fun(fun, who)

    @api_boundary
    def jac_f(*args, **kwargs):
        single, nums = _argnums(argnums, len(args), who)
        for i in nums:
            _check_differentiable(args[i], f"argument {i}", who, holomorphic)
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
            blocks = [[None] * len(in_leaves) for _ in primal_out]
            for o, p in enumerate(primal_out):
                pa = typeof(p)

                def row(j, o=o, pa=pa):
                    cts = [_basis(j, pa.shape, pa.dtype) if q == o else zeros(typeof(pp))
                           for q, (pp, nz) in enumerate(zip(primal_out, lin.nonzero)) if nz]
                    by_leaf = dict(zip(lin.diff, lin.transpose(cts)))
                    return [zeros(typeof(x)) if by_leaf.get(k) is None else by_leaf[k]
                            for k, x in enumerate(in_leaves)]
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
    ``out.shape + in.shape``)."""
    return _jac_wrap(fun, argnums, has_aux, holomorphic, "jacfwd", "fwd")


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by reverse mode: one ``vjp`` per output element (shape
    ``out.shape + in.shape``); the primal computation runs once."""
    return _jac_wrap(fun, argnums, has_aux, holomorphic, "jacrev", "rev")


#: Catalyst's name for the Jacobian (reverse mode, as ``jacrev``).
jacobian = jacrev


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
            holomorphic: bool = False):
    """The Hessian of a scalar-valued ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


__all__ = ["linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian",
           "float0"]
