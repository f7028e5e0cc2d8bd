"""dynjax.numpy.linalg against numpy.linalg: eager (the numpy impl rules) and compiled (jaxlib's
LAPACK custom calls), with dynamic sizes served by one trace, batches, the four LAPACK dtypes,
derivatives against finite differences, vmap, failures (NaNs instead of LinAlgError), errors
and threads.

LAPACK and numpy may pick different algorithms (``solve`` is QR-based when compiled), so
values are compared with tolerances, and decompositions also by reconstruction
(``Q @ R == A``, ``U @ diag(S) @ Vh == A``, ``L @ L^H == A``, ``A @ v == v * w``).
"""
from __future__ import annotations

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.lax import linalg as L
from helpers import in_threads

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SQUARE = {0: "n", 1: "n"}


def tol(dt):
    return 2e-4 if np.dtype(dt) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-10


def rnd(rng, shape, dt):
    x = rng.normal(size=shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dt)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(got, want, dt, scale=1.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol(dt) * scale, atol=tol(dt) * scale)


def _inputs(rng, n, dt, batch=()):
    a = rnd(rng, batch + (n, n), dt) + 2 * np.eye(n, dtype=dt)     # well conditioned
    h = a + H(a)                                                       # Hermitian
    p = a @ H(a) + n * np.eye(n, dtype=dt)                             # positive definite
    b = rnd(rng, batch + (n, 2), dt)
    return a, h, p, b


def square_suite(a, h, p, b):
    la = jnp.linalg
    w, v = la.eigh(h)
    q, r = la.qr(a)
    u, s, vh = la.svd(a)
    sign, logdet = la.slogdet(a)
    return dict(solve=la.solve(a, b), inv=la.inv(a), det=la.det(a), sign=sign, logdet=logdet,
                chol=la.cholesky(p), cholu=la.cholesky(p, upper=True), w=w, v=v, q=q, r=r, u=u, s=s,
                vh=vh, eigvalsh=la.eigvalsh(h), svdvals=la.svd(a, compute_uv=False))


def check_square(out, a, h, p, b, dt):
    n = a.shape[-1]
    eye = np.eye(n)
    for key, o in out.items():
        assert np.asarray(o).dtype == (np.dtype(dt) if key not in ("w", "s", "logdet", "eigvalsh", "svdvals")
                                       else np.finfo(dt).dtype), key
    close(out["solve"], np.linalg.solve(a, b), dt, 10)
    close(out["inv"], np.linalg.inv(a), dt, 10)
    close(out["det"], np.linalg.det(a), dt, 10)
    sign, logdet = np.linalg.slogdet(a)
    close(out["sign"], sign, dt)
    close(out["logdet"], logdet, dt)
    close(out["chol"], np.linalg.cholesky(p), dt, 10)
    close(out["cholu"], H(np.linalg.cholesky(p)), dt, 10)
    close(out["chol"] @ H(out["chol"]), p, dt, 10)
    wn = np.linalg.eigvalsh(h)
    close(out["w"], wn, dt, 10)
    close(out["eigvalsh"], wn, dt, 10)
    close(h @ out["v"], out["v"] * out["w"][..., None, :], dt, 10)
    close(H(out["v"]) @ out["v"], np.broadcast_to(eye, out["v"].shape), dt)
    close(out["q"] @ out["r"], a, dt, 10)
    close(H(out["q"]) @ out["q"], np.broadcast_to(eye, out["q"].shape), dt)
    close(out["r"], np.triu(out["r"]), dt)
    close(np.abs(out["r"]), np.abs(np.linalg.qr(a)[1]), dt, 10)
    sn = np.linalg.svd(a, compute_uv=False)
    close(out["s"], sn, dt, 10)
    close(out["svdvals"], sn, dt, 10)
    close((out["u"] * out["s"][..., None, :]) @ out["vh"], a, dt, 10)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_square_functions_eager_and_compiled_one_trace(dt):
    f = dynjax.qjit(square_suite, abstracted_axes=(SQUARE, SQUARE, SQUARE, {0: "n"}))
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5):
        args = _inputs(rng, n, dt)
        check_square(square_suite(*args), *args, dt)       # eager: numpy impls
        check_square(f(*args), *args, dt)                   # compiled: LAPACK custom calls
    assert f.cache_info()["traces"] == 1


