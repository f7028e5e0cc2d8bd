"""The general eigensolver (``lax.linalg.eig``, ``jnp.linalg.eig`` / ``eigvals``) and what is
built on it (``jnp.roots``, ``jnp.poly`` of a matrix), with ``jnp.polyfit`` by least squares.

Eigenvalue order and eigenvector phases are LAPACK's choices, so results are compared with
numpy independently of them: the eigenvalues as multisets (a minimum-cost matching), the
eigenvectors by ``A v = v w`` (``vl^H A = w vl^H`` for the left ones), unit norm and a real
largest component. Eager (numpy / scipy's ``geev``) and compiled (jaxlib's ``geev`` kernel) run
the same LAPACK routine, so those two are compared element by element.
"""
from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import dynjax
import dynjax.numpy as jnp
from dynjax.lax import linalg as L
from test_linalg import DTYPES, SQUARE, H, rnd

jax.config.update("jax_enable_x64", True)

COMPLEX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
           np.dtype(np.complex64): np.complex64, np.dtype(np.complex128): np.complex128}


def tol(dt):
    return 1e-4 if np.dtype(dt) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-10


def same_multiset(got, want, rtol, atol=None):
    """``got`` and ``want`` (1-d, complex) hold the same values up to order: the matching of
    least total distance pairs them."""
    got, want = np.asarray(got).ravel(), np.asarray(want).ravel()
    assert got.shape == want.shape, (got, want)
    if got.size == 0:
        return
    cost = np.abs(got[:, None] - want[None, :])
    rows, cols = linear_sum_assignment(cost)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got[rows], want[cols], rtol=rtol, atol=(atol if atol is not None else rtol * scale))


def check_eig(w, vl, vr, a, wv, dt):
    """``w`` / ``vl`` / ``vr`` of ``a`` (a stack), and ``wv`` from eigvals, checked."""
    cdt = COMPLEX[np.dtype(dt)]
    n = a.shape[-1]
    for x in (w, vl, vr, wv):
        assert x.dtype == cdt, (x.dtype, cdt)
    assert w.shape == wv.shape == a.shape[:-1] and vl.shape == vr.shape == a.shape
    t = tol(dt) * max(1, n) * 10
    a128 = a.astype(np.complex128)
    for idx in np.ndindex(*a.shape[:-2]):
        same_multiset(w[idx], np.linalg.eigvals(a128[idx]), t)
        same_multiset(wv[idx], w[idx], t)
    np.testing.assert_allclose(a128 @ vr, vr * w[..., None, :], rtol=t, atol=t)
    np.testing.assert_allclose(H(vl) @ a128, w[..., :, None] * H(vl), rtol=t, atol=t)
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), np.ones(a.shape[:-1]), rtol=t, atol=t)
        if n:
            big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
            np.testing.assert_allclose(big.imag, 0, atol=t)


def eig_suite(a):
    w, vl, vr = L.eig(a)
    res = jnp.linalg.eig(a)
    return dict(w=w, vl=vl, vr=vr, wv=jnp.linalg.eigvals(a), w2=res.eigenvalues, v2=res.eigenvectors,
                right=L.eig(a, compute_left_eigenvectors=False), left=L.eig(a, compute_right_eigenvectors=False),
                none=L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False))


def check_suite(out, a, dt):
    check_eig(out["w"], out["vl"], out["vr"], a, out["wv"], dt)
    t = tol(dt) * 10
    # every form gives the same eigenvalues (in the same order: the same LAPACK call)
    for key in ("w2", "wv"):
        np.testing.assert_allclose(out[key], out["w"], rtol=t, atol=t)
    assert len(out["right"]) == 2 and len(out["left"]) == 2 and len(out["none"]) == 1
    np.testing.assert_allclose(out["v2"], out["vr"], rtol=t, atol=t)
    np.testing.assert_allclose(out["right"][1], out["vr"], rtol=t, atol=t)
    np.testing.assert_allclose(out["left"][1], out["vl"], rtol=t, atol=t)
    np.testing.assert_allclose(out["none"][0], out["w"], rtol=t, atol=t)


