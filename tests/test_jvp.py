"""Forward-mode differentiation (``dynjax.jvp``): every jvp rule against central finite
differences (float64, hypothesis over the values, sizes 0, 1 and more), the same programs
compiled with ``qjit`` over a dynamic axis at several sizes, the tangent types in the jaxpr,
jvp of jvp, argument checking, and a rule for every primitive of the catalogue."""
from __future__ import annotations

import numpy as np
import pytest
import hypothesis.extra.numpy as hnp
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from dynjax import jvp, lax
from dynjax.core.primitive import Primitive, jvp_rules
from dynjax.lax import primitives as P
from dynjax.transforms.jvp import Zero
from helpers import examples

f64 = np.float64


# ----------------------------------------------------------------------------------------------
# The cases: a function of float64 arrays, the shapes of its arguments for a size n, the dynamic
# axis of each argument (for qjit), the sampling domain, and where it is differentiable.
# ----------------------------------------------------------------------------------------------
class Case:
    def __init__(self, name, fn, shapes=lambda n: [(n,)], dyn=None, lo=-2.0, hi=2.0, valid=None):
        self.name, self.fn, self.shapes = name, fn, shapes
        k = len(shapes(3))
        self.dyn = dyn if dyn is not None else [0 if len(s) else None for s in shapes(3)]
        self.lo = lo if isinstance(lo, (list, tuple)) else [lo] * k
        self.hi = hi if isinstance(hi, (list, tuple)) else [hi] * k
        self.valid = valid or (lambda *xs: True)

    def __repr__(self):
        return self.name


def away_from(values, targets, margin=1e-3):
    return all(np.all(np.abs(np.asarray(values) - t) > margin) for t in targets)


def frac(x):
    return x - np.floor(x)


def distinct(x, axis):
    s = np.sort(x, axis=axis)
    return s.shape[axis] < 2 or np.all(np.abs(np.diff(s, axis=axis)) > 1e-3)


def c(x, y):
    return lax.complex(x, y)


def cmp_mix(x, y):
    """Every comparison and bitwise primitive deciding between differentiable branches."""
    a, b = lax.lt(x, y), lax.ge(x, P.neg_p.bind(y))
    p = lax.bitwise_xor(lax.bitwise_and(a, lax.le(x, f64(0.5))),
                        lax.bitwise_or(lax.bitwise_not(b), lax.gt(y, f64(1.0))))
    q = lax.bitwise_or(lax.eq(x, y), lax.ne(x, y))   # always true
    r = lax.is_finite(lax.div(x, y))
    return lax.select(lax.bitwise_and(p, lax.bitwise_and(q, r)), lax.mul(x, y), lax.sin(x))


def bool_out(x, y):
    return lax.bitwise_and(lax.lt(x, y), lax.is_finite(x))


def select3(x, y):
    one = lax.convert_element_type(lax.gt(x, f64(0)), np.int32)
    two = lax.convert_element_type(lax.gt(y, f64(0)), np.int32)
    return lax.select_n(lax.add(one, two), x, lax.mul(y, y), lax.mul(x, y))


def n_of(x):
    return x.shape[0]


UNARY = [
    ("neg", lax.neg, {}), ("exp", lax.exp, {}), ("log", lax.log, dict(lo=0.1, hi=3.0)),
    ("log1p", lax.log1p, dict(lo=-0.5)), ("expm1", lax.expm1, {}), ("sin", lax.sin, {}),
    ("cos", lax.cos, {}), ("tan", lax.tan, dict(lo=-1.2, hi=1.2)),
    ("asin", lax.asin, dict(lo=-0.9, hi=0.9)), ("acos", lax.acos, dict(lo=-0.9, hi=0.9)),
    ("atan", lax.atan, {}), ("sinh", lax.sinh, {}), ("cosh", lax.cosh, {}), ("tanh", lax.tanh, {}),
    ("sqrt", lax.sqrt, dict(lo=0.1, hi=3.0)), ("rsqrt", lax.rsqrt, dict(lo=0.1, hi=3.0)),
    ("cbrt", lax.cbrt, dict(lo=-3.0, hi=3.0, valid=lambda x: away_from(x, [0], 0.1))),
    ("logistic", lax.logistic, {}), ("abs", lax.abs, dict(valid=lambda x: away_from(x, [0]))),
    ("sign", lambda x: lax.mul(lax.sign(x), x), dict(valid=lambda x: away_from(x, [0]))),
    ("floor", lambda x: lax.mul(lax.floor(x), x), dict(valid=lambda x: away_from(frac(x), [0, 1]))),
    ("ceil", lambda x: lax.mul(lax.ceil(x), x), dict(valid=lambda x: away_from(frac(x), [0, 1]))),
    ("round", lambda x: lax.add(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), lax.round(x)),
     dict(valid=lambda x: away_from(frac(x), [0.5]))),
    ("integer_pow_0", lambda x: lax.integer_pow(x, 0), {}),
    ("integer_pow_1", lambda x: lax.integer_pow(x, 1), {}),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), {}),
    ("integer_pow_-2", lambda x: lax.integer_pow(x, -2), dict(valid=lambda x: away_from(x, [0], 0.2))),
    ("real_imag_conj", lambda x, y: lax.add(lax.real(lax.mul(c(x, y), c(y, x))),
                                            lax.imag(lax.conj(lax.mul(c(x, y), c(x, x))))), {}),
    ("complex_exp", lambda x, y: lax.imag(lax.exp(c(x, y))), {}),
    ("complex_abs", lambda x, y: lax.abs(c(x, y)), dict(valid=lambda x, y: away_from(np.hypot(x, y), [0], 0.1))),
    ("complex_sqrt_log", lambda x, y: lax.real(lax.add(lax.sqrt(c(x, y)), lax.log(c(x, y)))),
     dict(lo=[0.1, -2.0], hi=[2.0, 2.0])),
    ("convert_complex_real", lambda x, y: lax.convert_element_type(
        lax.mul(c(x, y), lax.convert_element_type(x, np.complex128)), f64), {}),
    ("convert_int", lambda x: lax.mul(x, lax.convert_element_type(
        lax.convert_element_type(lax.mul(x, f64(3)), np.int64), f64)),
     dict(valid=lambda x: away_from(frac(3 * x), [0, 1]))),
]

