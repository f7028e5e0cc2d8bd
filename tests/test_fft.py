"""dynjax.numpy.fft and lax.fft: against numpy and jax, eagerly and compiled, on static and
dynamic lengths, under grad / vjp and vmap, plus the cost rule and the errors."""
from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(7)


def real(*shape):
    return RNG.standard_normal(shape)


def cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def close(got, want, rtol=1e-10, atol=1e-10):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------------------------
# eager, static shapes: every function against numpy (values) and jax (dtypes and values)
# ----------------------------------------------------------------------------------------------
ONE_AXIS = [
    ("fft", cplx, {}), ("fft", real, dict(n=4, axis=0, norm="ortho")), ("fft", cplx, dict(n=9, norm="forward")),
    ("ifft", cplx, dict(n=5)), ("ifft", cplx, dict(axis=0, norm="ortho")), ("ifft", real, dict(norm="forward")),
    ("rfft", real, {}), ("rfft", real, dict(n=7, axis=0)), ("rfft", real, dict(norm="ortho")),
    ("irfft", cplx, {}), ("irfft", cplx, dict(n=9, axis=0, norm="ortho")), ("irfft", cplx, dict(n=4, norm="forward")),
    ("hfft", cplx, {}), ("hfft", cplx, dict(n=7, norm="ortho")), ("hfft", real, dict(norm="forward")),
    ("ihfft", real, {}), ("ihfft", real, dict(n=5, axis=0, norm="ortho")), ("ihfft", real, dict(norm="forward")),
]


@pytest.mark.parametrize("name,make,kw", ONE_AXIS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(ONE_AXIS)])
def test_one_axis_against_numpy_and_jax(name, make, kw):
    x = make(4, 6)
    got = getattr(jnp.fft, name)(x, **kw)
    close(got, getattr(np.fft, name)(x, **kw))
    close(got, getattr(jjnp.fft, name)(x, **kw))


N_AXES = [
    ("fft2", cplx, {}), ("fft2", real, dict(s=(3, 8), norm="ortho")), ("ifft2", cplx, dict(axes=(0, 2))),
    ("rfft2", real, {}), ("irfft2", cplx, dict(s=(4, 7))),
    ("fftn", cplx, {}), ("fftn", real, dict(s=(2, 5), axes=(2, 3), norm="forward")), ("ifftn", cplx, dict(axes=(2, 0, 1, 3))),
    ("rfftn", real, {}), ("rfftn", real, dict(axes=(1, 3), s=(6, 3))), ("irfftn", cplx, {}),
    ("irfftn", cplx, dict(s=(2, 3, 5, 6), axes=(0, 1, 2, 3), norm="ortho")),
]


@pytest.mark.parametrize("name,make,kw", N_AXES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(N_AXES)])
def test_several_axes_against_numpy_and_jax(name, make, kw):
    x = make(3, 4, 5, 4)     # four axes: fftn splits them in groups of at most three
    got = getattr(jnp.fft, name)(x, **kw)
    close(got, getattr(np.fft, name)(x, **kw))
    close(got, getattr(jjnp.fft, name)(x, **kw))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint8", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_dtypes_follow_jax(dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfftn"):
        try:
            want = getattr(jjnp.fft, name)(x)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(jnp.fft, name)(x)
            continue
        got = getattr(jnp.fft, name)(x)
        tol = 1e-5 if np.dtype(got.dtype).itemsize <= 8 and np.dtype(got.dtype).kind != "f" or \
            got.dtype == np.float32 else 1e-12
        close(got, np.asarray(want), rtol=tol, atol=tol)


