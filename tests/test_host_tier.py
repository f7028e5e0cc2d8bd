"""The host tier (``execution/host_tier.py``): programs too small for XLA run as numpy calls.

The suite runs with the tier off (conftest.py), so that its other tests check what XLA
computes; here it is on. Checked: which sizes it serves and which it leaves to XLA; that its
generated programs compute exactly what the primitives' impl rules compute, for every
primitive the eager-versus-compiled cases draw (special values, every dtype); results against
numpy and against the compiled program at sizes 0, 1 and 5; results never share memory with
the arguments; no numpy warnings; introspection; threads; errors as the compiled path gives
them.
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
from dynjax.execution import tiers
import dynjax.numpy as jnp
from dynjax.execution import host_tier
from helpers import examples, in_threads

import test_eager_vs_compiled as evc


DEFAULT_BUDGET = host_tier.XLA_RUN_SECONDS


@pytest.fixture(autouse=True, scope="module")
def host_tier_on():
    # the tier decides by timing a program's run: with a budget of 1 ms, what these tests
    # expect on the host is hosted however loaded the machine (test_the_budget_decides)
    with host_tier_is("auto"), budget(1e-3):
        yield


@contextlib.contextmanager
def budget(seconds):
    before = host_tier.XLA_RUN_SECONDS
    host_tier.XLA_RUN_SECONDS = seconds
    try:
        yield
    finally:
        host_tier.XLA_RUN_SECONDS = before


@contextlib.contextmanager
def host_tier_is(value):
    before = os.environ.get("DYNJAX_HOST_TIER")
    os.environ["DYNJAX_HOST_TIER"] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ["DYNJAX_HOST_TIER"]
        else:
            os.environ["DYNJAX_HOST_TIER"] = before


def _served(f):
    info = f.cache_info()
    return info["host_runs"], info["host_programs"], info["compilations"]


def test_a_tiny_program_runs_on_the_host_and_compiles_nothing():
    f = dynjax.qjit(lambda x: jnp.sum(jnp.sin(x) * 2.0))
    for n in (0, 1, 5, 5, 5):
        x = np.linspace(-1.0, 2.0, n)
        np.testing.assert_allclose(f(x), np.sum(np.sin(x) * 2.0), rtol=1e-15, atol=0)
    runs, programs, compiled = _served(f)
    assert (runs, programs, compiled) == (5, 3, 0)


def test_large_sizes_loops_and_expensive_programs_are_compiled():
    f = dynjax.qjit(lambda x: x * 2.0 + 1.0, abstracted_axes={0: "n"})
    x = np.arange(host_tier.MAX_ELEMENTS + 1000.0)
    np.testing.assert_array_equal(f(x), x * 2.0 + 1.0)
    assert f.cache_info()["host_runs"] == 0   # more than MAX_ELEMENTS elements

    def loop(x):
        return dynjax.lax.fori_loop(0, 3, lambda i, c: c * 2.0, x)
    g = dynjax.qjit(loop)
    np.testing.assert_array_equal(g(np.ones(3)), np.full(3, 8.0))
    assert g.cache_info()["host_runs"] == 0   # a nested program: XLA's

    # 1000 elements through 6 transcendental functions: above the time budget (~18 us)
    h = dynjax.qjit(lambda x: jnp.tanh(jnp.exp(jnp.sin(jnp.cos(jnp.tanh(jnp.exp(x)))))))
    x = np.linspace(-1, 1, 1000)
    with budget(DEFAULT_BUDGET):
        np.testing.assert_allclose(h(x), np.tanh(np.exp(np.sin(np.cos(np.tanh(np.exp(x)))))), rtol=1e-14)
    assert h.cache_info()["host_runs"] == 0 and h.cache_info()["compilations"] == 1


def test_the_budget_decides_by_the_estimate():
    f = dynjax.qjit(lambda x: x + 1.0)
    with budget(1e-9):   # nothing is that cheap: XLA
        np.testing.assert_array_equal(f(np.ones(3)), np.full(3, 2.0))
    assert _served(f) == (0, 0, 1)
    with budget(1e-3):
        np.testing.assert_array_equal(f(np.ones(4)), np.full(4, 2.0))
    assert _served(f) == (1, 1, 1)
    host = f._last.program.single.last_executable
    assert isinstance(host, host_tier.HostProgram) and 0 < host.seconds < 1e-5


def test_off_always_and_forced_tiers():
    f = dynjax.qjit(lambda x: x + 1.0)
    with host_tier_is("off"):
        f(np.ones(3))
    assert _served(f) == (0, 0, 1)
    with host_tier_is("always"):
        g = dynjax.qjit(lambda x: jnp.tanh(jnp.exp(x)))
        x = np.linspace(-1, 1, 3000)
        np.testing.assert_array_equal(g(x), np.tanh(np.exp(x)))
    assert _served(g) == (1, 1, 0)
    with host_tier_is("sometimes"), pytest.raises(ValueError, match="DYNJAX_HOST_TIER"):
        dynjax.qjit(lambda x: x + 1.0)(np.ones(3))
    # a tier forced by DYNJAX_TIERS (tests, compiled values at every size) is not overridden
    h = dynjax.qjit(lambda x: x + 1.0)
    os.environ["DYNJAX_TIERS"] = "exact"
    try:
        h(np.ones(3))
    finally:
        del os.environ["DYNJAX_TIERS"]
    assert _served(h) == (0, 0, 1)


# A few programs a user writes, checked against numpy and against the compiled program
def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


PROGRAMS = [
    ("affine", lambda x: 3.0 * x - 1.0, lambda x: 3.0 * x - 1.0, lambda n: [np.linspace(-2, 2, n)]),
    ("softmax", _softmax, lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
     lambda n: [np.linspace(-3, 3, 3 * n).reshape(n, 3)]),
    ("mlp", _mlp, lambda x, w1, w2: np.tanh(x @ w1) @ w2,
     lambda n: [np.linspace(-1, 1, 4 * n).reshape(n, 4), np.linspace(-1, 1, 12).reshape(4, 3),
                np.linspace(0, 1, 6).reshape(3, 2)]),
    ("where", lambda x: jnp.where(x > 0, x, -2 * x), lambda x: np.where(x > 0, x, -2 * x),
     lambda n: [np.linspace(-2, 2, n).astype(np.float32)]),
    ("ints", lambda i: jnp.maximum(i * 7 + 3, -jnp.abs(i)), lambda i: np.maximum(i * 7 + 3, -np.abs(i)),
     lambda n: [np.arange(-n, n, dtype=np.int32)]),
    ("mean and cast", lambda x: jnp.mean(x.astype(jnp.float32)), lambda x: np.mean(x.astype(np.float32)),
     lambda n: [np.arange(n, dtype=np.int64)]),
    ("broadcast and reshape", lambda x: (x[:, None] * jnp.ones((1, 2))).reshape(-1),
     lambda x: (x[:, None] * np.ones((1, 2))).reshape(-1), lambda n: [np.arange(n, dtype=np.float64)]),
]


@pytest.mark.parametrize("name, fn, oracle, make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_programs_against_numpy_and_the_compiled_program(name, fn, oracle, make):
    axes = [{0: "n"}] + [None] * (len(make(1)) - 1)
    host = dynjax.qjit(fn, abstracted_axes=tuple(axes))
    compiled = dynjax.qjit(fn, abstracted_axes=tuple(axes))
    for n in (0, 1, 5):
        if name == "mean and cast" and n == 0:
            continue   # the mean of nothing: nan in both, with numpy's warning
        args = make(n)
        got = host(*args)
        with host_tier_is("off"):
            want = compiled(*args)
        expected = oracle(*args)
        assert got.dtype == want.dtype == np.asarray(expected).dtype and got.shape == want.shape
        np.testing.assert_allclose(got, expected, rtol=2e-6 if got.dtype == np.float32 else 1e-14, atol=1e-15)
        np.testing.assert_allclose(got, want, rtol=2e-6 if got.dtype == np.float32 else 1e-14, atol=1e-15)
        got2 = host(*args)   # the fast path
        np.testing.assert_array_equal(got2, got)
    assert host.cache_info()["host_runs"] == 6 - (name == "mean and cast") * 2
    assert host.cache_info()["compilations"] == 0


def test_results_are_new_writable_arrays():
    x = np.arange(4.0)
    cases = [lambda x: x, lambda x: (x, x), lambda x: x.reshape(2, 2), lambda x: (x + 1, x + 1),
             lambda x: jnp.broadcast_to(x[0], (3,)), lambda x: 2.0, lambda x: (x * 2, jnp.sum(x))]
    for fn in cases:
        f = dynjax.qjit(fn)
        for _ in range(2):   # the first call and the fast path
            outs = dynjax.tree_flatten(f(x))[0]
            for k, o in enumerate(outs):
                assert type(o) is np.ndarray and o.flags.writeable
                assert not np.may_share_memory(o, x)
                assert all(not np.may_share_memory(o, p) for p in outs[:k])
            before = [o.copy() for o in outs]
            for o in outs:
                o[...] = 7
            np.testing.assert_array_equal(x, np.arange(4.0))
            assert all(b.shape == o.shape for b, o in zip(before, outs))
        assert f.cache_info()["host_runs"] == 2


def test_overflow_gives_inf_without_a_warning():
    f = dynjax.qjit(lambda x: x * 1e300 - x * 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(np.array([1e10, 1.0]))
        out = f(np.array([1e10, 1.0]))
    assert np.isnan(out[0]) and out[1] == 0.0
    assert f.cache_info()["host_runs"] == 2


def test_introspection_compiles_what_it_shows():
    f = dynjax.qjit(lambda x: jnp.sin(x) + 1.0, abstracted_axes={0: "n"})
    f(np.ones(3))
    assert f.cache_info()["compilations"] == 0
    assert "tensor<3xf64>" in f.mlir_specialized and "sine" in f.mlir_specialized
    assert "sine" in f.hlo
    assert f.cache_info()["compilations"] == 1
    # looking changes nothing: the host keeps serving these sizes, also off the fast path
    seg = f._last.program.single
    assert len(seg.cache) == 0
    out = seg.call([3, np.ones(3)])[0][0]   # (the segment's own path, not the dispatch table)
    np.testing.assert_array_equal(out, np.sin(np.ones(3)) + 1.0)
    assert f.cache_info()["host_runs"] == 2 and f.cache_info()["compilations"] == 1


def test_threads_share_host_programs():
    f = dynjax.qjit(lambda x, y: jnp.tanh(x) * y, abstracted_axes=({0: "n"}, {0: "n"}))

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            n = int(rng.integers(0, 8))
            x, y = rng.normal(size=n), rng.normal(size=n)
            np.testing.assert_allclose(f(x, y), np.tanh(x) * y, rtol=1e-15)
    in_threads(work, range(4))
    assert f.cache_info()["host_programs"] <= 8 and f.cache_info()["compilations"] == 0


def test_bad_sizes_give_the_compiled_paths_error():
    f = dynjax.qjit(lambda x, k: x.reshape(k, 3), abstracted_axes=({0: "n"}, None))
    with pytest.raises(ValueError) as host_error:
        f(np.ones(4), 2)
    g = dynjax.qjit(lambda x, k: x.reshape(k, 3), abstracted_axes=({0: "n"}, None))
    with host_tier_is("off"), pytest.raises(ValueError) as compiled_error:
        g(np.ones(4), 2)
    where = re.compile(r"test_host_tier\.py:\d+")   # the two lambdas' lines
    assert "cannot reshape" in str(host_error.value)
    assert where.sub("", str(host_error.value)) == where.sub("", str(compiled_error.value))


def test_python_scalars_and_0d_arrays():
    f = dynjax.qjit(lambda x, y: x * y + 1.0)
    for _ in range(3):
        out = f(2.0, np.float64(3.0))
        assert out.dtype == np.float64 and out.shape == () and out == 7.0
    g = dynjax.qjit(lambda x: x + 1)
    for _ in range(3):
        out = g(np.array(2, np.int32))
        assert out.dtype == np.int32 and out == 3
    assert f.cache_info()["host_runs"] == 3 and g.cache_info()["host_runs"] == 3


# Every primitive, as test_eager_vs_compiled draws it: the host program against the impl
# rules, bit for bit (its kernels must compute exactly what the impls compute; programs that
# are not straight-line are compiled and compared there)
@pytest.mark.parametrize("name", sorted(evc.CASES))
@settings(evc.PROFILE, max_examples=examples(8))
@given(data=st.data())
def test_host_programs_compute_what_the_impl_rules_compute(name, data):
    with host_tier_is("always"):
        _host_against_impls(name, evc.CASES[name](data.draw))


def _host_against_impls(name, case):
    fn = case.make()
    f = dynjax.qjit(fn, abstracted_axes=case.dyn)
    for _ in range(2):
        args = tuple(case.operands())
        with np.errstate(all="ignore"):
            expected = evc._outputs(fn(*args))
        for _ in range(2):   # the building call and the fast path
            got = evc._outputs(f(*args))
            hosted = f.cache_info()["host_runs"] > 0
            if not hosted:   # XLA's: only a loop or branch on the arguments (compared in evc)
                eqns = [e for s in f._last.program.segments() for e in s.jaxpr.eqns]
                assert any(host_tier._nested(e) and e.primitive not in host_tier._calls() for e in eqns), \
                    f"{name}: a straight-line program was not hosted"
                return
            assert len(got) == len(expected)
            for k, (e, g) in enumerate(zip(expected, got)):
                evc.assert_agree(e, g, "exact", 0, f"{name} on {[a.dtype for a in args]}, output {k}",
                                 flush=False)


def test_the_kernels_cover_the_common_primitives():
    """The direct numpy calls are used (an impl rule costs ~2 us more per equation)."""
    f = dynjax.qjit(lambda x, w: jnp.sum(jnp.tanh(x @ w) * 2.0 + 1.0, axis=0))
    f(np.ones((3, 2)), np.ones((2, 4)))
    host = f._last.program.single.last_executable
    assert isinstance(host, host_tier.HostProgram)
    assert host.direct == host.equations >= 4, host.source


def test_views_read_by_products_and_reductions_are_laid_out_as_the_impl_lays_them_out():
    """A transpose or slice that a matrix product or a reduction reads is the impl's C-ordered
    copy (BLAS and numpy's pairwise sums round by memory layout), one that only ufuncs read
    stays a view; either way the program keeps its direct kernels and the impl's bits."""
    rng = np.random.default_rng(0)
    cases = [
        ("tanh(x @ w) @ w.T", lambda x, w: jnp.tanh(x @ w) @ w.T,
         lambda x, w: np.tanh(x @ w) @ np.ascontiguousarray(w.T), (16, 32), (32, 32)),
        ("sum(x[:, 1:], 1) + x.T[0]", lambda x, w: jnp.sum(x[:, 1:], axis=1) + x.T[0] @ w,
         lambda x, w: np.sum(np.ascontiguousarray(x[:, 1:]), axis=1) + x.T[0] @ w, (24, 24), (24, 24)),
        ("x.T * 2 + w[::2, :8].T", lambda x, w: x.T * 2.0 + w[::2, :8].T,
         lambda x, w: x.T * 2.0 + w[::2, :8].T, (8, 8), (16, 8)),
    ]
    for name, fn, reference, xs, ws in cases:
        f = dynjax.qjit(fn)
        x, w = rng.normal(size=xs), rng.normal(size=ws)
        got = f(x, w)
        host = f._last.program.single.last_executable
        assert isinstance(host, host_tier.HostProgram), name
        assert host.direct == host.equations, (name, host.source)
        expected = reference(x, w)
        assert got.tobytes() == expected.tobytes(), name
        assert not np.may_share_memory(got, x) and not np.may_share_memory(got, w)


def test_the_host_serves_what_it_estimates_faster_than_xla():
    """Host and XLA estimates, from the equations and sizes: a softmax of 30 x 30 (its two
    row reductions cost XLA:CPU ~30 us, numpy ~12 us) and a 32 x 32 matrix product run on the
    host; six transcendental functions of 1000 elements (one fused XLA loop) do not
    (test_large_sizes_loops_and_expensive_programs_are_compiled)."""
    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)
    x = np.linspace(-3, 3, 900).reshape(30, 30)
    m = np.linspace(0, 1, 1024).reshape(32, 32)
    with budget(DEFAULT_BUDGET):
        f, g = dynjax.qjit(softmax), dynjax.qjit(lambda a: a @ a)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(f(x), e / e.sum(axis=-1, keepdims=True), rtol=1e-14)
        np.testing.assert_allclose(g(m), m @ m, rtol=1e-14)
        f(x), g(m)
    for h in (f, g):
        assert _served(h) == (2, 1, 0)
        host = h._last.program.single.last_executable
        assert host.seconds <= host_tier.XLA_RUN_SECONDS + 20e-6