BINARY = [
    ("add", lax.add, {}), ("sub", lax.sub, {}), ("mul", lax.mul, {}),
    ("div", lax.div, dict(valid=lambda x, y: away_from(y, [0], 0.1))),
    ("rem", lax.rem, dict(valid=lambda x, y: away_from(y, [0], 0.3) and away_from(frac(x / y), [0, 1], 1e-2))),
    ("pow", lax.pow, dict(lo=[0.2, -2.0], hi=[3.0, 2.0])),
    ("max", lax.max, dict(valid=lambda x, y: away_from(x - y, [0]))),
    ("min", lax.min, dict(valid=lambda x, y: away_from(x - y, [0]))),
    ("atan2", lax.atan2, dict(valid=lambda x, y: away_from(np.hypot(x, y), [0], 0.1) and away_from(x, [0]))),
]

CASES = [Case(name, fn, lambda n, k=fn.__code__.co_argcount: [(n,)] * k, **kw) for name, fn, kw in UNARY]
CASES += [Case(name, fn, lambda n: [(n,), (n,)], **kw) for name, fn, kw in BINARY]
CASES += [
    # rank-0 operands broadcast in elementwise primitives
    Case("mul_scalar", lax.mul, lambda n: [(), (n,)]),
    Case("div_scalar_vec", lax.div, lambda n: [(n,), ()], valid=lambda x, y: away_from(y, [0], 0.1)),
    Case("pow_scalar", lax.pow, lambda n: [(n,), ()], lo=[0.2, -2.0], hi=[3.0, 2.0]),
    Case("max_scalar", lax.max, lambda n: [(), (n,)], valid=lambda x, y: away_from(x - y, [0])),
    Case("atan2_scalar", lax.atan2, lambda n: [(), (n,)], lo=[0.5, -2.0], hi=[2.0, 2.0]),
    Case("complex_scalar", lambda x, y: lax.imag(lax.mul(c(x, y), c(y, y))), lambda n: [(), (n,)]),
    Case("comparisons_bitwise", cmp_mix, lambda n: [(n,), (n,)],
         valid=lambda x, y: away_from(x - y, [0]) and away_from(x + y, [0]) and away_from(x, [0.5])
         and away_from(y, [0, 1])),
    Case("bool_output", bool_out, lambda n: [(n,), (n,)]),
    Case("select_n", select3, lambda n: [(n,), (n,)], valid=lambda x, y: away_from(x, [0]) and away_from(y, [0])),
    # shapes
    Case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (n_of(x), 3), (0,)), lambda n: [(n,)]),
    Case("broadcast_scalar", lambda s, x: lax.mul(lax.broadcast_in_dim(s, x.shape, ()), x), lambda n: [(), (n,)]),
    Case("reshape", lambda x: lax.reshape(x, (n_of(x), 6)), lambda n: [(n, 2, 3)]),
    Case("transpose", lambda x: lax.transpose(x, (1, 0)), lambda n: [(n, 3)]),
    Case("squeeze", lambda x: lax.squeeze(x, (1,)), lambda n: [(n, 1)]),
    Case("rev", lambda x: lax.rev(x, (0, 1)), lambda n: [(n, 3)]),
    # reductions
    Case("reduce_sum", lambda x: (lax.reduce_sum(x, (0,)), lax.reduce_sum(x, (1,)), lax.reduce_sum(x, (0, 1))),
         lambda n: [(n, 3)]),
    Case("reduce_prod", lambda x: (lax.reduce_prod(x, (0,)), lax.reduce_prod(x, (1,))), lambda n: [(n, 3)]),
    Case("reduce_max", lambda x: (lax.reduce_max(x, (0,)), lax.reduce_max(x, (1,))), lambda n: [(n, 3)],
         valid=lambda x: distinct(x.ravel(), 0)),
    Case("reduce_min", lambda x: (lax.reduce_min(x, (0,)), lax.reduce_min(x, (0, 1))), lambda n: [(n, 3)],
         valid=lambda x: distinct(x.ravel(), 0)),
    Case("argmax_argmin", lambda x: (lax.argmax(x, 1), lax.argmin(x, 1, np.int32)), lambda n: [(n, 3)]),
    Case("cumsum", lambda x: (lax.cumsum(x, 0), lax.cumsum(x, 1, reverse=True)), lambda n: [(n, 3)]),
    Case("cumprod", lambda x: (lax.cumprod(x, 0), lax.cumprod(x, 1, reverse=True)), lambda n: [(n, 3)]),
    Case("sort", lambda x: (lax.sort(x, 0), lax.sort(x, 1)), lambda n: [(n, 3)],
         valid=lambda x: distinct(x, 0) and distinct(x, 1)),
    Case("sort_two_operands", lambda x, y: lax.sort((x, y), 0), lambda n: [(n,), (n,)],
         valid=lambda x, y: distinct(x, 0)),
    Case("sort_two_keys", lambda x, y: lax.sort((lax.floor(x), y, lax.mul(x, y)), 0, num_keys=2),
         lambda n: [(n,), (n,)], valid=lambda x, y: distinct(y, 0) and away_from(frac(x), [0, 1])),
    # linear algebra
    Case("dot_general_matmul", lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
         lambda n: [(n, 3), (3, 2)], dyn=[0, None]),
    Case("dot_general_batch", lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
         lambda n: [(n, 2, 3), (n, 3, 2)]),
    Case("dot_general_contract_n", lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))),
         lambda n: [(n, 3), (n, 2)]),
    # slicing, concatenation, padding
    Case("slice", lambda x: (lax.slice(x, (0, 1), (None, 4)), lax.slice(x, (0, 0), (None, 5), (1, 2))),
         lambda n: [(n, 5)]),
    Case("dynamic_slice", lambda x: lax.dynamic_slice(x, (0, 1), (n_of(x), 3)), lambda n: [(n, 5)]),
    Case("dynamic_update_slice", lambda x, u: lax.dynamic_update_slice(x, u, (0, 2)),
         lambda n: [(n, 5), (n, 2)]),
    Case("dynamic_update_slice_const", lambda x: lax.dynamic_update_slice(x, lax.mul(x, x), (0, 0)),
         lambda n: [(n, 5)]),
    # gather and scatter (index rows are constants; out-of-range rows are clamped / dropped)
    Case("gather", lambda x: (lax.gather(x, np.array([[0, 4], [2, 1], [0, 4], [9, -1]]), (0, 1)),
                              lax.gather(x, np.array([[3], [0], [3]]), (1,))), lambda n: [(n, 5)]),
    Case("scatter_set_add", lambda x, u: (lax.scatter(x, np.array([[1], [4], [1], [7]]), u, (1,), "set"),
                                          lax.scatter(x, np.array([[1], [4], [1], [7]]), u, (1,), "add")),
         lambda n: [(n, 5), (4, n)], dyn=[0, 1]),
    Case("scatter_mul", lambda x, u: lax.scatter(x, np.array([[1], [4], [1]]), u, (1,), "mul"),
         lambda n: [(n, 5), (3, n)], dyn=[0, 1]),
    Case("scatter_min_max", lambda x, u: (lax.scatter(x, np.array([[1], [4], [1]]), u, (1,), "min"),
                                          lax.scatter(x, np.array([[2], [0], [2]]), u, (1,), "max")),
         lambda n: [(n, 5), (3, n)], dyn=[0, 1],
         valid=lambda x, u: distinct(np.concatenate([x.ravel(), u.ravel()]), 0)),
    Case("concatenate_static_axis", lambda x, y: lax.concatenate([x, y, x], 1), lambda n: [(n, 3), (n, 2)]),
    Case("concatenate_dynamic_axis", lambda x, y: lax.concatenate([x, y], 0), lambda n: [(n, 3), (2, 3)],
         dyn=[0, None]),
    Case("concatenate_constant", lambda x: lax.concatenate([x, np.ones((2, 3))], 0), lambda n: [(n, 3)]),
    Case("pad", lambda x, v: lax.pad(x, v, ((0, 0, 0), (1, 2, 1))), lambda n: [(n, 3), ()]),
    # numpy-level programs over the dynamic axis
    Case("jnp_composite", lambda x, w: jnp.sum(jnp.tanh(x @ w) ** 2, axis=0) + jnp.mean(x[1:], axis=0)[:2],
         lambda n: [(n, 3), (3, 2)], dyn=[0, None]),
    Case("jnp_pad_where", lambda x: jnp.where(x > 0, jnp.pad(x, 1)[1:-1] * x, jnp.exp(x)), lambda n: [(n,)],
         valid=lambda x: away_from(x, [0])),
]
# special functions (dynjax.lax.special); the first operand of igamma / igammac / zeta /
# polygamma is a constant (their derivatives in it are not implemented)
CASES += [
    Case("erf_erfc", lambda x: (lax.erf(x), lax.erfc(x))),
    Case("erf_inv", lax.erf_inv, lo=-0.9, hi=0.9),
    Case("lgamma_digamma", lambda x: (lax.lgamma(x), lax.digamma(x)), lo=0.2, hi=4.0),
    Case("bessel_i0e_i1e", lambda x: (lax.bessel_i0e(x), lax.bessel_i1e(x)), lo=-4.0, hi=4.0,
         valid=lambda x: away_from(x, [0])),
    Case("igamma_igammac", lambda x: (lax.igamma(f64(2.5), x), lax.igammac(f64(0.7), x)), lo=0.1, hi=4.0),
    Case("zeta_polygamma", lambda x: (lax.zeta(f64(3.0), x), lax.polygamma(f64(1.0), x),
                                      lax.polygamma(f64(2.0), x)), lo=0.3, hi=3.0),
]