def agree(got, want, dt):
    """Eager and compiled results: the same LAPACK routine, so element by element."""
    for key in want:
        g, w = got[key], want[key]
        for x, y in zip(g if isinstance(g, list) else [g], w if isinstance(w, list) else [w]):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape, key
            np.testing.assert_allclose(x, y, rtol=tol(dt) * 10, atol=tol(dt) * 10, err_msg=key)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_eager_and_compiled_one_trace(dt):
    f = dynjax.qjit(eig_suite, abstracted_axes=SQUARE)
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5):
        a = rnd(rng, (n, n), dt)
        eager, compiled = eig_suite(a), f(a)
        check_suite(eager, a, dt)
        check_suite(compiled, a, dt)
        agree(compiled, eager, dt)
    assert f.cache_info()["traces"] == 1


def test_eig_of_structured_matrices():
    f = dynjax.qjit(eig_suite, abstracted_axes=SQUARE)
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])                  # eigenvalues +-i
    upper = np.triu(np.arange(1.0, 17.0).reshape(4, 4))        # eigenvalues its diagonal
    sym = np.array([[2.0, 1.0], [1.0, 2.0]])                   # real eigenvalues 1, 3
    for a in (rot, upper, sym, np.eye(3), np.zeros((3, 3))):
        for out in (eig_suite(a), f(a)):
            check_suite(out, a, np.float64)
    for out in (eig_suite(rot), f(rot)):
        same_multiset(out["w"], [1j, -1j], 1e-12)
    for out in (eig_suite(upper), f(upper)):
        same_multiset(out["w"], np.diag(upper), 1e-12)
    # JAX's documented example
    w, v = jnp.linalg.eig(sym)
    same_multiset(w, [3.0, 1.0], 1e-12)


def test_batched_eig_with_a_dynamic_batch_and_vmap():
    rng = np.random.default_rng(1)
    f = dynjax.qjit(eig_suite, abstracted_axes={0: "b", 1: "n", 2: "n"})
    for bsz, n in ((3, 2), (1, 5), (0, 3), (2, 0)):
        a = rnd(rng, (bsz, n, n), np.float64)
        eager, compiled = eig_suite(a), f(a)
        check_suite(eager, a, np.float64)
        check_suite(compiled, a, np.float64)
        agree(compiled, eager, np.float64)
    assert f.cache_info()["traces"] == 1
    # two batch axes, complex, static
    a = rnd(rng, (2, 3, 4, 4), np.complex128)
    check_suite(dynjax.qjit(eig_suite)(a), a, np.complex128)
    # vmap is the batched call, with the batch axis anywhere
    a = rnd(rng, (4, 3, 3), np.float64)
    for fn in (jnp.linalg.eigvals, lambda x: jnp.linalg.eig(x).eigenvectors, lambda x: L.eig(x)[1]):
        np.testing.assert_allclose(dynjax.vmap(fn)(a), fn(a), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dynjax.vmap(fn, in_axes=2)(np.moveaxis(a, 0, 2)), fn(a), rtol=1e-12, atol=1e-12)
    g = dynjax.qjit(dynjax.vmap(jnp.linalg.eigvals), abstracted_axes={0: "b", 1: "n", 2: "n"})
    for bsz, n in ((2, 3), (3, 1)):
        a = rnd(rng, (bsz, n, n), np.float64)
        np.testing.assert_allclose(g(a), jnp.linalg.eigvals(a), rtol=1e-10, atol=1e-10)
    assert g.cache_info()["traces"] == 1


def test_integer_inputs_promote_and_numpy_semantics():
    a = np.array([[2, 1], [0, 3]])
    for g in (jnp.linalg.eigvals, dynjax.qjit(jnp.linalg.eigvals)):
        w = g(a)
        assert w.dtype == np.complex128
        same_multiset(w, [2, 3], 1e-12)
    res = jnp.linalg.eig(a)
    assert type(res).__name__ == "EigResult" and res._fields == ("eigenvalues", "eigenvectors")
    # JAX's rule: complex even when every eigenvalue is real (numpy would return float64)
    assert jnp.linalg.eig(np.eye(2, dtype=np.float32)).eigenvalues.dtype == np.complex64