def test_large_sizes_and_large_values_are_compiled_even_from_small_arguments():
    count = dynjax.qjit(lambda sz: jnp.arange(sz) * 2)
    np.testing.assert_array_equal(count(3), [0, 2, 4])
    np.testing.assert_array_equal(count(20000), np.arange(20000) * 2)   # a size above MAX_ELEMENTS
    tiers.wait_for_background()
    info = count.cache_info()
    # not the host tier: XLA (a size after the host tier's is not a program's first size: it
    # runs eagerly while its bucket compiles, as any later size)
    assert info["host_runs"] == 1 and info["compilations"] + info["padded_compilations"] == 1, info
    outer = dynjax.qjit(lambda x: jnp.sum(x[:, None] * x[None, :]))   # 1000 x 1000 from 1000
    x = np.linspace(0, 1, 1000)
    np.testing.assert_allclose(outer(x), np.sum(np.outer(x, x)), rtol=1e-12)
    assert outer.cache_info()["host_runs"] == 0 and outer.cache_info()["compilations"] == 1


def test_a_program_with_a_loop_keeps_the_smaller_size_limit():
    """A loop on the sizes is evaluated when building, once per size, and folded: a program
    holding one takes sizes of at most ``MAX_BUILD_ELEMENTS`` (its evaluation grows with
    them), where a straight-line one takes up to ``MAX_ELEMENTS``."""
    def with_loop(x):
        total = dynjax.lax.fori_loop(0, x.shape[0], lambda i, c: c * 0.5 + i, 0.0)
        return x * total

    def want(x):
        c = 0.0
        for i in range(x.shape[0]):
            c = c * 0.5 + i
        return x * c
    f = dynjax.qjit(with_loop, abstracted_axes=({0: "n"},))
    g = dynjax.qjit(lambda x: x * 2.0 + 1.0, abstracted_axes=({0: "n"},))
    n = host_tier.MAX_BUILD_ELEMENTS + 500
    assert host_tier.MAX_ELEMENTS >= 2 * n
    for k, x in enumerate((np.linspace(0, 1, 100), np.linspace(0, 1, n))):
        np.testing.assert_allclose(f(x), want(x), rtol=1e-13)
        np.testing.assert_array_equal(g(x), x * 2.0 + 1.0)
        assert g.cache_info()["host_runs"] == k + 1
    assert f.cache_info()["host_runs"] == 1   # 100 elements only
    assert host_tier.size_limit(f._entry().program.single.jaxpr) == host_tier.MAX_BUILD_ELEMENTS