# convolutions (dynjax.lax.convolution): bilinear, a dynamic batch or spatial axis
CASES += [
    Case("conv_same_strided", lambda x, w: lax.conv_general_dilated(x, w, (2,), "SAME"),
         lambda n: [(2, 2, n), (3, 2, 3)], dyn=[2, None]),
    Case("conv_nhwc_grouped_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), [(1, 0), (0, 1)], (1, 2), (2, 1), ("NHWC", "HWIO", "NHWC"), 2),
         lambda n: [(n, 3, 2, 4), (2, 2, 2, 4)], dyn=[0, None]),
    Case("conv_batch_group", lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2),
         lambda n: [(4, 2, n), (4, 2, 2)], dyn=[2, None]),
]

# cumulative operations (dynjax.lax.cumulative): running extrema, cumlogsumexp and an
# associative scan of a non-commutative combine (a loop over a dynamic number of levels)
CASES += [
    Case("cummax_cummin", lambda x: (lax.cummax(x, 0), lax.cummin(x, 1, reverse=True)), lambda n: [(n, 3)],
         valid=lambda x: distinct(x, 0) and distinct(x, 1)),
    Case("cumlogsumexp", lambda x: (lax.cumlogsumexp(x, 0), lax.cumlogsumexp(x, 1, reverse=True)),
         lambda n: [(n, 3)]),
    Case("associative_scan_affine", lambda a, b: lax.associative_scan(
        lambda p, q: (lax.mul(p[0], q[0]), lax.add(lax.mul(p[1], q[0]), q[1])), (a, b)), lambda n: [(n,), (n,)]),
]

