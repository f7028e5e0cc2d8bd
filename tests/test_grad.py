"""Reverse-mode differentiation (``dynjax.vjp``, ``grad``, ``value_and_grad``, ``linearize``,
``jacfwd``, ``jacrev``, ``jacobian``, ``hessian``).

Every case of test_jvp's catalogue (plus a few programs specific to reverse mode: fan-out,
unused inputs, constant outputs, traced indices, numpy-level shape functions) is checked

* against the exact jvp oracle: the dot-product identity ``<ct, J t> == <J^T ct, t>`` with
  ``J t`` from ``dynjax.jvp`` and ``J^T ct`` from ``dynjax.vjp`` (float64, 1e-10);
* against central finite differences: ``grad(sum(f(x) * w))`` element by element;
* compiled with ``qjit`` over a dynamic axis at sizes 0, 1 and 4 with one trace, the
  compiled results agreeing with the eager ones.

Then ties of max / min / sort, second and third derivatives, Jacobians and Hessians
against analytic values (eager and compiled), and the API: errors, ``has_aux``,
``argnums``, pytrees, integer inputs, ``linearize``. Control flow is not differentiated
here (the Jacobian functions loop with a ``for_loop`` internally, which is).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import hypothesis.extra.numpy as hnp
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from dynjax import grad, jvp, lax, value_and_grad, vjp
from dynjax.core.primitive import transpose_rules
from dynjax.transforms.transpose import UndefinedPrimal, backward_pass

import test_jvp as J   # the case catalogue (module import: its tests are not collected twice)
from test_jvp import Case, away_from, distinct
from helpers import examples

f64 = np.float64


# ----------------------------------------------------------------------------------------------
# Cases: test_jvp's catalogue, plus programs whose reverse mode has its own pitfalls
# ----------------------------------------------------------------------------------------------
def argmin_index(x):
    return jnp.argmin(x)


EXTRA = [
    # cotangents accumulate over several uses; unused inputs and constant outputs get zeros
    Case("fan_out", lambda x: lax.add(lax.mul(x, x), lax.mul(lax.sin(x), lax.mul(x, x)))),
    Case("unused_argument", lambda x, y: lax.sin(x), lambda n: [(n,), (n,)]),
    Case("constant_outputs", lambda x: (lax.sin(x), jnp.ones_like(x), jnp.zeros(3), lax.argmax(x, 0)),
         lambda n: [(n + 1,)]),
    Case("ties_max_self", lambda x, y: (lax.max(x, x), lax.min(lax.mul(x, y), lax.mul(y, x))),
         lambda n: [(n,), (n,)]),
    Case("reduce_max_ties", lambda x: (lax.reduce_max(lax.concatenate([x, x], 1), (1,)),
                                       lax.reduce_min(lax.concatenate([x, x], 0), (0,))),
         lambda n: [(n, 3)], valid=lambda x: distinct(x, 0) and distinct(x, 1)),
    Case("convert_f32_roundtrip", lambda x: lax.convert_element_type(
        lax.mul(lax.convert_element_type(x, np.float32), np.float32(2)), f64), lambda n: [(n,)]),
    # traced (data-dependent, clamped) start indices
    Case("dynamic_slice_traced_index", lambda x: lax.dynamic_slice(x, (argmin_index(x),), (2,)),
         lambda n: [(n + 3,)], valid=lambda x: distinct(x, 0)),
    Case("dynamic_update_slice_traced_index",
         lambda x, u: lax.dynamic_update_slice(lax.sin(x), lax.mul(u, u), (argmin_index(x),)),
         lambda n: [(n + 3,), (2,)], dyn=[0, None], valid=lambda x, u: distinct(x, 0)),
    # numpy-level functions
    Case("dot_general_scalar_operand", lambda s, x: (lax.dot_general(x, s, (((), ()), ((), ()))),
                                                     lax.dot_general(s, x, (((), ()), ((), ())))),
         lambda n: [(), (n,)]),
    Case("jnp_matmul_vec", lambda x, v: jnp.matmul(x, v), lambda n: [(n, 3), (3,)], dyn=[0, None]),
    Case("jnp_dot_over_n", lambda x, y: (jnp.dot(x[:, 0], y[:, 1]), jnp.vdot(x, y), x.T @ x, x.T @ y),
         lambda n: [(n, 3), (n, 3)]),
    Case("jnp_outer_broadcast", lambda x, y: (jnp.outer(x, y), x[:, None] * y[None, :] + y),
         lambda n: [(n,), (3,)], dyn=[0, None]),
    Case("jnp_reductions", lambda x: (jnp.sum(x, axis=1), jnp.mean(x, axis=1), jnp.prod(x, axis=0),
                                      jnp.max(x, axis=1), jnp.min(x, axis=1), jnp.sum(x ** 2)),
         lambda n: [(n, 3)], valid=lambda x: distinct(x, 0) and distinct(x, 1)),
    Case("jnp_indexing", lambda x: (x[1:], x[::-1], x[:, 1], x[:, ::2], x[-1:, None]),
         lambda n: [(n, 3)]),
    Case("jnp_shape_ops", lambda x: (jnp.transpose(x), jnp.reshape(x, (-1,)), jnp.flip(x, 0),
                                     jnp.expand_dims(x, 0), jnp.swapaxes(x, 0, 1), jnp.ravel(x)),
         lambda n: [(n, 3)]),
    Case("jnp_concatenate_stack", lambda x, y: (jnp.concatenate([x, y, x]), jnp.stack([x, y], axis=1),
                                                jnp.hstack([y, x])), lambda n: [(n,), (n,)]),
    Case("jnp_pad_cumsum_sort", lambda x: (jnp.pad(x, ((1, 2), (0, 1))), jnp.cumsum(x, axis=0),
                                           jnp.sort(x, axis=0), jnp.cumsum(x), jnp.cumprod(x, axis=1)),
         lambda n: [(n, 3)], valid=lambda x: distinct(x, 0)),
    Case("pad_negative_interior", lambda x, v: (lax.pad(x, v, ((0, 0, 0), (-1, 2, 1))),
                                                lax.pad(x, v, ((0, 0, 0), (2, -3, 2)))),
         lambda n: [(n, 4), ()]),
    Case("derived_sizes", lambda x: (jnp.concatenate([x, x[1:], x[::-1]]), jnp.reshape(jnp.ravel(jnp.outer(x, x)), (-1,)),
                                     jnp.cumsum(x[::-1] * x), jnp.diff(x), jnp.roll(x, 1)),
         lambda n: [(n,)]),
    Case("jnp_clip_where_power", lambda x: jnp.clip(x, -1.0, 1.0) * jnp.where(x > 0.5, x ** 3, -x)
         + jnp.square(x) / (1.0 + x ** 2), lambda n: [(n,)],
         valid=lambda x: away_from(x, [-1.0, 1.0, 0.5])),
]

CASES = J.CASES + EXTRA
CASE_IDS = [case.name for case in CASES]
NO_FD = {"convert_f32_roundtrip"}   # float32 rounding swamps a 1e-6 step
TOL = {"convert_f32_roundtrip": 1e-6}   # its tangents and cotangents are rounded to float32


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------
def leaves(x):
    return dynjax.tree_flatten(x)[0]


def inexact(x):
    return np.issubdtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype, np.inexact)


def masked(o):
    """``o`` with its non-finite entries (the max of an empty axis, a mean over nothing)
    replaced by zeros; the replaced entries get a zero cotangent."""
    return jnp.where(jnp.isfinite(o), o, 0.0)


def weighted_loss(fn, weights):
    """``sum_o sum(f(x)_o * w_o)`` over the floating-point outputs."""
    def loss(*xs):
        total = f64(0.0)
        for o, w in zip(leaves(fn(*xs)), weights):
            if w is not None:
                total = total + jnp.sum(masked(o) * w)
        return total
    return loss


def sin_loss(fn):
    """``sum_o sum(sin(f(x)_o))``: its gradient is ``vjp`` with the cotangent ``cos(f(x))``;
    the weights follow the output's (dynamic) shape, so the same program runs at every size."""
    def loss(*xs):
        total = f64(0.0)
        for o in leaves(fn(*xs)):
            if inexact(o):
                total = total + jnp.sum(jnp.sin(masked(o)))
        return total
    return loss