def test_batched_inputs_with_a_dynamic_batch():
    dt = np.float64
    f = dynjax.qjit(square_suite, abstracted_axes=({0: "b", 1: "n", 2: "n"},) * 3 + ({0: "b", 1: "n"},))
    rng = np.random.default_rng(1)
    for bsz, n in ((3, 2), (1, 5), (0, 3), (2, 0)):
        args = _inputs(rng, n, dt, batch=(bsz,))
        check_square(square_suite(*args), *args, dt)
        check_square(f(*args), *args, dt)
    assert f.cache_info()["traces"] == 1
    # two batch axes, static
    args = _inputs(rng, 3, np.complex128, batch=(2, 3))
    check_square(dynjax.qjit(square_suite)(*args), *args, np.complex128)


def test_solve_broadcasting_and_vector_rhs():
    rng = np.random.default_rng(2)
    a = rnd(rng, (2, 1, 3, 3), np.float64) + 3 * np.eye(3)
    b = rnd(rng, (4, 3, 2), np.float64)
    v = rnd(rng, (3,), np.float64)
    f = dynjax.qjit(lambda a, b, v: (jnp.linalg.solve(a, b), jnp.linalg.solve(a, v)))
    for x, y in ((jnp.linalg.solve(a, b), jnp.linalg.solve(a, v)), f(a, b, v)):
        close(x, np.linalg.solve(a, b), np.float64, 10)
        close(y, np.linalg.solve(a, v), np.float64, 10)
    # a dynamic vector right-hand side
    g = dynjax.qjit(jnp.linalg.solve, abstracted_axes=(SQUARE, {0: "n"}))
    for n in (0, 1, 4):
        a = rnd(rng, (n, n), np.float64) + 3 * np.eye(n)
        b = rnd(rng, (n,), np.float64)
        close(g(a, b), np.linalg.solve(a, b), np.float64, 10)
    assert g.cache_info()["traces"] == 1


def rect_suite(a):
    la = jnp.linalg
    q, r = la.qr(a)
    qc, rc = la.qr(a, mode="complete")
    u, s, vh = la.svd(a)
    ur, sr, vhr = la.svd(a, full_matrices=False)
    return dict(q=q, r=r, qc=qc, rc=rc, ronly=la.qr(a, mode="r"), u=u, s=s, vh=vh, ur=ur, sr=sr,
                vhr=vhr, sv=la.svd(a, compute_uv=False), fro=la.norm(a, "fro"), nuc=la.norm(a, "nuc"),
                two=la.norm(a, 2))


def check_rect(out, a, dt):
    m, n = a.shape
    qn, rn = np.linalg.qr(a)
    qcn, rcn = np.linalg.qr(a, mode="complete")
    assert out["q"].shape == qn.shape and out["r"].shape == rn.shape
    assert out["qc"].shape == qcn.shape and out["rc"].shape == rcn.shape
    close(out["q"] @ out["r"], a, dt, 10)
    close(out["qc"] @ out["rc"], a, dt, 10)
    close(np.abs(out["r"]), np.abs(rn), dt, 10)
    close(np.abs(out["ronly"]), np.abs(rn), dt, 10)
    close(H(out["qc"]) @ out["qc"], np.eye(m), dt)
    un, sn, vhn = np.linalg.svd(a)
    k = min(m, n)
    assert out["u"].shape == un.shape and out["vh"].shape == vhn.shape
    close(out["s"], sn, dt, 10)
    close(out["sv"], sn, dt, 10)
    close(H(out["u"]) @ out["u"], np.eye(m), dt)
    close(out["vh"] @ H(out["vh"]), np.eye(n), dt)
    close((out["u"][:, :k] * out["s"]) @ out["vh"][:k], a, dt, 10)
    close((out["ur"] * out["sr"]) @ out["vhr"], a, dt, 10)
    assert out["ur"].shape == (m, k) and out["vhr"].shape == (k, n)
    if k:
        close(out["nuc"], np.linalg.norm(a, "nuc"), dt, 10)
        close(out["two"], np.linalg.norm(a, 2), dt, 10)
    close(out["fro"], np.linalg.norm(a, "fro"), dt, 10)