# windowed reductions (dynjax.lax.reduce_window): sums (linear), extrema and products over
# strided, padded and dilated windows of a dynamic axis
CASES += [
    Case("reduce_window_sum_max", lambda x: (lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "SAME"),
                                             lax.reduce_window(x, -np.inf, lax.max, (3, 1), (2, 1), "SAME")),
         lambda n: [(n, 3)], valid=lambda x: distinct(x.ravel(), 0)),
    Case("reduce_window_min_prod_dilated", lambda x: (
        lax.reduce_window(x, np.inf, lax.min, (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), (1, 2)),
        lax.reduce_window(x, 1.0, lax.mul, (2, 1), (1, 1), "VALID")),
         lambda n: [(n, 3)], valid=lambda x: distinct(x.ravel(), 0)),
]

CASE_IDS = [case.name for case in CASES]


# ----------------------------------------------------------------------------------------------
# Checking one case
# ----------------------------------------------------------------------------------------------
def leaves(x):
    return dynjax.tree_flatten(x)[0]


def check_against_fd(fn, primals, tangents, eps=1e-6):
    out, tan = jvp(fn, tuple(primals), tuple(tangents))
    expected = leaves(fn(*primals))
    plus = leaves(fn(*[p + eps * t for p, t in zip(primals, tangents)]))
    minus = leaves(fn(*[p - eps * t for p, t in zip(primals, tangents)]))
    for o, t, e, hi, lo in zip(leaves(out), leaves(tan), expected, plus, minus):
        o, t = np.asarray(o), np.asarray(t)
        np.testing.assert_allclose(o, e, rtol=1e-13, atol=0)
        if not np.issubdtype(o.dtype, np.inexact):   # as JAX: a float0 tangent
            assert t.shape == o.shape and t.dtype == dynjax.float0, (t.shape, t.dtype, o.shape, o.dtype)
            continue
        assert t.shape == o.shape and t.dtype == o.dtype, (t.shape, t.dtype, o.shape, o.dtype)
        with np.errstate(invalid="ignore"):   # inf - inf where the output is infinite
            fd = (np.asarray(hi) - np.asarray(lo)) / (2 * eps)
        ok = np.isfinite(o)   # e.g. the max of an empty axis is -inf
        np.testing.assert_allclose(t[ok], fd[ok], rtol=1e-5, atol=1e-6)