def cos_cotangent(out):
    """The cotangent ``cos(out)`` (zero where ``out`` is not finite; zeros for integer
    outputs): the output cotangent of ``sin_loss``."""
    cts = [jnp.where(jnp.isfinite(o), jnp.cos(masked(o)), 0.0) if inexact(o) else jnp.zeros_like(o)
           for o in leaves(out)]
    return dynjax.tree_unflatten(dynjax.tree_flatten(out)[1], cts)


def dot_identity(cts, jt, ins, ts, outs, tol=1e-10, msg=""):
    """``<ct, J t> == <J^T ct, t>`` over the finite floating-point outputs."""
    lhs, scale = 0.0, 1.0
    for c, t, o in zip(leaves(cts), leaves(jt), leaves(outs)):
        c, t, o = np.asarray(c), np.asarray(t), np.asarray(o)
        if not np.issubdtype(o.dtype, np.inexact):
            continue
        ok = np.isfinite(o)
        lhs += np.sum(c[ok] * t[ok])
        scale += np.sum(np.abs(c[ok] * t[ok]))
    rhs = 0.0
    for c, t in zip(leaves(ins), leaves(ts)):
        c = np.asarray(c)
        rhs += np.sum(c * t)
        scale += np.sum(np.abs(c * t))
    assert abs(lhs - rhs) <= tol * scale, f"{msg}: <ct, J t> = {lhs!r} but <J^T ct, t> = {rhs!r}"


def check_cotangent_types(cts, primals, msg=""):
    for c, p in zip(cts, primals):
        c = np.asarray(c)
        assert c.shape == np.shape(p) and c.dtype == np.asarray(p).dtype, (msg, c.shape, c.dtype, np.shape(p))


# ----------------------------------------------------------------------------------------------
# 1. vjp transposes jvp exactly
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_vjp_transposes_jvp(case):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    for n in (0, 1, 2, 5):
        for _ in range(2):
            primals, tangents = J.sample(case, n, rng)
            out, jt = jvp(case.fn, tuple(primals), tuple(tangents))
            out_leaves, tree = dynjax.tree_flatten(out)
            # a zero cotangent where the output is not finite (a mean over nothing)
            cts = [np.where(np.isfinite(o), rng.uniform(-1, 1, np.shape(o)), 0.0) if inexact(o)
                   else np.zeros_like(o) for o in out_leaves]
            out2, pullback = vjp(case.fn, *primals)
            for a, b in zip(leaves(out2), out_leaves):
                np.testing.assert_array_equal(a, b)
            ins = pullback(dynjax.tree_unflatten(tree, cts))
            assert isinstance(ins, tuple) and len(ins) == len(primals)
            check_cotangent_types(ins, primals, f"{case.name} n={n}")
            dot_identity(cts, jt, ins, tangents, out_leaves, TOL.get(case.name, 1e-10), f"{case.name} n={n}")