@pytest.mark.parametrize("dt", [np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_rectangular_qr_and_svd(dt):
    f = dynjax.qjit(rect_suite, abstracted_axes={0: "m", 1: "n"})
    rng = np.random.default_rng(3)
    for m, n in ((3, 3), (5, 2), (2, 5), (1, 1), (0, 3), (3, 0), (0, 0)):
        a = rnd(rng, (m, n), dt)
        check_rect(f(a), a, dt)
        if m and n:
            check_rect(rect_suite(a), a, dt)
    assert f.cache_info()["traces"] == 1


def test_integer_inputs_promote_to_float64():
    a = np.array([[4, 1], [1, 3]])
    for fn in (jnp.linalg.det, jnp.linalg.inv, jnp.linalg.cholesky, lambda x: jnp.linalg.solve(x, [1, 2]),
               lambda x: jnp.linalg.norm(x), lambda x: jnp.linalg.eigh(x)[0]):
        for g in (fn, dynjax.qjit(fn)):
            assert np.asarray(g(a)).dtype == np.float64
    np.testing.assert_allclose(jnp.linalg.det(a), 11.0)


# ----------------------------------------------------------------------------------------------
# norm
# ----------------------------------------------------------------------------------------------
NORM_CASES = [
    (None, None, False), (None, None, True), (None, 1, False), (2, 1, True), (1, 0, False),
    (np.inf, 1, False), (-np.inf, 1, False), (0, 1, False), (3, 1, False), (-1.5, 0, False),
    ("fro", (0, 1), False), (1, (0, 1), False), (-1, (1, 0), True), (np.inf, (0, 1), False),
    (-np.inf, (0, 1), False), (2, (0, 1), False), (-2, (1, 0), False), ("nuc", (0, 1), True),
    (None, (0, 1), False), (1, None, False), (np.inf, None, True), ("fro", None, False),
]


def norms(x):
    return [jnp.linalg.norm(x, o, ax, kd) for o, ax, kd in NORM_CASES]


@pytest.mark.filterwarnings("ignore:divide by zero")   # numpy's own, for a negative ord and a zero
@pytest.mark.parametrize("dt", [np.float64, np.complex128, np.int64], ids=lambda d: np.dtype(d).name)
def test_norm(dt):
    f = dynjax.qjit(norms, abstracted_axes={0: "m", 1: "n"})
    rng = np.random.default_rng(4)
    for m, n in ((3, 4), (1, 1), (5, 2)):
        x = rnd(rng, (m, n), np.float64 if dt == np.int64 else dt)
        if dt == np.int64:
            x = np.round(x * 3).astype(np.int64)
            x[0, 0] = 0
        want = [np.linalg.norm(x, o, ax, kd) for o, ax, kd in NORM_CASES]
        for got in (norms(x), f(x)):
            for g, w, case in zip(got, want, NORM_CASES):
                np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=str(case))
                assert np.shape(g) == np.shape(w), case
    assert f.cache_info()["traces"] == 1
    v = np.array([3.0, -4.0])
    assert float(jnp.linalg.norm(v)) == 5.0
    np.testing.assert_allclose(jnp.linalg.vector_norm(np.ones((2, 3)), axis=(0, 1), ord=1), 6.0)
    np.testing.assert_allclose(jnp.linalg.matrix_norm(np.eye(3)), np.sqrt(3.0))


# ----------------------------------------------------------------------------------------------
# derivatives
# ----------------------------------------------------------------------------------------------
def _fd(f, x, t, eps=1e-6):
    return (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)


def _grad_cases(n, rng):
    a = rng.normal(size=(n, n)) + 2 * np.eye(n)
    spd = a @ a.T + n * np.eye(n)
    b = rng.normal(size=(n, 2))
    da = rng.normal(size=(n, n))
    ds = da + da.T
    la = jnp.linalg
    return {
        "solve_a": (lambda x: la.solve(x, b), a, da),
        "solve_b": (lambda x: la.solve(a, x), b, rng.normal(size=(n, 2))),
        "inv": (la.inv, a, da),
        "det": (la.det, a, da),
        "slogdet": (lambda x: la.slogdet(x).logabsdet, a, da),
        "cholesky": (la.cholesky, spd, ds),
        "eigh_w": (lambda x: la.eigh(x).eigenvalues, spd, ds),
        "eigh_v": (lambda x: jnp.abs(la.eigh(x).eigenvectors), spd, ds),
        "qr_q": (lambda x: la.qr(x).Q, a, da),
        "qr_r": (lambda x: la.qr(x).R, a, da),
        "svd_s": (lambda x: la.svd(x, compute_uv=False), a, da),
        "svd_u": (lambda x: jnp.abs(la.svd(x).U), a, da),
        "svd_vh": (lambda x: jnp.abs(la.svd(x).Vh), a, da),
        "norm_2": (lambda x: la.norm(x, 2), a, da),
    }


@pytest.mark.parametrize("name", list(_grad_cases(3, np.random.default_rng(0))))
def test_jvp_and_grad_against_finite_differences(name):
    rng = np.random.default_rng(5)
    f, x, t = _grad_cases(4, rng)[name]
    _, tangent = dynjax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tangent, _fd(f, x, t), rtol=1e-5, atol=1e-6)
    loss = lambda x: jnp.sum(jnp.sin(f(x)))   # noqa: E731
    g = dynjax.grad(loss)(x)
    np.testing.assert_allclose(np.sum(g * t), _fd(lambda y: np.sum(np.sin(np.asarray(f(y)))), x, t),
                               rtol=1e-5, atol=1e-6)