def arrays(shape, lo, hi):
    return hnp.arrays(f64, shape, elements=st.floats(lo, hi, allow_nan=False, allow_subnormal=False))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=examples(10), suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_rule_against_finite_differences(case, data):
    n = data.draw(st.sampled_from([0, 1, 2, 5]), label="n")
    shapes = case.shapes(n)
    primals = [data.draw(arrays(s, lo, hi), label="primal") for s, lo, hi in zip(shapes, case.lo, case.hi)]
    assume(case.valid(*primals))
    tangents = [data.draw(arrays(s, -1.0, 1.0), label="tangent") for s in shapes]
    check_against_fd(case.fn, primals, tangents)


def sample(case, n, rng):
    """In-domain arguments (primals then tangents) for ``case`` at size ``n``."""
    for _ in range(1000):
        primals = [rng.uniform(lo, hi, s) for s, lo, hi in zip(case.shapes(n), case.lo, case.hi)]
        if case.valid(*primals):
            return primals, [rng.uniform(-1, 1, s) for s in case.shapes(n)]
    raise AssertionError(f"no valid sample for {case.name}")


def test_every_rule_runs_in_the_cases(monkeypatch):
    """The cases exercise the jvp rule of every primitive of the catalogue, except those that
    never meet a differentiable operand (checked directly in test_rules_called_directly)."""
    used = set()
    for p, rule in list(jvp_rules.items()):
        monkeypatch.setitem(jvp_rules, p, lambda ps, ts, _p=p, _r=rule, **kw: (used.add(_p), _r(ps, ts, **kw))[1])
    rng = np.random.default_rng(0)
    for case in CASES:
        primals, tangents = sample(case, 3, rng)
        jvp(case.fn, tuple(primals), tuple(tangents))
    missing = {p.name for p in catalogue()} - {p.name for p in used} - set(DIRECT)
    assert not missing


# ----------------------------------------------------------------------------------------------
# Compiled with a dynamic axis: one trace per group of cases, run at several sizes
# ----------------------------------------------------------------------------------------------
GROUPS = [CASES[i:i + 16] for i in range(0, len(CASES), 16)]


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_qjit_dynamic_axis(group):
    cases = GROUPS[group]
    counts = [len(case.shapes(3)) for case in cases]
    specs = []
    for case in cases:
        specs += [None if a is None else {a: "n"} for a in case.dyn] * 2   # primals, tangents

    def program(*flat):
        outs, k = [], 0
        for case, m in zip(cases, counts):
            outs.append(jvp(case.fn, flat[k:k + m], flat[k + m:k + 2 * m]))
            k += 2 * m
        return outs

    compiled = dynjax.qjit(program, abstracted_axes=tuple(specs))
    rng = np.random.default_rng(group)
    for n in (0, 1, 4):
        args = []
        for case in cases:
            primals, tangents = sample(case, n, rng)
            args += primals + tangents
        got = compiled(*args)
        k = 0
        for case, m, res in zip(cases, counts, got):
            want = jvp(case.fn, tuple(args[k:k + m]), tuple(args[k + m:k + 2 * m]))
            k += 2 * m
            for g, w in zip(leaves(res), leaves(want)):
                if np.asarray(w).dtype == dynjax.float0 and np.asarray(g).dtype != dynjax.float0:
                    # a dynamically-shaped integer output's tangent: zeros of its dtype
                    w = np.zeros(np.shape(w), np.asarray(g).dtype)
                assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype, case.name
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"{case.name} at n={n}")
    assert compiled.cache_info()["traces"] == 1
    closed = compiled.jaxpr
    dynjax.check_jaxpr(closed.jaxpr)


# ----------------------------------------------------------------------------------------------
# Types and jaxprs
# ----------------------------------------------------------------------------------------------
def test_tangent_types_share_the_primal_dims():
    closed = dynjax.make_jaxpr(lambda x, t: jvp(jnp.sin, (x,), (t,)), abstracted_axes={0: "n"})(
        np.ones(3), np.ones(3))
    assert str(closed) == (
        "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let\n"
        "    d:f64[a] = sin b\n"
        "    e:f64[a] = cos b\n"
        "    f:f64[a] = mul c e\n"
        "  in (d, f) }")
    primal, tangent = closed.jaxpr.outvars
    assert primal.aval.shape[0] is tangent.aval.shape[0] is closed.jaxpr.invars[0]