def test_a_size_beyond_a_thousand_elements_gets_no_build_of_its_own():
    """Up to ``MAX_ELEMENTS`` elements the host tier serves a program whose host program
    serves other sizes; a program whose programs do not (a cumulative sum: one per size)
    gets no build for a size beyond ``MAX_BUILD_ELEMENTS``, where the build would cost more
    than the runs of a size met once."""
    f = dynjax.qjit(lambda x: jnp.cumsum(x) * 2.0, abstracted_axes=({0: "n"},))
    g = dynjax.qjit(lambda x: jnp.sum(x * x), abstracted_axes=({0: "n"},))
    for n in (100, 2000, 3000, 120):
        x = np.linspace(0, 1, n)
        np.testing.assert_allclose(f(x), np.cumsum(x) * 2.0, rtol=1e-13)
        np.testing.assert_allclose(g(x), np.sum(x * x), rtol=1e-13)
    assert (f.cache_info()["host_programs"], f.cache_info()["host_runs"]) == (2, 2)
    assert (g.cache_info()["host_programs"], g.cache_info()["host_runs"]) == (1, 4)


def test_sizes_an_earlier_build_estimates_for_xla_are_not_built(monkeypatch):
    """A build evaluates the program at the call's sizes before its estimate can refuse them
    (0.2-0.5 ms at a thousand elements): a later size whose estimate, computed from an
    earlier build's (every length static or a size), is XLA's is not built at all, and one
    whose estimate is the host's still is. (A cumulative sum: built per size, not reused.)"""
    builds = []
    build = host_tier.build
    monkeypatch.setattr(host_tier, "build", lambda *a, **k: builds.append(1) or build(*a, **k))

    def chain(x):
        for _ in range(2):
            x = jnp.tanh(jnp.exp(x) * 0.1)
        return jnp.cumsum(x)

    def want(x):
        for _ in range(2):
            x = np.tanh(np.exp(x) * 0.1)
        return np.cumsum(x)
    f = dynjax.qjit(chain, abstracted_axes=({0: "n"},))
    with budget(DEFAULT_BUDGET):
        x = np.linspace(-1, 1, 900)
        np.testing.assert_allclose(f(x), want(x), rtol=1e-12)
        # refused at 900 rows after its evaluation; compiled, and built at 5 rows ahead
        assert len(builds) == 2 and f.cache_info()["host_programs"] == 1
        for n in (950, 1000, 800):   # estimated XLA's: not built
            x = np.linspace(-1, 1, n)
            np.testing.assert_allclose(f(x), want(x), rtol=1e-12)
        assert len(builds) == 2 and f.cache_info()["host_runs"] == 0
        x = np.linspace(-1, 1, 7)   # estimated the host's: built
        np.testing.assert_allclose(f(x), want(x), rtol=1e-14)
        assert len(builds) == 3 and f.cache_info()["host_runs"] == 1