def test_grad_compiled_with_a_dynamic_size():
    def loss(a, p):
        la = jnp.linalg
        return (jnp.sum(la.inv(a)) + la.slogdet(a).logabsdet + la.det(a) + jnp.sum(la.cholesky(p))
                + jnp.sum(la.eigh(p).eigenvalues ** 2) + jnp.sum(la.svd(a, compute_uv=False)))
    g = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes=(SQUARE, SQUARE))
    rng = np.random.default_rng(6)
    for n in (1, 2, 5):
        a = rng.normal(size=(n, n)) + 3 * np.eye(n)
        p = a @ a.T + np.eye(n)
        want = dynjax.grad(loss, argnums=(0, 1))(a, p)
        for got, w in zip(g(a, p), want):
            np.testing.assert_allclose(got, w, rtol=1e-8, atol=1e-10)
    assert g.cache_info()["traces"] == 1


def test_complex_derivatives():
    rng = np.random.default_rng(7)
    n = 3
    a = rnd(rng, (n, n), np.complex128) + 2 * np.eye(n)
    t = rnd(rng, (n, n), np.complex128)
    b = rnd(rng, (n,), np.complex128)
    for f in (jnp.linalg.det, jnp.linalg.inv, lambda x: jnp.linalg.solve(x, b),
              lambda x: jnp.linalg.slogdet(x).sign, lambda x: jnp.linalg.slogdet(x).logabsdet,
              lambda x: jnp.linalg.qr(x).R):
        _, tangent = dynjax.jvp(f, (a,), (t,))
        np.testing.assert_allclose(tangent, _fd(f, a, t), rtol=1e-5, atol=1e-6)
    p = a @ H(a) + n * np.eye(n)
    ts = t + H(t)
    _, tangent = dynjax.jvp(jnp.linalg.cholesky, (p,), (ts,))
    np.testing.assert_allclose(tangent, _fd(jnp.linalg.cholesky, p, ts), rtol=1e-5, atol=1e-6)