def test_zero_tangent_has_the_primal_dims():
    """A constant output's zero tangent is instantiated with the output's dynamic dims."""
    def f(x, t):
        return jvp(lambda x: (jnp.sin(x), jnp.zeros_like(x) + 1.0, jnp.argmax(x)), (x,), (t,))
    closed = dynjax.make_jaxpr(f, abstracted_axes={0: "n"})(np.ones(3), np.ones(3))
    dynjax.check_jaxpr(closed.jaxpr)
    outs = closed.jaxpr.outvars
    n = closed.jaxpr.invars[0]
    assert [outs[i].aval.shape for i in (0, 1, 3, 4)] == [(n,)] * 4
    assert (outs[2].aval.dtype, outs[2].aval.shape) == (np.int64, ())
    assert len(outs) == 5   # argmax's tangent is float0 (as JAX): no data, not a jaxpr output
    got = dynjax.qjit(f, abstracted_axes={0: "n"})(np.array([0.0, 2.0]), np.ones(2))
    np.testing.assert_allclose(got[1][1], np.zeros(2))
    assert got[1][2].dtype == dynjax.float0 and got[1][2].shape == ()


def test_jvp_inside_qjit_lambda():
    f = dynjax.qjit(lambda x, t: jvp(lambda x: jnp.sum(x * jnp.exp(x)), (x,), (t,)),
                    abstracted_axes={0: "n"})
    for n in (0, 1, 5):
        x = np.linspace(-1, 1, n)
        t = np.cos(np.arange(n))
        y, dy = f(x, t)
        np.testing.assert_allclose(y, np.sum(x * np.exp(x)))
        np.testing.assert_allclose(dy, np.sum(t * (1 + x) * np.exp(x)))
    assert f.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# Higher derivatives
# ----------------------------------------------------------------------------------------------
def deriv(f):
    return lambda x: jvp(f, (x,), (jnp.ones_like(x),))[1]


@given(x=st.floats(-3, 3))
@settings(max_examples=examples(10))
def test_jvp_of_jvp(x):
    np.testing.assert_allclose(deriv(deriv(jnp.sin))(x), -np.sin(x), atol=1e-15)
    np.testing.assert_allclose(deriv(deriv(deriv(jnp.sin)))(x), -np.cos(x), atol=1e-15)
    g = lambda x: jnp.exp(x) * x ** 2
    np.testing.assert_allclose(deriv(deriv(g))(x), np.exp(x) * (x ** 2 + 4 * x + 2), rtol=1e-13, atol=1e-13)