def test_custom_rules_and_checkpoint_are_inlined_and_gradients_run_on_the_host():
    from dynjax import nn

    def loss(w, x):
        h = nn.relu(x @ w) + dynjax.checkpoint(jnp.sin)(x @ w)
        return jnp.sum(nn.softmax(h, axis=-1) * jnp.arange(3.0))
    w = np.linspace(-1, 1, 6).reshape(2, 3)
    x = np.linspace(0.5, -0.5, 8).reshape(4, 2)
    value_and_grad = dynjax.qjit(dynjax.value_and_grad(loss))
    with host_tier_is("off"):
        compiled = dynjax.qjit(dynjax.value_and_grad(loss))
        want_value, want_grad = compiled(w, x)
    for _ in range(2):
        value, grad = value_and_grad(w, x)
        np.testing.assert_allclose(value, want_value, rtol=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-15)
    assert value_and_grad.cache_info()["host_runs"] == 2, value_and_grad.cache_info()
    # against finite differences
    eps, k = 1e-6, (1, 2)
    bumped = w.copy()
    bumped[k] += eps
    fd = (dynjax.qjit(loss)(bumped, x) - dynjax.qjit(loss)(w, x)) / eps
    np.testing.assert_allclose(grad[k], fd, rtol=1e-4)


def test_python_ints_take_the_fast_path_and_out_of_range_ones_are_errors():
    f = dynjax.qjit(lambda x, k: x * k)
    x = np.ones(2)
    for k in (3, 4, 5):
        np.testing.assert_array_equal(f(x, k), [k, k])
    assert f._fast_plan([x, 5]) is not None and f.cache_info()["host_runs"] == 3
    with pytest.raises(OverflowError, match="argument 1 is 18446744073709551616, too large for int64"):
        f(x, 2**64)
    np.testing.assert_array_equal(f(x, -7), [-7.0, -7.0])