# ----------------------------------------------------------------------------------------------
# derivatives
# ----------------------------------------------------------------------------------------------
def _fd(f, x, t, eps=1e-6):
    return (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)


@pytest.mark.parametrize("dt", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_eigvals_jvp_and_grad(dt):
    rng = np.random.default_rng(2)
    a, t = rnd(rng, (4, 4), dt), rnd(rng, (4, 4), dt)
    w, dw = dynjax.jvp(jnp.linalg.eigvals, (a,), (t,))
    np.testing.assert_allclose(dw, _fd(jnp.linalg.eigvals, a, t), rtol=1e-6, atol=1e-7)
    jw, jdw = jax.jvp(jjnp.linalg.eigvals, (a,), (t,))
    np.testing.assert_allclose(w, jw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw, jdw, rtol=1e-8, atol=1e-10)
    if dt == np.float64:
        def loss(x, m=jnp):
            w = m.linalg.eigvals(x)
            return m.sum(m.real(w) ** 2 - m.imag(w))
        g = dynjax.grad(loss)(a)
        np.testing.assert_allclose(g, jax.grad(lambda x: loss(x, jjnp))(a), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.sum(g * t), _fd(loss, a, t), rtol=1e-6, atol=1e-7)


def test_eigvals_grad_compiled_with_a_dynamic_size():
    def loss(a):
        w = jnp.linalg.eigvals(a)
        return jnp.sum(jnp.real(w * w))
    g = dynjax.qjit(dynjax.grad(loss), abstracted_axes=SQUARE)
    rng = np.random.default_rng(3)
    for n in (1, 2, 5):
        a = rng.normal(size=(n, n))
        np.testing.assert_allclose(g(a), dynjax.grad(loss)(a), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(g(a), 2 * a.T, rtol=1e-8, atol=1e-10)   # sum w^2 = tr(A^2)
    assert g.cache_info()["traces"] == 1


def test_eigenvector_derivatives_follow_jax():
    rng = np.random.default_rng(4)
    a, t = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    la = jnp.linalg
    # jnp.linalg.eig has no derivative, even of its eigenvalues alone (JAX raises too)
    for f in (la.eig, lambda x: la.eig(x).eigenvalues, lambda x: L.eig(x)[0],
              lambda x: L.eig(x, compute_left_eigenvectors=False)[1]):
        with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
            dynjax.jvp(f, (a,), (t,))
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        dynjax.grad(lambda x: jnp.sum(jnp.real(la.eig(x).eigenvectors)))(a)
    # with enable_eigvec_derivs=True: JAX's values, and finite differences (the normalization
    # is smooth away from ties, so the vectors are differentiable)
    for left, right in ((True, True), (False, True), (True, False)):
        kw = dict(compute_left_eigenvectors=left, compute_right_eigenvectors=right, enable_eigvec_derivs=True)
        out, tan = dynjax.jvp(lambda x: L.eig(x, **kw), (a,), (t,))
        jout, jtan = jax.jvp(lambda x: jax.lax.linalg.eig(x, **kw), (a,), (t,))
        assert len(out) == len(jout) == 1 + left + right
        for o, jo, d, jd in zip(out, jout, tan, jtan):
            np.testing.assert_allclose(o, jo, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(d, jd, rtol=1e-8, atol=1e-10)
        for k in range(len(out)):
            np.testing.assert_allclose(tan[k], _fd(lambda x: L.eig(x, **kw)[k], a, t), rtol=1e-5, atol=1e-6)
    # the complex case, and compiled with a dynamic size
    c, tc = rnd(rng, (3, 3), np.complex128), rnd(rng, (3, 3), np.complex128)
    kw = dict(enable_eigvec_derivs=True)
    f = dynjax.qjit(lambda x, y: dynjax.jvp(lambda z: L.eig(z, **kw), (x,), (y,))[1], abstracted_axes=(SQUARE, SQUARE))
    for got, want in zip(f(c, tc), jax.jvp(lambda x: jax.lax.linalg.eig(x, **kw), (c,), (tc,))[1]):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


# ----------------------------------------------------------------------------------------------
# failures, errors, lowering, cost
# ----------------------------------------------------------------------------------------------
def test_non_finite_matrices_give_nans_eagerly_and_compiled():
    bad = np.array([[1.0, np.nan], [0.0, 2.0]])
    batch = np.stack([bad, np.diag([1.0, 2.0])])
    f = dynjax.qjit(lambda a: L.eig(a), abstracted_axes={0: "b", 1: "n", 2: "n"})
    for out in (L.eig(batch), f(batch)):
        for o in out:
            assert np.isnan(o[0].real).all() and np.isnan(o[0].imag).all()
            assert np.isfinite(o[1]).all()
        same_multiset(out[0][1], [1.0, 2.0], 1e-12)


def test_bad_inputs_raise_clear_errors():
    la = jnp.linalg
    with pytest.raises(ValueError, match="eig: the last two dimensions of a must be square"):
        la.eig(np.ones((2, 3)))
    with pytest.raises(ValueError, match="eigvals: a must have at least 2 dimensions"):
        la.eigvals(np.ones(3))
    with pytest.raises(TypeError, match="float16"):
        la.eigvals(np.ones((2, 2), np.float16))
    with pytest.raises(TypeError, match="not known to be equal"):
        dynjax.qjit(la.eigvals, abstracted_axes={0: "m", 1: "n"})(np.eye(2))
    with pytest.raises(TypeError, match="must be float32"):
        L.eig(np.ones((2, 2), np.int64))
    with pytest.raises(ValueError, match="only the LAPACK implementation"):
        L.eig(np.eye(2), implementation="magma")
    assert len(L.eig(np.eye(2), implementation="lapack")) == 3


def test_lowering_emits_geev_that_specializes_to_static_types():
    f = dynjax.qjit(lambda a: (jnp.linalg.eigvals(a), L.eig(a, compute_right_eigenvectors=False)[1]),
                    abstracted_axes=SQUARE)
    f(np.eye(3) * 2.0)
    assert "stablehlo.custom_call @lapack_dgeev_ffi" in f.mlir
    assert "compute_left = 78 : ui8, compute_right = 78 : ui8" in f.mlir       # 'N', 'N'
    assert "compute_left = 86 : ui8, compute_right = 78 : ui8" in f.mlir       # 'V', 'N'
    assert "indices_of_shape_operands" in f.mlir and "tensor<?x?xf64>" in f.mlir
    static = f.mlir_specialized
    assert "lapack_dgeev_ffi" in static and "?" not in static
    g = dynjax.qjit(jnp.linalg.eigvals)
    g(np.eye(2, dtype=np.complex64))
    assert "lapack_cgeev_ffi" in g.mlir


def test_cost_rule():
    cost = dynjax.cost_analysis(jnp.linalg.eigvals, np.eye(3), abstracted_axes=SQUARE)
    assert cost.at(n=10)["flops"] > cost.at(n=5)["flops"] > 0
    vec = dynjax.cost_analysis(jnp.linalg.eig, np.eye(3), abstracted_axes=SQUARE)
    assert vec.at(n=10)["flops"] > cost.at(n=10)["flops"]


# ----------------------------------------------------------------------------------------------
# roots, poly
# ----------------------------------------------------------------------------------------------
POLYS = [[1.0, -3.0, 2.0], [0.0, 0.0, 1.0, 2.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [3.0],
         [2.0, 4.0], [], [0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 1.0], [2.0, -1.0, 3.0, 0.5, -7.0, 1.0],
         [1.0, 0.0, 1.0], [5.0, 0.0]]


def test_roots_against_numpy_eagerly_and_compiled_with_a_dynamic_length():
    f = dynjax.qjit(jnp.roots, abstracted_axes={0: "n"})
    for p in POLYS:
        p = np.array(p, np.float64)
        want = np.roots(p)
        eager, compiled = jnp.roots(p), f(p)
        for got in (eager, compiled):
            assert got.dtype == np.complex128
            same_multiset(got, want.astype(np.complex128), 1e-10)
        np.testing.assert_allclose(compiled, eager, rtol=1e-12, atol=1e-12)
    assert f.cache_info()["traces"] == 1
    # stripping under tracing gives a run-time length
    assert "dynamic_slice" in str(f.jaxpr)


def test_roots_strip_zeros_false_follows_jax():
    g = dynjax.qjit(lambda p: jnp.roots(p, strip_zeros=False), abstracted_axes={0: "n"})
    for p in POLYS:
        p = np.array(p, np.float64)
        want = np.asarray(jjnp.roots(p, strip_zeros=False))
        for got in (jnp.roots(p, strip_zeros=False), g(p)):
            assert got.shape == (max(len(p) - 1, 0),) and got.dtype == np.complex128
            nan = np.isnan(got)
            np.testing.assert_array_equal(nan, np.isnan(want))   # NaNs last, one per leading zero
            same_multiset(got[~nan], want[~np.isnan(want)], 1e-10)
            if len(p) > 1 and p.any():
                same_multiset(got[~nan], np.roots(p), 1e-10)
    assert g.cache_info()["traces"] == 1


def test_roots_dtypes_and_inputs():
    p = [1, -3, 2]
    for dt, cdt in ((np.int64, np.complex128), (np.int8, np.complex128), (np.bool_, np.complex128),
                    (np.uint32, np.complex128), (np.float32, np.complex64), (np.float64, np.complex128),
                    (np.complex64, np.complex64), (np.complex128, np.complex128)):
        x = np.array(p if dt != np.bool_ else [1, 1, 0]).astype(dt)
        for fn in (jnp.roots, dynjax.qjit(jnp.roots)):
            got = fn(x)
            assert got.dtype == cdt, (dt, got.dtype)
            same_multiset(got, np.roots(x).astype(np.complex128), 1e-5 if cdt == np.complex64 else 1e-10)
    for dt in (np.float16, ml_dtypes.bfloat16):
        with pytest.raises(TypeError, match="roots"):
            jnp.roots(np.array(p, dt))
    assert jnp.roots(3.0).shape == (0,) and jnp.roots(3.0).dtype == np.complex128
    same_multiset(jnp.roots([1j, 1.0]), np.roots([1j, 1.0]), 1e-12)
    with pytest.raises(ValueError, match="1-d"):
        jnp.roots(np.ones((2, 2)))


def test_poly_of_a_square_matrix():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = dynjax.qjit(jnp.poly, abstracted_axes=SQUARE)
    for got in (jnp.poly(a), f(a)):
        assert got.dtype == np.complex128     # JAX: complex for a matrix
        np.testing.assert_allclose(got, np.poly(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jnp.poly(2.0), np.poly([2.0]))   # a scalar is one root (JAX)
    with pytest.raises(ValueError, match="poly"):
        jnp.poly(np.ones((2, 3)))


def test_roots_of_poly_round_trip_compiled():
    @dynjax.qjit(abstracted_axes={0: "n"})
    def round_trip(r):
        return jnp.roots(jnp.poly(r))
    for r in ([1.0, 2.0, 3.0], [-1.0, 0.5], [4.0]):
        same_multiset(round_trip(np.array(r)), np.array(r, complex), 1e-9)


# ----------------------------------------------------------------------------------------------
# polyfit
# ----------------------------------------------------------------------------------------------
def _fit_data(m=40, seed=5):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 10.0, m)
    return x, np.sin(x) + 0.01 * rng.normal(size=m)


@pytest.mark.parametrize("deg", [8, 9, 10])
def test_polyfit_ill_conditioned_against_numpy(deg):
    x, y = _fit_data()
    want = np.polyfit(x, y, deg)
    f = dynjax.qjit(lambda x, y: jnp.polyfit(x, y, deg), abstracted_axes=({0: "m"}, {0: "m"}))
    for got in (jnp.polyfit(x, y, deg), f(x, y)):
        # cond(Vandermonde) ~ 1e10 here: the normal equations lose everything, least squares
        # keeps about 1e-16 * cond digits
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
        np.testing.assert_allclose(np.polyval(got, x), np.polyval(want, x), rtol=0, atol=1e-9)
    # the fit is as good as numpy's: the residual is within rounding of the optimum
    r_got = np.sum((np.polyval(jnp.polyfit(x, y, deg), x) - y) ** 2)
    r_want = np.sum((np.polyval(want, x) - y) ** 2)
    assert r_got <= r_want * (1 + 1e-8)


def _outputs(o):
    return list(o) if isinstance(o, tuple) else [o]


@pytest.mark.parametrize("kw", [{}, {"full": True}, {"cov": True}, {"cov": "unscaled"}, {"w": True},
                                {"w": True, "full": True}, {"w": True, "cov": True}, {"rcond": 1e-3, "full": True}],
                         ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "default")
@pytest.mark.parametrize("two_d", [False, True], ids=["1d", "2d"])
def test_polyfit_signature_and_results(kw, two_d):
    x, y = _fit_data(25)
    if two_d:
        y = np.stack([y, 2 * y + x, x ** 2], 1)
    w = np.linspace(0.5, 2.0, len(x))
    kw = dict(kw)
    args = (x, y, w) if kw.pop("w", False) else (x, y, None)

    def fit(x, y, w, m=jnp):
        return m.polyfit(x, y, 4, w=w, **kw)
    want = _outputs(np.polyfit(*args[:2], 4, w=args[2], **kw))
    jax_out = _outputs(fit(*args, m=jjnp))
    axes = ({0: "m"}, {0: "m"}, {0: "m"}) if args[2] is not None else ({0: "m"}, {0: "m"})
    f = dynjax.qjit(fit if args[2] is not None else (lambda x, y: fit(x, y, None)), abstracted_axes=axes)
    compiled = _outputs(f(*args) if args[2] is not None else f(*args[:2]))
    for got in (_outputs(fit(*args)), compiled):
        assert len(got) == len(want) == len(jax_out)
        for g, nw, jw in zip(got, want, jax_out):
            g = np.asarray(g)
            assert g.shape == np.shape(jw) == np.shape(nw), (g.shape, np.shape(jw), np.shape(nw))
            assert g.dtype == np.asarray(jw).dtype, (g.dtype, np.asarray(jw).dtype)
            np.testing.assert_allclose(g, jw, rtol=1e-7, atol=1e-12)
            np.testing.assert_allclose(g, nw, rtol=1e-7, atol=1e-12)


def test_polyfit_dynamic_length_one_trace_and_float32():
    f = dynjax.qjit(lambda x, y: jnp.polyfit(x, y, 3, full=True), abstracted_axes=({0: "m"}, {0: "m"}))
    for m in (4, 9, 30):
        x, y = _fit_data(m)
        for g, w in zip(f(x, y), np.polyfit(x, y, 3, full=True)):
            if np.size(w):   # numpy gives no residuals when m == deg + 1
                np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-10)
    assert f.cache_info()["traces"] == 1
    x, y = _fit_data(20)
    p32 = jnp.polyfit(x.astype(np.float32), y.astype(np.float32), 3)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, np.polyfit(x, y, 3), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="deg >= 0"):
        jnp.polyfit(x, y, -1)
    with pytest.raises(TypeError, match="same length"):
        jnp.polyfit(x, y[:5], 2)
    with pytest.raises(ValueError, match="exceed order"):
        jnp.polyfit(x[:3], y[:3], 2, cov=True)