def test_vmap_matches_the_batched_call():
    rng = np.random.default_rng(8)
    a, h, p, b = _inputs(rng, 3, np.float64, batch=(4,))
    la = jnp.linalg
    fns = [la.det, la.inv, la.cholesky, lambda x: la.eigh(x).eigenvalues, lambda x: la.svd(x).S,
           lambda x: la.qr(x).R, lambda x: la.slogdet(x).logabsdet]
    for fn in fns:
        close(dynjax.vmap(fn)(p), fn(p), np.float64, 10)
    # solve with one operand unbatched, and with the batch axis elsewhere
    close(dynjax.vmap(la.solve, in_axes=(0, None))(a, b[0]), np.linalg.solve(a, b[0]), np.float64, 10)
    close(dynjax.vmap(la.solve, in_axes=(None, 2))(a[0], np.moveaxis(b, 0, 2)), np.linalg.solve(a[0], b),
          np.float64, 10)
    f = dynjax.qjit(dynjax.vmap(lambda x: la.det(x) + jnp.sum(la.inv(x))),
                    abstracted_axes={0: "b", 1: "n", 2: "n"})
    for bsz, n in ((2, 3), (3, 1)):
        x = rng.normal(size=(bsz, n, n)) + 3 * np.eye(n)
        close(f(x), np.linalg.det(x) + np.linalg.inv(x).sum(axis=(1, 2)), np.float64, 10)
    assert f.cache_info()["traces"] == 1


# ----------------------------------------------------------------------------------------------
# failures, errors, lowering, threads
# ----------------------------------------------------------------------------------------------
def test_failures_give_nans_eagerly_and_compiled():
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    zero = np.zeros((2, 2))
    batch = np.stack([not_pd, np.eye(2)])

    def fn(x, s, z):
        return jnp.linalg.cholesky(x), jnp.linalg.solve(z, jnp.sum(z, axis=1) * 0.0 + 1.0), jnp.linalg.det(s), \
            jnp.linalg.slogdet(z)
    for g in (fn, dynjax.qjit(fn, abstracted_axes=({1: "n", 2: "n"}, SQUARE, SQUARE))):
        chol, x, d, (sign, logdet) = g(batch, singular, zero)
        assert np.isnan(chol[0]).all() and np.allclose(chol[1], np.eye(2))
        assert not np.isfinite(x).any()
        assert abs(d) < 1e-12
        assert sign == 0 and logdet == -np.inf


def test_bad_inputs_raise_clear_errors():
    la = jnp.linalg
    with pytest.raises(ValueError, match="inv: the last two dimensions of a must be square"):
        la.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="det: a must have at least 2 dimensions"):
        la.det(np.ones(3))
    with pytest.raises(ValueError, match="cholesky: the last two dimensions"):
        dynjax.qjit(la.cholesky)(np.ones((3, 2)))
    with pytest.raises(TypeError, match="float16"):
        la.det(np.ones((2, 2), np.float16))
    with pytest.raises(ValueError, match="solve: b has 3 rows"):
        la.solve(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="solve: b must be at least 1-dimensional"):
        la.solve(np.eye(2), 1.0)
    with pytest.raises(TypeError, match="not known to be equal"):
        dynjax.qjit(la.det, abstracted_axes={0: "m", 1: "n"})(np.eye(2))
    with pytest.raises(ValueError, match="UPLO"):
        la.eigh(np.eye(2), UPLO="X")
    with pytest.raises(ValueError, match="unrecognized mode"):
        la.qr(np.eye(2), mode="economic")
    with pytest.raises(ValueError, match="invalid norm order"):
        la.norm(np.ones(3), "fro")
    with pytest.raises(ValueError, match="invalid norm order"):
        la.norm(np.ones((2, 2)), 3)
    with pytest.raises(TypeError, match="must be float32"):
        L.det(np.ones((2, 2), np.int64))