def test_hessian_vector_product_compiled():
    """d/de grad-free: the second directional derivative v^T H v of sum(sin(x) * x) under qjit."""
    def f(x):
        return jnp.sum(jnp.sin(x) * x)

    def hvv(x, v):
        return jvp(lambda x: jvp(f, (x,), (v,))[1], (x,), (v,))[1]

    compiled = dynjax.qjit(hvv, abstracted_axes={0: "n"})
    for n in (0, 1, 4):
        x, v = np.linspace(-1, 2, n), np.linspace(1, -1, n)
        want = np.sum(v * v * (2 * np.cos(x) - x * np.sin(x)))
        np.testing.assert_allclose(hvv(x, v), want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(compiled(x, v), want, rtol=1e-12, atol=1e-14)


def test_perturbations_do_not_mix():
    """An inner jvp does not see the outer jvp's perturbation: d/dx [x * d/dy (x + y)] = 1."""
    def outer(x):
        return x * jvp(lambda y: x + y, (1.0,), (1.0,))[1]
    assert jvp(outer, (2.0,), (1.0,))[1] == 1.0


# ----------------------------------------------------------------------------------------------
# Special points, ties and zeros
# ----------------------------------------------------------------------------------------------
def test_max_min_ties_split_the_tangent():
    x = np.array([1.0, 2.0, 3.0])
    _, t = jvp(lax.max, (x, x.copy()), (np.ones(3), 3 * np.ones(3)))
    np.testing.assert_allclose(t, 2 * np.ones(3))
    _, t = jvp(lambda x: lax.reduce_max(x, (0,)), (np.array([1.0, 3.0, 3.0]),), (np.array([5.0, 1.0, 2.0]),))
    assert t == 1.5
    _, t = jvp(lambda x: lax.reduce_min(x, (1,)), (np.array([[1.0, 1.0, 1.0]]),), (np.array([[3.0, 0.0, 0.0]]),))
    np.testing.assert_allclose(t, [1.0])


def test_reduce_prod_with_zeros():
    rng = np.random.default_rng(1)
    for x in ([2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [0.0], [], [1.5, -2.0, 0.5]):
        x = np.array(x)
        t = rng.uniform(-1, 1, x.shape)
        want = sum(t[i] * np.prod(np.delete(x, i)) for i in range(len(x)))
        _, got = jvp(lambda x: lax.reduce_prod(x, (0,)), (x,), (t,))
        np.testing.assert_allclose(got, want, atol=1e-15)


def test_cumprod_with_zeros():
    """d out_i = sum over j <= i of t_j times the product of the other x_k, k <= i: the rule's
    three regimes (no zero so far, one zero, two or more) at exact zeros, eager and compiled."""
    rng = np.random.default_rng(2)
    f = lambda x, t: jvp(lambda x: lax.cumprod(x, 0), (x,), (t,))
    compiled = dynjax.qjit(f, abstracted_axes={0: "n"})
    for x in ([2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 0.0, 3.0], [0.0], [], [1.5, -2.0, 0.5], [4.0, 0.0]):
        x = np.array(x)
        t = rng.uniform(-1, 1, x.shape)
        want = np.array([sum(t[j] * np.prod(np.delete(x[:i + 1], j)) for j in range(i + 1))
                         for i in range(len(x))])
        for primal, tangent in (f(x, t), compiled(x, t)):
            np.testing.assert_array_equal(primal, np.cumprod(x))
            np.testing.assert_allclose(tangent, want, atol=1e-15)


def test_special_points():
    zero, one = np.array([0.0]), np.array([1.0])
    # JAX's choices: |x|' = 1 at 0 (and -0), -1 at NaN; the complex |z| has slope 0 at 0
    assert jvp(lax.abs, (zero,), (one,))[1] == 1.0
    assert jvp(lax.abs, (-zero,), (one,))[1] == 1.0
    assert jvp(lax.abs, (np.array([np.nan]),), (one,))[1] == -1.0
    assert jvp(lambda z: lax.abs(lax.complex(z, z)), (zero,), (one,))[1] == 0.0
    np.testing.assert_allclose(jvp(lax.pow, (zero, np.array([2.0])), (one, one))[1], [0.0])
    np.testing.assert_allclose(jvp(lax.pow, (zero, np.array([0.0])), (one, zero))[1], [0.0])
    np.testing.assert_allclose(jvp(lax.pow, (np.array([2.0]), np.array([0.0])), (one, zero))[1], [0.0])


def test_sort_ties_follow_the_primal_permutation():
    x = np.array([1.0, 1.0, 0.0, 1.0])
    out, t = jvp(lambda x: lax.sort(x, 0), (x,), (np.array([10.0, 20.0, 30.0, 40.0]),))
    np.testing.assert_array_equal(out, [0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(t, [30.0, 10.0, 20.0, 40.0])


# Primitives whose operands are integers or bools only: an integer value never carries a
# non-zero tangent, so jvp applies them to the primals without their rule.
DIRECT = {
    "iota": ([np.int64(4)], dict(dtype=np.dtype(f64), shape=(None,), dimension=0), np.arange(4.0)),
    "not": ([np.array([True, False])], {}, [False, True]),
    "and": ([np.array([True, False]), np.array([True, True])], {}, [True, False]),
    "or": ([np.array([3, 0]), np.array([4, 0])], {}, [7, 0]),
    "xor": ([np.array([3, 1]), np.array([1, 1])], {}, [2, 0]),
    "shift_left": ([np.array([3, 1]), np.array([1, 2])], {}, [6, 4]),
    "shift_right": ([np.array([-8, 8]), np.array([1, 2])], {}, [-4, 2]),
}


@pytest.mark.parametrize("name", sorted(DIRECT))
def test_rules_called_directly(name):
    prim = next(p for p in catalogue() if p.name == name)
    args, params, want = DIRECT[name]
    out, t = jvp_rules[prim](args, [Zero(dynjax.ShapedArray(np.shape(a), np.asarray(a).dtype)) for a in args],
                             **params)
    np.testing.assert_array_equal(out, want)
    assert isinstance(t, Zero) and t.aval.shape == np.shape(out) and t.aval.dtype == np.asarray(out).dtype


def test_integer_valued_parts_under_tracing():
    def f(x):
        n = x.shape[0]
        k = lax.bitwise_xor(jnp.arange(n), jnp.argmax(x))
        return x * jnp.arange(n) + lax.convert_element_type(lax.bitwise_not(k), f64)
    closed = dynjax.make_jaxpr(lambda x, t: jvp(f, (x,), (t,)), abstracted_axes={0: "n"})(np.ones(3), np.ones(3))
    dynjax.check_jaxpr(closed.jaxpr)
    x = np.array([0.5, 2.0, -1.0])
    _, t = jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, np.arange(3.0))


def test_float32():
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    y, t = jvp(jnp.sin, (x,), (np.ones_like(x),))
    assert y.dtype == t.dtype == np.float32
    yc, tc = dynjax.qjit(lambda x, t: jvp(jnp.sin, (x,), (t,)), abstracted_axes={0: "n"})(x, np.ones_like(x))
    assert tc.dtype == np.float32
    np.testing.assert_allclose(tc, np.cos(x), rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# The API: pytrees, integer inputs, argument checking
# ----------------------------------------------------------------------------------------------
def test_pytrees_and_python_scalars():
    def f(p, s):
        return {"y": p["w"] * s + p["b"], "c": 2.0}
    primals = ({"w": np.array([1.0, 2.0]), "b": np.array([0.5, 0.5])}, 3.0)
    tangents = ({"w": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}, 1.0)
    out, tan = jvp(f, primals, tangents)
    np.testing.assert_allclose(out["y"], [3.5, 6.5])
    np.testing.assert_allclose(tan["y"], [3.0 + 1.0, 0.0 + 1.0 + 2.0])
    assert tan["c"] == 0.0
    # a Python scalar tangent takes the primal's dtype
    _, t = jvp(jnp.sin, (np.float32(1.0),), (1.0,))
    assert t.dtype == np.float32


def test_integer_inputs_and_outputs():
    x = np.array([1.0, 2.0, 3.0])
    y, t = jvp(lambda x, k: x * k, (x, 3), (np.ones(3), 0))
    np.testing.assert_allclose(t, 3 * np.ones(3))
    y, t = jvp(lambda x, k: (x * k, k + 1), (x, np.array([1, 2, 3])), (np.ones(3), np.zeros(3, np.int64)))
    assert t[1].shape == (3,) and t[1].dtype == dynjax.float0   # as JAX
    y, t = jvp(lambda x, k: (x * k, k + 1), (x, np.array([1, 2, 3])), (np.ones(3), np.zeros(3, dynjax.float0)))
    np.testing.assert_allclose(t[0], [1, 2, 3])
    with pytest.raises(TypeError, match=r"tangent dtype must be float0.*int64.*tangents\[1\]"):
        jvp(lambda x, k: x * k, (x, 3), (np.ones(3), 1))


def test_argument_errors():
    x = np.ones(3)
    # JAX's error types: ValueError for shapes, TypeError for dtypes and structures
    with pytest.raises(ValueError, match=r"different primal and tangent shapes.*f64\[3\].*f64\[4\].*tangents\[0\]"):
        jvp(jnp.sin, (x,), (np.ones(4),))
    with pytest.raises(TypeError, match=r"dtypes must be equal.*got tangent dtype float32 \(tangents\[1\]\['w'\]\)"):
        jvp(lambda a, p: a * p["w"], (x, {"w": x}), (x, {"w": x.astype(np.float32)}))
    with pytest.raises(TypeError, match=r"same tree structure"):
        jvp(lambda a: a[0], ((x, x),), ((x,),))
    with pytest.raises(TypeError, match="tuples or lists"):
        jvp(jnp.sin, x, x)
    with pytest.raises(TypeError, match="same tree structure"):
        jvp(jnp.sin, (x,), (x, x))
    # under qjit, tangent dims must be the primal's (here two different names)
    f = dynjax.qjit(lambda x, t: jvp(jnp.sin, (x,), (t,)), abstracted_axes=({0: "n"}, {0: "m"}))
    with pytest.raises(ValueError, match=r"primal shape f64\[n\] and tangent shape f64\[m\]"):
        f(x, x)


# ----------------------------------------------------------------------------------------------
# The catalogue
# ----------------------------------------------------------------------------------------------
def catalogue():
    return [v for v in vars(P).values() if isinstance(v, Primitive)]


def test_every_primitive_has_a_jvp_rule():
    prims = catalogue()
    assert len(prims) >= 66
    missing = [p.name for p in prims if p not in jvp_rules]
    assert not missing, f"primitives without a jvp rule: {missing}"


def test_every_registered_primitive_has_jvp_batching_and_cost_rules():
    """Every primitive of every family (not only lax/primitives/: linalg, special, prng,
    bits, fft, convolution, cumulative, reduce_window, callbacks, control flow) has a jvp, a
    batching and a cost rule; only custom_vjp's linear part, which never runs forward, has
    none but its batching rule."""
    from dynjax.core.primitive import batching_rules, impl_rules
    from dynjax.cost_model import cost_rules
    # dynjax's own (tests define primitives of their own through dynjax.extend)
    prims = [p for p, impl in impl_rules.items()
             if getattr(impl, "__module__", "").startswith("dynjax.") and p.name != "custom_lin"]
    assert len(prims) >= 110
    for table, what in ((jvp_rules, "jvp"), (batching_rules, "batching"), (cost_rules, "cost")):
        missing = sorted(p.name for p in prims if p not in table)
        assert not missing, f"primitives without a {what} rule: {missing}"