def output_cotangents(out, rng):
    return dynjax.tree_map(lambda o: np.where(np.isfinite(o), rng.uniform(-1, 1, np.shape(o)), 0.0)
                           if inexact(o) else np.zeros_like(o), out)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_transpose_of_the_vjp_is_the_jvp(case):
    """The pullback is linear in the cotangent; its own vjp (a transpose of transposes) is
    the Jacobian-vector product again: ``vjp(ct -> J^T ct)(t) == J t``."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()) + 1)
    for n in (0, 1, 3):
        primals, tangents = J.sample(case, n, rng)
        out, pullback = vjp(case.fn, *primals)
        cts = output_cotangents(out, rng)
        _, double = vjp(pullback, cts)
        (jt_again,) = double(tuple(tangents))
        _, jt = jvp(case.fn, tuple(primals), tuple(tangents))
        for a, b, o in zip(leaves(jt_again), leaves(jt), leaves(out)):
            if not inexact(o):
                continue
            ok = np.isfinite(o)
            assert np.shape(a) == np.shape(o) and np.asarray(a).dtype == np.asarray(o).dtype, case.name
            np.testing.assert_allclose(np.asarray(a)[ok], np.asarray(b)[ok], rtol=TOL.get(case.name, 1e-10),
                                       atol=1e-12, err_msg=f"{case.name} at n={n}")


def test_every_transpose_rule_runs_in_the_cases(monkeypatch):
    used = set()
    for p, rule in list(transpose_rules.items()):
        monkeypatch.setitem(transpose_rules, p,
                            lambda *a, _p=p, _r=rule, **kw: (used.add(_p), _r(*a, **kw))[1])
    rng = np.random.default_rng(0)
    for case in CASES:
        primals, _ = J.sample(case, 3, rng)
        out, pullback = vjp(case.fn, *primals)
        vjp(pullback, output_cotangents(out, rng))[1](tuple(primals))   # and a transpose of transposes
    linear = {p.name for p in transpose_rules if any(p is q for q in J.catalogue())}
    assert linear >= {"add", "mul", "dot_general", "reduce_sum", "broadcast_in_dim", "sort", "pad",
                      "dynamic_update_slice", "concatenate", "cumsum", "select_n", "gather", "scatter"}
    # sub's jvp is an add of a neg, so no linearized program holds a sub: checked directly below
    assert not linear - {p.name for p in used} - {"sub"}, linear - {p.name for p in used}


def test_sub_transpose_rule():
    closed = dynjax.make_jaxpr(lax.sub)(np.ones(3), f64(1.0))
    ct = np.array([1.0, 2.0, 3.0])
    vec, scalar = UndefinedPrimal(dynjax.ShapedArray((3,), f64)), UndefinedPrimal(dynjax.ShapedArray((), f64))
    a, b = backward_pass(closed.jaxpr, [vec, scalar], [ct])
    np.testing.assert_array_equal(a, ct)
    assert np.shape(b) == () and b == -6.0
    a, b = backward_pass(closed.jaxpr, [np.ones(3), scalar], [ct])
    assert a is None and b == -6.0


# ----------------------------------------------------------------------------------------------
# 2. grad against central finite differences
# ----------------------------------------------------------------------------------------------
def fd_gradient(loss, primals, eps=1e-6):
    grads = []
    for k, x in enumerate(primals):
        g = np.zeros(np.shape(x))
        for i in np.ndindex(*np.shape(x)):
            plus = [np.array(p, copy=True) for p in primals]
            minus = [np.array(p, copy=True) for p in primals]
            plus[k][i] += eps
            minus[k][i] -= eps
            g[i] = (float(loss(*plus)) - float(loss(*minus))) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("case", [c for c in CASES if c.name not in NO_FD],
                         ids=[c.name for c in CASES if c.name not in NO_FD])
@settings(max_examples=examples(6), suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_grad_against_finite_differences(case, data):
    n = data.draw(st.sampled_from([0, 1, 2, 4]), label="n")
    shapes = case.shapes(n)
    primals = [data.draw(J.arrays(s, lo, hi), label="primal") for s, lo, hi in zip(shapes, case.lo, case.hi)]
    assume(case.valid(*primals))
    outs = leaves(case.fn(*primals))
    weights = [data.draw(J.arrays(np.shape(o), -1.0, 1.0), label="w") if inexact(o) else None for o in outs]
    loss = weighted_loss(case.fn, weights)
    value, g = value_and_grad(loss, argnums=tuple(range(len(primals))))(*primals)
    np.testing.assert_allclose(value, loss(*primals), rtol=1e-13, atol=1e-13)
    check_cotangent_types(g, primals, case.name)
    for got, want in zip(g, fd_gradient(loss, primals)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{case.name} at n={n}")


# ----------------------------------------------------------------------------------------------
# 3. Compiled over a dynamic axis: one trace per group, sizes 0, 1 and 4, equal to eager
# ----------------------------------------------------------------------------------------------
GROUPS = [CASES[i:i + 16] for i in range(0, len(CASES), 16)]


def group_program(cases):
    counts = [len(case.shapes(3)) for case in cases]

    def program(*flat):
        outs, k = [], 0
        for case, m in zip(cases, counts):
            xs, ts = flat[k:k + m], flat[k + m:k + 2 * m]
            k += 2 * m
            out, jt = jvp(case.fn, xs, ts)
            out2, pullback = vjp(case.fn, *xs)
            ins = pullback(cos_cotangent(out2))
            g = grad(sin_loss(case.fn), argnums=tuple(range(m)))(*xs)
            outs.append((out, jt, ins, g, cos_cotangent(out)))
        return outs
    return program, counts


def check_compiled_case(case, res, ref, xs, ts, msg):
    out, jt, ins, g, ct = res
    check_cotangent_types(ins, xs, msg)
    check_cotangent_types(g, xs, msg)
    dot_identity(ct, jt, ins, ts, out, TOL.get(case.name, 1e-10), msg)
    for a, b in zip(ins, g):   # grad of sum(sin(f)) is the vjp of cos(f)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=msg)
    for a, b in zip(leaves(res), leaves(ref)):   # compiled == eager
        a, b = float0_as_zeros(a, b), float0_as_zeros(b, a)
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype, \
            f"{msg}: compiled {np.shape(a)} but eager {np.shape(b)}"
        if a.dtype != dynjax.float0:   # float0 arrays hold no data
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=msg)


def float0_as_zeros(a, like):
    """The float0 tangent of an integer output (eager, static shape) as the zeros of the
    integer dtype it is under qjit with a dynamic shape (float0 has static shapes only)."""
    a, like = np.asarray(a), np.asarray(like)
    if a.dtype == dynjax.float0 and like.dtype != dynjax.float0:
        return np.zeros(a.shape, like.dtype)
    return a


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_qjit_dynamic_axis(group):
    cases = GROUPS[group]
    program, counts = group_program(cases)
    specs = []
    for j, case in enumerate(cases):   # one dynamic size per case (some have n + 3 elements)
        specs += [None if a is None else {a: f"n{j}"} for a in case.dyn] * 2   # primals, tangents
    compiled = dynjax.qjit(program, abstracted_axes=tuple(specs))
    rng = np.random.default_rng(100 + group)
    failures = []   # every failing case of the group, not only the first
    for n in (0, 1, 4):
        args = []
        for case in cases:
            primals, tangents = J.sample(case, n, rng)
            args += primals + tangents
        got = compiled(*args)
        assert compiled.jaxpr is not None
        want = program(*args)   # the same program, eagerly
        k = 0
        for case, m, res, ref in zip(cases, counts, got, want):
            xs, ts = args[k:k + m], args[k + m:k + 2 * m]
            k += 2 * m
            try:
                check_compiled_case(case, res, ref, xs, ts, f"{case.name} at n={n}")
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "\n\n".join(failures)
    assert compiled.cache_info()["traces"] == 1
    dynjax.check_jaxpr(compiled.jaxpr.jaxpr)


def test_gradient_types_share_the_primal_dims():
    closed = dynjax.make_jaxpr(grad(lambda x, w: jnp.sum(jnp.tanh(x @ w)), argnums=(0, 1)),
                               abstracted_axes=({0: "n"}, None))(np.ones((3, 2)), np.ones((2, 4)))
    dynjax.check_jaxpr(closed.jaxpr)
    n = closed.jaxpr.invars[0]
    gx, gw = closed.jaxpr.outvars
    assert gx.aval.shape[0] is n and gx.aval.shape[1] == 2
    assert gw.aval.shape == (2, 4)


# ----------------------------------------------------------------------------------------------
# 4. Ties, special points
# ----------------------------------------------------------------------------------------------
def jvp_gradient(f, x):
    """The exact gradient of scalar ``f`` at ``x``, one jvp per basis vector."""
    x = np.asarray(x, f64)
    g = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[i] = 1.0
        g[i] = jvp(f, (x,), (e,))[1]
    return g


TIES = [
    ("max", lambda x: jnp.max(x), [3.0, 1.0, 3.0], [0.5, 0.0, 0.5]),
    ("max_all_equal", lambda x: jnp.max(x), [2.0, 2.0, 2.0, 2.0], [0.25] * 4),
    ("min_axis1", lambda x: jnp.sum(jnp.min(jnp.reshape(x, (-1, 3)), axis=1) * jnp.arange(1.0, 3.0)),
     [1.0, 1.0, 5.0, 0.0, 4.0, 0.0], [0.5, 0.5, 0.0, 1.0, 0.0, 1.0]),
    ("maximum", lambda x: jnp.sum(jnp.maximum(x, x[::-1]) * jnp.array([1.0, 2.0, 3.0])),
     [1.0, 7.0, 1.0], [2.0, 2.0, 2.0]),
    ("minimum_scalar", lambda x: jnp.sum(jnp.minimum(x, 2.0)), [2.0, 1.0, 3.0], [0.5, 1.0, 0.0]),
    ("sort", lambda x: jnp.sum(jnp.sort(x) * jnp.array([10.0, 20.0, 30.0, 40.0])), [1.0, 1.0, 0.0, 1.0],
     [20.0, 30.0, 10.0, 40.0]),
]


@pytest.mark.parametrize("name,f,x,want", TIES, ids=[t[0] for t in TIES])
def test_ties_agree_with_jvp(name, f, x, want):
    x = np.array(x)
    g = grad(f)(x)
    np.testing.assert_allclose(g, want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(g, jvp_gradient(f, x), rtol=1e-15, atol=0)
    np.testing.assert_allclose(dynjax.qjit(grad(f))(x), want, rtol=1e-15, atol=0)


def test_max_ties_compiled_dynamic():
    f = dynjax.qjit(grad(lambda x: jnp.max(x) + jnp.min(x)), abstracted_axes={0: "n"})
    for x, want in [([], []), ([4.0], [2.0]), ([1.0, 5.0, 5.0, 1.0], [0.5, 0.5, 0.5, 0.5]),
                    ([3.0, 3.0, 3.0], [2 / 3] * 3), ([0.0, 2.0, 1.0, 2.0, 0.0, 0.0], [1 / 3, 0.5, 0, 0.5, 1 / 3, 1 / 3])]:
        np.testing.assert_allclose(f(np.array(x)), want, rtol=1e-15, atol=0)
    assert f.cache_info()["traces"] == 1


def test_special_points():
    np.testing.assert_allclose(grad(lambda x: jnp.sum(jnp.abs(x)))(np.array([0.0, -2.0, 3.0])), [1.0, -1.0, 1.0])
    np.testing.assert_allclose(grad(lambda x: jnp.sum(x ** 2.0))(np.array([0.0, 3.0])), [0.0, 6.0])
    np.testing.assert_allclose(grad(lambda x: jnp.prod(x))(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])
    np.testing.assert_allclose(grad(lambda x: jnp.prod(x))(np.array([0.0, 0.0, 3.0])), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(grad(lambda x: jnp.sum(jnp.sqrt(x * x + 1.0)))(np.array([0.0])), [0.0])


# ----------------------------------------------------------------------------------------------
# 5. Higher derivatives
# ----------------------------------------------------------------------------------------------
def sech2(x):
    return 1.0 / np.cosh(x) ** 2


SECOND = [
    (jnp.sin, lambda x: -np.sin(x)),
    (jnp.exp, np.exp),
    (lambda x: x ** 3, lambda x: 6 * x),
    (jnp.tanh, lambda x: -2 * np.tanh(x) * sech2(x)),
    (lambda x: x ** 2 * jnp.sin(x), lambda x: 2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x)),
    (lambda x: jnp.log1p(x * x), lambda x: 2 * (1 - x * x) / (1 + x * x) ** 2),
]


@given(x=st.floats(-2.5, 2.5, allow_subnormal=False))
@settings(max_examples=examples(15))
def test_second_derivatives(x):
    for f, d2 in SECOND:
        np.testing.assert_allclose(grad(grad(f))(x), d2(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad(grad(grad(jnp.sin)))(x), -np.cos(x), rtol=1e-12, atol=1e-12)
    # forward over reverse and reverse over forward
    d_fwd = lambda f: (lambda x: jvp(f, (x,), (jnp.ones_like(x),))[1])
    np.testing.assert_allclose(d_fwd(grad(jnp.tanh))(x), -2 * np.tanh(x) * sech2(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad(d_fwd(jnp.exp))(x), np.exp(x), rtol=1e-12)
    # mixed partials of x^2 y^3
    h = lambda x, y: x ** 2 * y ** 3
    y = 0.5 - x / 3
    np.testing.assert_allclose(grad(grad(h, argnums=1), argnums=0)(x, y), 6 * x * y ** 2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad(grad(h, argnums=0), argnums=1)(x, y), 6 * x * y ** 2, rtol=1e-12, atol=1e-12)


def test_second_derivatives_compiled_dynamic():
    def elementwise_d2(f):
        return grad(lambda x: jnp.sum(grad(lambda x: jnp.sum(f(x)))(x)))

    def program(x):
        return [elementwise_d2(f)(x) for f, _ in SECOND]

    compiled = dynjax.qjit(program, abstracted_axes={0: "n"})
    for n in (0, 1, 4):
        x = np.linspace(-1.5, 2.0, n)
        got, eager = compiled(x), program(x)
        for (f, d2), g, e in zip(SECOND, got, eager):
            np.testing.assert_allclose(g, d2(x), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13)
    assert compiled.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# 6. Jacobians and Hessians
# ----------------------------------------------------------------------------------------------
def a_sin(a, x):
    return a @ jnp.sin(x)


def sin_times_sum(x):
    return jnp.sin(x) * jnp.sum(x)


def cubes(x):
    return jnp.sum(x ** 3)


def sin_sum_times_sum(x):
    return jnp.sum(jnp.sin(x)) * jnp.sum(x)


def analytic(x, a):
    s = np.sum(x)
    return {
        "a_sin": a * np.cos(x)[None, :],
        "sin_times_sum": np.diag(np.cos(x) * s) + np.outer(np.sin(x), np.ones_like(x)),
        "cubes": np.diag(6 * x),
        "sin_sum_times_sum": np.diag(-np.sin(x) * s) + np.cos(x)[:, None] + np.cos(x)[None, :],
    }


JAC_FNS = {
    "jacfwd": lambda a, x: [dynjax.jacfwd(a_sin, argnums=1)(a, x), dynjax.jacfwd(sin_times_sum)(x)],
    "jacrev": lambda a, x: [dynjax.jacrev(a_sin, argnums=1)(a, x), dynjax.jacrev(sin_times_sum)(x)],
    "jacobian": lambda a, x: [dynjax.jacobian(a_sin, argnums=1)(a, x), dynjax.jacobian(sin_times_sum)(x)],
    "hessian": lambda a, x: [dynjax.hessian(cubes)(x), dynjax.hessian(sin_sum_times_sum)(x)],
}
JAC_NAMES = {"jacfwd": ("a_sin", "sin_times_sum"), "jacrev": ("a_sin", "sin_times_sum"),
             "jacobian": ("a_sin", "sin_times_sum"), "hessian": ("cubes", "sin_sum_times_sum")}


def jac_inputs(n):
    x = np.linspace(-1.0, 1.5, n)
    a = np.arange(3.0 * n).reshape(3, n) / 4 - 1
    return a, x


@pytest.mark.parametrize("kind", sorted(JAC_FNS))
def test_jacobians_eager(kind):
    for n in (0, 1, 4):
        a, x = jac_inputs(n)
        want = analytic(x, a)
        for name, got in zip(JAC_NAMES[kind], JAC_FNS[kind](a, x)):
            assert np.shape(got) == want[name].shape, (kind, name, n)
            np.testing.assert_allclose(got, want[name], rtol=1e-12, atol=1e-14, err_msg=f"{kind} {name} n={n}")


@pytest.mark.parametrize("kind", sorted(JAC_FNS))
def test_jacobians_compiled_dynamic(kind):
    compiled = dynjax.qjit(JAC_FNS[kind], abstracted_axes=({1: "n"}, {0: "n"}))
    for n in (0, 1, 4):
        a, x = jac_inputs(n)
        want = analytic(x, a)
        for name, got in zip(JAC_NAMES[kind], compiled(a, x)):
            assert np.shape(got) == want[name].shape, (kind, name, n)
            np.testing.assert_allclose(got, want[name], rtol=1e-12, atol=1e-14, err_msg=f"{kind} {name} n={n}")
    assert compiled.jaxpr is not None
    assert compiled.cache_info()["traces"] == 1


def test_jacobian_pytrees_and_hessian_of_two_arguments():
    x, y = np.array([0.5, -1.0]), np.array([2.0, 1.0, 3.0])
    jx, jy = dynjax.jacrev(lambda x, y: jnp.outer(x, y), argnums=(0, 1))(x, y)
    assert jx.shape == (2, 3, 2) and jy.shape == (2, 3, 3)
    np.testing.assert_allclose(jx, np.einsum("ik,j->ijk", np.eye(2), y))
    np.testing.assert_allclose(jy, np.einsum("i,jk->ijk", x, np.eye(3)))
    jf = dynjax.jacfwd(lambda p: {"s": jnp.sin(p["u"]), "t": p["u"] * p["v"]})({"u": x, "v": x[::-1]})
    np.testing.assert_allclose(jf["s"]["u"], np.diag(np.cos(x)))
    np.testing.assert_allclose(jf["s"]["v"], np.zeros((2, 2)))
    np.testing.assert_allclose(jf["t"]["u"], np.diag(x[::-1]))
    np.testing.assert_allclose(jf["t"]["v"], np.diag(x))
    h = dynjax.hessian(lambda x, y: jnp.sum(x) ** 2 * jnp.sum(y * y), argnums=(0, 1))(x, y)
    sx, syy = np.sum(x), np.sum(y * y)
    np.testing.assert_allclose(h[0][0], np.full((2, 2), 2 * syy))
    np.testing.assert_allclose(h[0][1], np.tile(4 * sx * y, (2, 1)))
    np.testing.assert_allclose(h[1][0], np.tile(4 * sx * y[:, None], (1, 2)))
    np.testing.assert_allclose(h[1][1], 2 * sx ** 2 * np.eye(3))


# ----------------------------------------------------------------------------------------------
# 7. Gradients over random shapes (hypothesis): transposes and reductions, analytic
# ----------------------------------------------------------------------------------------------
@st.composite
def shaped(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    x = draw(J.arrays(shape, -2.0, 2.0))
    perm = draw(st.permutations(range(len(shape))))
    axes = draw(st.lists(st.sampled_from(range(len(shape))), unique=True) if shape else st.just([]))
    return x, tuple(perm), tuple(sorted(axes))


@given(args=shaped(), data=st.data())
@settings(max_examples=examples(25), suppress_health_check=list(HealthCheck))
def test_grad_over_shapes(args, data):
    x, perm, axes = args
    # transpose: d/dx sum(w * transpose(x sin x)) = (sin x + x cos x) * transpose^-1(w)
    w = data.draw(J.arrays(np.transpose(x, perm).shape, -1.0, 1.0), label="w")
    g = grad(lambda x: jnp.sum(w * jnp.transpose(x * jnp.sin(x), perm)))(x)
    want = (np.sin(x) + x * np.cos(x)) * np.transpose(w, np.argsort(perm))
    np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-14)
    # reductions over ``axes``: sum of squares and mean
    v = data.draw(J.arrays(np.sum(x, axis=axes).shape, -1.0, 1.0), label="v")
    g = grad(lambda x: jnp.sum(v * jnp.sum(x * x, axis=axes)))(x)
    np.testing.assert_allclose(g, 2 * x * np.expand_dims(v, axes), rtol=1e-13, atol=1e-14)
    count = int(np.prod([x.shape[a] for a in axes]))
    if count:
        g = grad(lambda x: jnp.sum(v * jnp.mean(x, axis=axes)))(x)
        np.testing.assert_allclose(g, np.broadcast_to(np.expand_dims(v, axes), x.shape) / count, rtol=1e-13)
    # reshape to a flat vector and a broadcast back
    u = data.draw(J.arrays((x.size,), -1.0, 1.0), label="u")
    g = grad(lambda x: jnp.sum(u * jnp.reshape(x, (-1,)) ** 2) + jnp.sum(jnp.broadcast_to(x, (2,) + x.shape)))(x)
    np.testing.assert_allclose(g, 2 * x * u.reshape(x.shape) + 2.0, rtol=1e-13, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# 8. The API: value_and_grad, has_aux, argnums, pytrees, integer inputs, linearize, errors
# ----------------------------------------------------------------------------------------------
def test_value_and_grad():
    x = np.array([0.5, -1.0, 2.0])
    v, g = value_and_grad(lambda x: jnp.sum(jnp.exp(x) * x))(x)
    np.testing.assert_allclose(v, np.sum(np.exp(x) * x), rtol=1e-15)
    np.testing.assert_allclose(g, np.exp(x) * (1 + x), rtol=1e-15)
    np.testing.assert_allclose(grad(jnp.sin)(1.0), np.cos(1.0), rtol=1e-15)   # a Python float
    g32 = grad(lambda x: jnp.sum(jnp.sin(x)))(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, np.cos(x), rtol=1e-6)
    compiled = dynjax.qjit(value_and_grad(lambda x: jnp.sum(jnp.exp(x) * x)), abstracted_axes={0: "n"})
    for n in (0, 1, 3):
        x = np.linspace(-1, 1, n)
        v, g = compiled(x)
        np.testing.assert_allclose(v, np.sum(np.exp(x) * x), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(g, np.exp(x) * (1 + x), rtol=1e-14)
    assert compiled.cache_info()["traces"] == 1


def test_has_aux():
    x = np.array([1.0, 2.0])

    def f(x):
        y = jnp.sin(x)
        return jnp.sum(y * y), {"y": y, "n": x.shape[0]}
    g, aux = grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(aux["y"], np.sin(x))
    assert aux["n"] == 2
    (v, aux), g = value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(v, np.sum(np.sin(x) ** 2))
    np.testing.assert_allclose(aux["y"], np.sin(x))
    out, pullback, aux = vjp(lambda x: (jnp.cos(x), x * 3), x, has_aux=True)
    np.testing.assert_allclose(aux, 3 * x)
    np.testing.assert_allclose(pullback(np.ones(2))[0], -np.sin(x))
    # aux may be computed from differentiated values inside grad of grad and under qjit
    gg = grad(lambda x: grad(lambda y: (y ** 3, y * 2), has_aux=True)(x)[0])(1.5)
    np.testing.assert_allclose(gg, 6 * 1.5)
    compiled = dynjax.qjit(grad(f, has_aux=True), abstracted_axes={0: "n"})
    for n in (0, 1, 3):
        x = np.linspace(0, 1, n)
        g, aux = compiled(x)
        np.testing.assert_allclose(g, np.sin(2 * x), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(aux["y"], np.sin(x))
    assert compiled.cache_info()["traces"] == 1
    with pytest.raises(TypeError, match="pair"):
        grad(lambda x: jnp.sum(x), has_aux=True)(x)


def test_argnums_and_integer_arguments():
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])

    def f(x, k, y):
        return jnp.sum(x * y * k)
    gx, gy = grad(f, argnums=(0, 2))(x, 3, y)
    np.testing.assert_allclose(gx, 3 * y)
    np.testing.assert_allclose(gy, 3 * x)
    np.testing.assert_allclose(grad(f, argnums=-1)(x, np.array([1, 2]), y), x * [1, 2])
    (g,) = grad(f, argnums=(2,))(x, 2, y)
    np.testing.assert_allclose(g, 2 * x)
    compiled = dynjax.qjit(grad(f, argnums=(0, 2)), abstracted_axes=({0: "n"}, None, {0: "n"}))
    for n in (0, 1, 3):
        a, b = np.linspace(0, 1, n), np.linspace(2, 1, n)
        gx, gy = compiled(a, 2.0, b)
        np.testing.assert_allclose(gx, 2 * b)
        np.testing.assert_allclose(gy, 2 * a)
    assert compiled.cache_info()["traces"] == 1
    # vjp: an integer input's cotangent is float0 zeros
    _, pullback = vjp(lambda x, k: x * k, x, np.array([2, 5]))
    cx, ck = pullback(np.ones(2))
    np.testing.assert_allclose(cx, [2.0, 5.0])
    assert ck.dtype == dynjax.float0 and ck.shape == (2,)


def test_pytree_arguments():
    params = {"w": np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]]), "b": np.array([0.1, -0.2])}
    xs = (np.array([1.0, -2.0, 0.5]), np.array([2.0, 1.0]))

    def loss(p, batch):
        u, v = batch
        y = jnp.tanh(u @ p["w"] + p["b"])
        return jnp.sum((y - v) ** 2)

    gp, gb = grad(loss, argnums=(0, 1))(params, xs)
    assert set(gp) == {"w", "b"} and isinstance(gb, tuple) and len(gb) == 2
    u, v = xs
    y = np.tanh(u @ params["w"] + params["b"])
    dz = 2 * (y - v) * (1 - y ** 2)
    np.testing.assert_allclose(gp["w"], np.outer(u, dz), rtol=1e-14)
    np.testing.assert_allclose(gp["b"], dz, rtol=1e-14)
    np.testing.assert_allclose(gb[0], params["w"] @ dz, rtol=1e-14)
    np.testing.assert_allclose(gb[1], -2 * (y - v), rtol=1e-14)
    val, gp2 = value_and_grad(loss)(params, xs)
    np.testing.assert_allclose(val, np.sum((y - v) ** 2), rtol=1e-14)
    np.testing.assert_allclose(gp2["w"], gp["w"], rtol=1e-15)
    # vjp with pytree in- and outputs
    out, pullback = vjp(lambda p: {"s": jnp.sum(p["w"], axis=0), "t": (p["b"] * 2,)}, params)
    (ct,) = pullback({"s": np.array([1.0, 2.0]), "t": (np.array([3.0, 4.0]),)})
    np.testing.assert_allclose(ct["w"], np.tile([1.0, 2.0], (3, 1)))
    np.testing.assert_allclose(ct["b"], [6.0, 8.0])
    # compiled: a pytree argument whose leaves share the dynamic axis
    compiled = dynjax.qjit(grad(lambda p: jnp.sum(p[0] * jnp.sin(p[1]))), abstracted_axes=({0: "n"},))
    for n in (0, 1, 3):
        a, b = np.linspace(0, 1, n), np.linspace(-1, 1, n)
        ga, gb = compiled((a, b))
        np.testing.assert_allclose(ga, np.sin(b), rtol=1e-14)
        np.testing.assert_allclose(gb, a * np.cos(b), rtol=1e-14)
    assert compiled.cache_info()["traces"] == 1


def test_linearize():
    f = lambda x, y: (jnp.sin(x) * y, jnp.sum(x ** 2))
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.0, 2.0, -0.5])
    out, f_jvp = dynjax.linearize(f, x, y)
    np.testing.assert_allclose(out[0], np.sin(x) * y)
    rng = np.random.default_rng(3)
    for _ in range(3):
        tx, ty = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        lin = f_jvp(tx, ty)
        _, exact = jvp(f, (x, y), (tx, ty))
        np.testing.assert_allclose(lin[0], np.cos(x) * y * tx + np.sin(x) * ty, rtol=1e-14)
        np.testing.assert_allclose(lin[1], np.sum(2 * x * tx), rtol=1e-14)
        for a, b in zip(leaves(lin), leaves(exact)):
            np.testing.assert_allclose(a, b, rtol=1e-14)

    def program(x, y, tx, ty):
        return dynjax.linearize(f, x, y)[1](tx, ty)
    compiled = dynjax.qjit(program, abstracted_axes={0: "n"})
    for n in (0, 1, 4):
        x, y, tx, ty = (rng.uniform(-1, 1, n) for _ in range(4))
        a, b = compiled(x, y, tx, ty)
        np.testing.assert_allclose(a, np.cos(x) * y * tx + np.sin(x) * ty, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(b, np.sum(2 * x * tx), rtol=1e-13, atol=1e-15)
    assert compiled.cache_info()["traces"] == 1


def test_errors():
    x = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="scalar"):
        grad(jnp.sin)(x)
    with pytest.raises(TypeError, match="scalar"):
        grad(lambda x: (jnp.sum(x), jnp.sum(x)))(x)
    with pytest.raises(TypeError, match="scalar"):
        dynjax.qjit(grad(jnp.sin), abstracted_axes={0: "n"})(x)
    with pytest.raises(TypeError, match="real- or complex-valued inputs.*allow_int"):
        grad(lambda k: k * 2.0)(3)
    with pytest.raises(TypeError, match="real- or complex-valued inputs.*allow_int"):
        grad(lambda x, k: jnp.sum(x) * k, argnums=1)(x, np.array(2))
    with pytest.raises(TypeError, match="real-valued outputs"):
        value_and_grad(lambda x: jnp.sum(x > 1.0))(x)
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        grad(lambda z: jnp.real(z), holomorphic=True)(np.complex128(1 + 2j))
    with pytest.raises(TypeError, match="requires at least 2 positional arguments"):   # as JAX
        grad(lambda x: jnp.sum(x), argnums=1)(x)
    with pytest.raises(ValueError, match="at least one"):
        grad(lambda x: jnp.sum(x), argnums=())(x)
    with pytest.raises(TypeError, match="function"):
        grad(3)
    _, pullback = vjp(jnp.sin, x)
    with pytest.raises(ValueError, match="VJP function: got f64\\[3\\], but expected f64\\[2\\]"):   # as JAX
        pullback(np.ones(3))
    with pytest.raises(ValueError, match="structure"):
        pullback((np.ones(2), np.ones(2)))
    _, f_jvp = dynjax.linearize(jnp.sin, x)
    with pytest.raises(ValueError, match="tangent"):
        f_jvp(np.ones(3))


def test_holomorphic_and_grad_of_qjit():
    z = np.complex128(1 + 2j)
    np.testing.assert_allclose(grad(lambda z: z ** 3, holomorphic=True)(z), 3 * z ** 2, rtol=1e-15)
    np.testing.assert_allclose(grad(lambda z: jnp.exp(z) * z, holomorphic=True)(z), np.exp(z) * (1 + z), rtol=1e-14)
    np.testing.assert_allclose(vjp(lambda z: z ** 2, z)[1](np.complex128(1j))[0], 2j * z, rtol=1e-15)
    # a qjit function differentiated from outside, and the gradient compiled again
    f = dynjax.qjit(lambda x: jnp.sum(jnp.sin(x) * x), abstracted_axes={0: "n"})
    g = dynjax.qjit(grad(f), abstracted_axes={0: "n"})
    for n in (0, 1, 4):
        x = np.linspace(-1, 2, n)
        want = np.sin(x) + x * np.cos(x)
        np.testing.assert_allclose(grad(f)(x), want, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(g(x), want, rtol=1e-14, atol=1e-15)
    assert g.cache_info()["traces"] == 1
    np.testing.assert_allclose(grad(grad(dynjax.qjit(jnp.sin)))(0.3), -np.sin(0.3), rtol=1e-15)