def test_lowering_emits_lapack_custom_calls_that_specialize_to_static_types():
    f = dynjax.qjit(lambda a: (jnp.linalg.cholesky(a), jnp.linalg.eigh(a).eigenvalues),
                    abstracted_axes=SQUARE)
    a = np.eye(3) * 2.0
    f(a)
    assert "stablehlo.custom_call @lapack_dpotrf_ffi" in f.mlir
    assert "indices_of_shape_operands" in f.mlir and "tensor<?x?xf64>" in f.mlir
    static = f.mlir_specialized
    assert "lapack_dsyevd_ffi" in static and "?" not in static
    assert "indices_of_shape_operands" not in static


def test_serialized_executable_roundtrip():
    from dynjax import runtime
    f = dynjax.qjit(jnp.linalg.det)
    f(np.eye(2))
    text = f.mlir_specialized
    exe = runtime.compile(text)
    exe2 = runtime.deserialize(runtime.serialize(exe))
    np.testing.assert_allclose(exe2(np.array([[2.0, 1.0], [1.0, 3.0]]))[0], 5.0)


def test_cost_rules():
    cost = dynjax.cost_analysis(lambda a: (jnp.linalg.det(a), jnp.linalg.svd(a)), np.eye(3),
                                abstracted_axes=SQUARE)
    assert cost.at(n=10)["flops"] > cost.at(n=5)["flops"] > 0


def test_threads_share_one_compiled_function():
    f = dynjax.qjit(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.det(a), jnp.linalg.eigh(a + a.T)[0]),
                    abstracted_axes=(SQUARE, {0: "n"}))

    def work(seed):
        rng = np.random.default_rng(seed)
        for i in range(12):
            n = (seed + i) % 5 + 1
            a = rng.normal(size=(n, n)) + 3 * np.eye(n)
            b = rng.normal(size=n)
            x, d, w = f(a, b)
            np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9, atol=1e-10)
            np.testing.assert_allclose(d, np.linalg.det(a), rtol=1e-9)
            np.testing.assert_allclose(w, np.linalg.eigvalsh(a + a.T), rtol=1e-9, atol=1e-10)
    in_threads(work, range(4))
    assert f.cache_info()["traces"] == 1


def test_rectangular_derivatives():
    rng = np.random.default_rng(9)
    la = jnp.linalg
    for shape in ((5, 3), (3, 5)):
        a, t = rng.normal(size=shape), rng.normal(size=shape)
        fns = [lambda x: jnp.abs(la.svd(x, full_matrices=False).U), lambda x: jnp.abs(la.svd(x, full_matrices=False).Vh),
               lambda x: la.svd(x, compute_uv=False)]
        if shape[0] > shape[1]:
            fns += [lambda x: la.qr(x).Q, lambda x: la.qr(x).R]
        for f in fns:
            _, tangent = dynjax.jvp(f, (a,), (t,))
            np.testing.assert_allclose(tangent, _fd(f, a, t), rtol=1e-5, atol=1e-6)
        # svd with dynamic (unordered) sizes: both off-span terms are added
        g = dynjax.qjit(lambda x, t: dynjax.jvp(fns[0], (x,), (t,))[1], abstracted_axes=({0: "m", 1: "n"},) * 2)
        np.testing.assert_allclose(g(a, t), dynjax.jvp(fns[0], (a,), (t,))[1], rtol=1e-8, atol=1e-10)
    with pytest.raises(NotImplementedError, match="derivative of qr"):
        dynjax.jvp(lambda x: la.qr(x).Q, (np.ones((2, 3)),), (np.ones((2, 3)),))