def test_a_compiled_bucket_serves_a_new_size_until_it_recurs():
    from dynjax.execution.tiers import wait_for_background
    before = os.environ.get("DYNJAX_COMPILE_AHEAD")
    os.environ["DYNJAX_COMPILE_AHEAD"] = "1"
    try:
        f = dynjax.qjit(lambda x: jnp.cumsum(x) * 2.0, abstracted_axes={0: "n"})
        for n in (3, 5):      # nothing compiled: both built for the host, nothing queued
            np.testing.assert_array_equal(f(np.arange(n, dtype=float)), np.cumsum(np.arange(n)) * 2.0)
        wait_for_background()
        assert (f.cache_info()["host_programs"], f.cache_info()["background_compilations"]) == (2, 0)
        x = np.linspace(0, 1, 20000)   # too large for the host: compiled, its buckets queued
        np.testing.assert_allclose(f(x), np.cumsum(x) * 2.0, rtol=1e-12)
        wait_for_background()
        assert f.cache_info()["padded_compilations"] >= 1
        for k in range(3):    # met once: a compiled bucket; met again: built for the host
            np.testing.assert_array_equal(f(np.arange(7.0)), np.cumsum(np.arange(7.0)) * 2.0)
        info = f.cache_info()
        assert (info["host_programs"], info["padded_runs"], info["host_runs"]) == (3, 1, 4), info
    finally:
        if before is None:
            del os.environ["DYNJAX_COMPILE_AHEAD"]
        else:
            os.environ["DYNJAX_COMPILE_AHEAD"] = before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_scalars_are_computed_by_operators_as_the_ufuncs_compute_them(dtype):
    # 0-d operands of one float dtype: ``a + b`` on numpy scalars, not np.add on 0-d arrays
    # (host_tier._scalar_operator); the same IEEE results, special values included, and no
    # warning (overflow, 0/0, inf - inf)
    def fn(x, y):
        return ((x + y) * y - x) / y - 0.5
    f = dynjax.qjit(fn)
    fi = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -2.5, 3.0e-3, fi.max, -fi.max, fi.tiny, fi.smallest_subnormal,
               np.inf, -np.inf, np.nan]
    for x in special:
        for y in special:
            a, b = dtype(x), dtype(y)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = f(a, b)
            with np.errstate(all="ignore"):
                want = np.subtract(np.true_divide(np.subtract(np.multiply(np.add(
                    np.array(a), np.array(b)), np.array(b)), np.array(a)), np.array(b)), np.array(0.5, dtype))
            assert type(got) is np.ndarray and got.shape == () and got.dtype == dtype
            assert got.tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want)), (x, y, got, want)
    source = f._last.program.single.last_executable.source
    for line in ["a0 + a1", "* a1", "- a0", "/ a1", "- c"]:
        assert line in source, source
    assert f.cache_info()["host_runs"] == len(special) ** 2 and f.cache_info()["host_programs"] == 1
    # arrays and integers keep the ufuncs
    g = dynjax.qjit(lambda x, y: x + y)
    for args in [(np.ones(3, dtype), np.ones(3, dtype)), (np.int32(2), np.int32(3))]:
        g(*args)
        assert " + " not in g._last.program.single.last_executable.source