def test_frequencies_and_shifts():
    for n, d in ((1, 1.0), (6, 0.1), (7, 2.5)):
        close(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
        close(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
        close(jnp.fft.fftfreq(n, d, dtype=np.float32), np.asarray(jjnp.fft.fftfreq(n, d, dtype=np.float32)),
              rtol=1e-6)
    x = real(3, 4, 5)
    close(jnp.fft.fftshift(x), np.fft.fftshift(x))
    close(jnp.fft.ifftshift(x, axes=(0, 2)), np.fft.ifftshift(x, axes=(0, 2)))
    close(jnp.fft.fftshift(x, axes=1), np.fft.fftshift(x, axes=1))


def test_lax_fft_with_jax_signature():
    x = cplx(2, 3, 4)
    close(lax.fft(x, lax.FftType.FFT, (3, 4)), np.asarray(jax.lax.fft(x, jax.lax.FftType.FFT, (3, 4))))
    close(lax.fft(x, "IFFT", (4,)), np.asarray(jax.lax.fft(x, "IFFT", (4,))))
    r = real(2, 3, 4)
    close(lax.fft(r, lax.FftType.RFFT, (3, 4)), np.asarray(jax.lax.fft(r, jax.lax.FftType.RFFT, (3, 4))))
    h = np.fft.rfftn(r, axes=(1, 2))
    close(lax.fft(h, lax.FftType.IRFFT, (3, 4)), np.asarray(jax.lax.fft(h, jax.lax.FftType.IRFFT, (3, 4))))
    assert [int(t) for t in lax.FftType] == [int(t) for t in jax.lax.FftType]


def test_empty_axes_give_empty_results():
    # jax: an FFT of zero points is empty; numpy raises
    close(jnp.fft.fft(np.zeros((2, 0))), np.asarray(jjnp.fft.fft(np.zeros((2, 0)))))
    close(jnp.fft.irfft(np.zeros((2, 1), complex)), np.asarray(jjnp.fft.irfft(np.zeros((2, 1), complex))))
    close(jnp.fft.fft(np.zeros((0, 4))), np.zeros((0, 4), complex))


def test_errors():
    x = real(3, 4)
    with pytest.raises(ValueError, match="norm"):
        jnp.fft.fft(x, norm="bad")
    with pytest.raises(ValueError, match="data points"):
        jnp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="real valued"):
        jnp.fft.rfft(cplx(3, 4))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.fft.fft(x, axis=2)
    with pytest.raises(ValueError, match="same length"):
        jnp.fft.fftn(x, s=(2, 3), axes=(0,))
    with pytest.raises(TypeError, match="n must be an int"):
        jnp.fft.fft(x, n=2.5)
    with pytest.raises(TypeError, match="complex64 or complex128"):
        lax.fft(x, "FFT", (4,))
    with pytest.raises(TypeError, match="trailing"):
        lax.fft(cplx(3, 4), "FFT", (5,))
    with pytest.raises(ValueError, match="fft_type"):
        lax.fft(cplx(3, 4), "DCT", (4,))


# ----------------------------------------------------------------------------------------------
# compiled, dynamic lengths: one trace serves every size
# ----------------------------------------------------------------------------------------------
def _program(np_, a):
    return (np_.fft.fft(a), np_.fft.ifft(a, norm="ortho"), np_.fft.rfft(a, norm="forward"),
            np_.fft.irfft(np_.fft.rfft(a), n=a.shape[-1]), np_.fft.fft(a, n=4), np_.fft.rfft(a, n=9),
            np_.fft.fft2(a), np_.fft.hfft(a + 0j), np_.fft.fftshift(a), np_.fft.ifftshift(a, axes=1))


def test_dynamic_length_compiled_one_trace():
    q = dynjax.qjit(lambda a: _program(jnp, a), abstracted_axes=({1: "n"},))
    for n in (2, 5, 8):
        a = real(3, n)
        for got, want in zip(q(a), _program(np, a)):
            close(got, want)
    assert q.cache_info()["traces"] == 1
    assert "@dynjax_fft" in q.mlir
    # a length of 1 and of 0 (numpy raises for 0 points; the result is empty, as in jax)
    a1 = real(3, 1)
    got = q(a1)
    for k, fn in enumerate((np.fft.fft, lambda a: np.fft.ifft(a, norm="ortho"),
                            lambda a: np.fft.rfft(a, norm="forward"))):
        close(got[k], fn(a1))
    assert got[7].shape == (3, 0)      # hfft's default length 2 (m - 1) = 0: empty (numpy raises)
    with pytest.raises(ValueError, match="negative"):   # hfft's default length 2 (0 - 1)
        q(np.zeros((3, 0)))
    z = dynjax.qjit(lambda a: (jnp.fft.fft(a), jnp.fft.fft(a, n=4), jnp.fft.rfft(a)), abstracted_axes=({1: "n"},))
    zero = z(np.zeros((3, 0)))
    assert zero[0].shape == (3, 0) and zero[1].shape == (3, 4) and not np.any(zero[1])
    assert zero[2].shape == (3, 1) and not np.any(zero[2])


def test_dynamic_length_eager_and_jaxpr_agree():
    f = lambda a: jnp.fft.rfft(a) * 2
    closed = dynjax.make_jaxpr(f, abstracted_axes=({0: "n"},))(real(5))
    dynjax.check_jaxpr(closed.jaxpr)
    for n in (1, 4, 7):
        a = real(n)
        (out,) = [o for o in dynjax.eval_jaxpr(closed.jaxpr, closed.consts, n, a)[-1:]]
        close(out, np.fft.rfft(a) * 2)


def test_traced_n_and_static_lengths_compile_to_stablehlo_fft():
    t = dynjax.qjit(lambda a, n: (jnp.fft.irfft(a, n=n), jnp.fft.fftfreq(n, 0.5), jnp.fft.rfftfreq(n)))
    a = cplx(2, 4)
    for n in (3, 6, 7):
        got = t(a, n)
        close(got[0], np.fft.irfft(a, n=n))
        close(got[1], np.fft.fftfreq(n, 0.5))
        close(got[2], np.fft.rfftfreq(n))
    s = dynjax.qjit(lambda a: jnp.fft.fft(a))
    close(s(a), np.fft.fft(a))
    assert "stablehlo.fft" in s.mlir and "dynjax_fft" not in s.mlir


# ----------------------------------------------------------------------------------------------
# autodiff against jax
# ----------------------------------------------------------------------------------------------
LOSSES = {
    "fft": lambda np_, a: np_.sum(np_.abs(np_.fft.fft(a, norm="ortho")) ** 2 * np_.arange(6)),
    "fft_n": lambda np_, a: np_.sum(np_.real(np_.fft.fft(a)) * np_.arange(6)) + np_.sum(np_.imag(np_.fft.fft(a, n=4))),
    "rfft": lambda np_, a: np_.sum(np_.real(np_.fft.rfft(a)) * np_.arange(4) + np_.imag(np_.fft.rfft(a)) ** 2),
    "rfft_odd": lambda np_, a: np_.sum(np_.real(np_.fft.rfft(a, n=7)) * np_.arange(4))
    + np_.sum(np_.imag(np_.fft.rfft(a, n=5)) ** 2),
    "irfft": lambda np_, a: np_.sum(np_.fft.irfft(a * (1 + 2j)) * np_.arange(10)),
    "irfft_odd": lambda np_, a: np_.sum(np_.fft.irfft(a * (1 + 2j), n=9, norm="forward") ** 2),
    "hfft": lambda np_, a: np_.sum(np_.fft.hfft(a * (1 - 1j)) * np_.arange(10)),
    "ihfft": lambda np_, a: np_.sum(np_.abs(np_.fft.ihfft(a))),
    "rfft2": lambda np_, a: np_.sum(np_.abs(np_.fft.rfft2(a)) ** 2 * np_.arange(4)),
    "irfft2": lambda np_, a: np_.sum(np_.fft.irfft2(a + 0j, s=(3, 5)) * np_.arange(5)),
    "ifftn": lambda np_, a: np_.sum(np_.real(np_.fft.ifftn(a * (1 + 1j))) * np_.arange(6)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_against_jax(name):
    loss = LOSSES[name]
    x = real(3, 6)
    close(dynjax.grad(lambda a: loss(jnp, a))(x), np.asarray(jax.grad(lambda a: loss(jjnp, a))(x)))


def test_vjp_of_complex_inputs_against_jax():
    z = cplx(3, 6)
    ct = cplx(3, 6)
    for fn in ("fft", "ifft"):
        _, pull = dynjax.vjp(getattr(jnp.fft, fn), z)
        _, jpull = jax.vjp(getattr(jjnp.fft, fn), z)
        close(pull(ct)[0], np.asarray(jpull(ct)[0]))
    ct = real(3, 10)
    _, pull = dynjax.vjp(jnp.fft.irfft, z)
    _, jpull = jax.vjp(jjnp.fft.irfft, z)
    close(pull(ct)[0], np.asarray(jpull(ct)[0]))


def test_grad_compiled_on_a_dynamic_length():
    def loss(np_, a):
        return np_.sum(np_.abs(np_.fft.rfft(a)) ** 2 * np_.arange(a.shape[0] // 2 + 1)) \
            + np_.sum(np_.fft.irfft(a + 0j, n=7)) + np_.sum(np_.real(np_.fft.fft(a, n=3)))
    g = dynjax.qjit(dynjax.grad(lambda a: loss(jnp, a)), abstracted_axes=({0: "n"},))
    for n in (1, 4, 7):
        a = real(n)
        close(g(a), np.asarray(jax.grad(lambda a: loss(jjnp, a))(a)))
    assert g.cache_info()["traces"] == 1


def test_vmap():
    a = real(5, 2, 6)
    v = dynjax.vmap(lambda x: jnp.fft.fft2(x, s=(3, 4)), in_axes=1)
    close(v(a), np.stack([np.fft.fft2(a[:, i], s=(3, 4)) for i in range(2)]))
    w = dynjax.vmap(jnp.fft.irfft, in_axes=2, out_axes=1)
    z = cplx(3, 4, 2)
    close(w(z), np.stack([np.fft.irfft(z[..., i]) for i in range(2)], axis=1))
    q = dynjax.qjit(dynjax.vmap(jnp.fft.rfft), abstracted_axes=({1: "n"},))
    for n in (3, 8):
        b = real(2, n)
        close(q(b), np.fft.rfft(b))


# ----------------------------------------------------------------------------------------------
# cost
# ----------------------------------------------------------------------------------------------
def test_cost_is_5_n_log2_n():
    c = dynjax.cost_analysis(jnp.fft.fft, cplx(3, 8), abstracted_axes=({1: "n"},))
    assert c.formulas()["flops"] == "15*n*log2(n)"
    for n, lg in ((1, 0), (8, 3), (9, 4), (1024, 10)):
        assert c.at(n=n)["flops"] == 3 * 5 * n * lg
    s = dynjax.cost_analysis(lambda a: lax.fft(a, "FFT", (8,)), cplx(3, 8))
    assert s["flops"] == 3 * 5 * 8 * 3
    r = dynjax.cost_analysis(lambda a: lax.fft(a, "RFFT", (16,)), real(16))
    assert r["flops"] == 5 * 16 * 4 // 2