def _signalling_nan(shape):
    return np.full(shape, np.frombuffer(np.uint64(0x7FF4000000000000).tobytes(), np.float64)[0])


@pytest.mark.parametrize("shape", [(), (10,)])
def test_a_signalling_nan_gives_no_warning_and_the_callers_error_state_stays(shape):
    """numpy warns about arithmetic on a signalling NaN ("invalid value"); XLA never does,
    and neither does a host program, on its fast form (a prepared context) or its plain one."""
    f = dynjax.qjit(lambda x: x + 1.0)
    x = _signalling_nan(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.warns(RuntimeWarning):   # (numpy does warn)
            x + 1.0
        with np.errstate(all="raise"):
            for _ in range(3):
                assert np.isnan(f(x)).all()
            assert np.geterr()["invalid"] == "raise"
    assert np.geterr() == np.seterr()
    assert f.cache_info()["host_runs"] == 3


def test_the_fast_form_runs_the_plain_one_when_its_context_is_in_use():
    """A host program's ``fast`` form enters a context of its own, which one thread at a time
    may be in: a call made while it is entered (from another thread, or as here from inside
    it) runs the program's plain form, with the same results and still without warnings."""
    f = dynjax.qjit(lambda x: x * 2.0 - 1.0)
    x = np.arange(5.0)
    for _ in range(2):   # (the second call finds the plan in the table and keeps it as its memo)
        np.testing.assert_array_equal(f(x), x * 2.0 - 1.0)
    program = f._fast.memo[2][1]
    assert isinstance(program, host_tier.HostProgram) and program.fast is not program.run
    context = program.fast.func.__self__
    with pytest.raises(RuntimeError, match="already entered"):
        context.run(program.fast, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inside = context.run(lambda: [f(x), f(_signalling_nan(5))])
    np.testing.assert_array_equal(inside[0], x * 2.0 - 1.0)
    assert np.isnan(inside[1]).all()
    assert f.cache_info()["host_runs"] == 4


def test_programs_with_impl_rule_steps_run_in_the_callers_context():
    """Only a program of direct numpy calls runs inside a context of its own: an impl rule is
    any Python code, and sees the caller's context variables (here a primitive of
    ``dynjax.extend`` whose impl reads one)."""
    import contextvars
    from dynjax import extend as ext
    scale = contextvars.ContextVar("scale", default=1.0)
    scaled_p = ext.Primitive("scaled_by_a_context_variable")
    ext.def_impl(scaled_p, lambda x: x * scale.get())
    ext.def_abstract_eval(scaled_p, lambda x: ext.make_aval(x.aval.shape, x.aval.dtype))
    ext.def_lowering(scaled_p, lambda ctx, eqn, x: x)   # (not used: the host runs it)
    f = dynjax.qjit(lambda x: scaled_p.bind(x) + 1.0)
    x = np.arange(4.0)
    for factor in (2.0, 3.0, 3.0, 5.0):
        token = scale.set(factor)
        try:
            np.testing.assert_array_equal(f(x), x * factor + 1.0)
        finally:
            scale.reset(token)
    program = f._fast.memo[2][1]
    assert isinstance(program, host_tier.HostProgram) and program.fast is program.run
    assert f.cache_info()["host_runs"] == 4 and f.cache_info()["compilations"] == 0
