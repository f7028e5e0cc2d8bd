"""A host program serving sizes it was not built at (``host_reach.Reach``, ``Segment._reused_host``).

A program whose every step computes from its operands whatever their shapes, and reads no
value of the sizes, is built once and then serves other sizes of the same kind as it is,
instead of a build per size (an eager run recorded, a function generated and checked). Here:
that it does so for the programs a user writes (elementwise chains, reductions, softmax,
attention, an MLP, a gradient with matrix-vector products), that what it computes at every
such size is bit for bit what the impl rules compute there (eager dynjax, the oracle a
program built at that size is checked against) and close to numpy's, and that it is not
reused where a size could change what it computes (lengths 0 and 1, a length meeting a
static one or another length, values computed from the sizes, lengths computed from sizes,
impl rules on dynamic shapes) or where the host tier would not take it (a larger size whose
estimate is XLA's, or beyond the tier's limits).
"""
from __future__ import annotations

import gc
import logging
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from dynjax.execution import host_reach, host_tier, segment_host, tiers
from helpers import examples, in_threads
from test_host_tier import budget, host_tier_is

import test_eager_vs_compiled as evc


@pytest.fixture(autouse=True, scope="module")
def host_tier_on():
    with host_tier_is("auto"), budget(1e-3):
        yield


def _rng(n):
    return np.random.default_rng(n)


def _attention(q, k, v):
    return dynjax.nn.softmax(q @ k.T / 8.0, axis=1) @ v


W1 = _rng(1).standard_normal((4, 6))
W2 = _rng(2).standard_normal((6, 3))
W0 = _rng(3).standard_normal(5)

# name, function, numpy's, arguments at size n, abstracted axes
PROGRAMS = [
    ("affine", lambda x: 3.0 * x - 1.0, lambda x: 3.0 * x - 1.0,
     lambda n: [_rng(n).standard_normal(n)], ({0: "n"},)),
    ("sum of sines", lambda x: jnp.sum(jnp.sin(x) * 2), lambda x: np.sum(np.sin(x) * 2),
     lambda n: [_rng(n).standard_normal(n)], ({0: "n"},)),
    ("softmax", lambda x: dynjax.nn.softmax(x, axis=-1),
     lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
     lambda n: [_rng(n).standard_normal((n, 5))], ({0: "n"},)),
    ("attention", _attention,
     lambda q, k, v: (lambda s: np.exp(s - s.max(1, keepdims=True)) / np.exp(s - s.max(1, keepdims=True)).sum(1, keepdims=True))(q @ k.T / 8.0) @ v,
     lambda n: [_rng(n).standard_normal((n, 4)) for _ in range(3)], ({0: "n"}, {0: "n"}, {0: "n"})),
    ("mlp", lambda x: jnp.tanh(x @ W1) @ W2, lambda x: np.tanh(x @ W1) @ W2,
     lambda n: [_rng(n).standard_normal((n, 4))], ({0: "n"},)),
    ("least-squares gradient", dynjax.grad(lambda w, a, b: 0.5 * jnp.sum((a @ w - b) ** 2)),
     lambda w, a, b: a.T @ (a @ w - b),
     lambda n: [W0, _rng(n).standard_normal((n, 5)), _rng(n + 1).standard_normal(n)], (None, {0: "n"}, {0: "n"})),
    ("column extremes and gram", lambda x: (jnp.max(x, axis=0) - jnp.min(x, axis=0), x.T @ x),
     lambda x: (x.max(0) - x.min(0), x.T @ x), lambda n: [_rng(n).standard_normal((n, 3))], ({0: "n"},)),
    ("outer product of two sizes", lambda x, y: jnp.tanh(x[:, None] * y[None, :]),
     lambda x, y: np.tanh(x[:, None] * y[None, :]),
     lambda n: [_rng(n).standard_normal(n), _rng(n + 7).standard_normal(n + 7)], ({0: "n"}, {0: "m"})),
    ("integers", lambda i: jnp.maximum(i * 7 + 3, -jnp.abs(i)), lambda i: np.maximum(i * 7 + 3, -np.abs(i)),
     lambda n: [np.arange(-n, n, dtype=np.int32)], ({0: "n"},)),
]


def _outputs(x):
    return [np.asarray(o) for o in dynjax.tree_flatten(x)[0]]


@pytest.mark.parametrize("name, fn, oracle, make, axes", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_one_build_serves_the_smaller_sizes_as_the_impls_compute_them(name, fn, oracle, make, axes):
    f = dynjax.qjit(fn, abstracted_axes=axes)
    sizes = (12, 11, 9, 8, 7, 2)   # (none a static length of these programs)
    for k, n in enumerate(sizes):
        args = make(n)
        for _ in range(2):   # the call at a new size, then again
            got = _outputs(f(*args))
            eager = _outputs(fn(*args))   # the impl rules: what a build at n is checked against
            want = _outputs(oracle(*args))
            for g, e, w in zip(got, eager, want):
                assert g.dtype == e.dtype and g.shape == e.shape == w.shape, (name, n)
                np.testing.assert_array_equal(g, e, err_msg=f"{name} at n = {n}")
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{name} at n = {n}")
        info = f.cache_info()   # each call at a size other than the build's is a reuse
        assert (info["host_programs"], info["host_reuses"]) == (1, 2 * k), (name, n, info)
    assert f.cache_info()["compilations"] == f.cache_info()["padded_compilations"] == 0
    assert f.cache_info()["host_runs"] == 2 * len(sizes)


@pytest.mark.parametrize("name, fn, oracle, make, axes", PROGRAMS[:-2] + PROGRAMS[-1:],
                         ids=[p[0] for p in PROGRAMS[:-2] + PROGRAMS[-1:]])
def test_the_reach_decides_as_a_build_at_the_sizes_would(name, fn, oracle, make, axes):
    """``Reach``'s estimates, polynomials of the sizes worked out at the build, are the
    estimates a build at the new sizes makes, and it takes a larger size exactly where that
    build would (its estimate at most XLA's, its values within the limits), at budgets that
    move the line through the sizes."""
    f = dynjax.qjit(fn, abstracted_axes=axes)
    f(*make(2))
    seg = f._entry().program.single
    reach = _reusable(f)[0].reach

    def segment_args(n):   # (the size, then the arrays: one size, the rows of those it sizes)
        arrays = make(n)
        rows = next(np.shape(a)[0] for a, ax in zip(arrays, axes) if ax)
        arrays = iter(arrays)
        return [rows if i in seg.baked else next(arrays) for i in range(len(seg.jaxpr.invars))]
    sizes = list(range(3, 40, 3)) + list(range(40, 1300, 23))
    for seconds in (1e-3, 20e-6, 8e-6, 3e-6, 1e-6, 1e-9):
        with budget(seconds):
            for n in sizes:
                args = segment_args(n)
                try:
                    built = host_tier.build(seg.jaxpr, seg.consts, args, seg.runtime, seg._sizes(args))
                except host_tier.NotHosted:
                    built = None
                chosen = host_tier.small([args[i] for i in seg.runtime]) and built is not None
                assert reach.chosen_at(args, set(seg.runtime)) == chosen, (name, seconds, n)
                if built is not None:
                    sizes_of = [a if i in seg.baked else None for i, a in enumerate(args)]
                    assert reach.host.at(sizes_of) == pytest.approx(built.seconds, rel=1e-12), (name, n)


def test_a_masked_sum_is_served_at_other_sizes():
    """``sum(x[x > 0] ** 2)`` runs as a masked sum (``select_n`` of the squares and a -0.0
    broadcast to the sizes, then ``reduce_sum``): the broadcast folds to one element, since
    ``np.where`` broadcasts as the ufuncs do, and one build serves every size."""
    f = dynjax.qjit(lambda x: jnp.sum(x[x > 0] ** 2), abstracted_axes=({0: "n"},))
    for k, n in enumerate((12, 9, 30, 7, 2, 500)):
        x = _rng(n).standard_normal(n)
        got = f(x)
        np.testing.assert_array_equal(got, np.add.reduce(np.where(x > 0, x * x, -0.0)))
        np.testing.assert_allclose(got, np.sum(x[x > 0] ** 2), rtol=1e-13)
        assert (f.cache_info()["host_programs"], f.cache_info()["host_reuses"]) == (1, k), n


def test_larger_sizes_are_served_where_the_host_tier_still_takes_them():
    """At its build, the program's ceiling rises to the furthest sizes its estimates still
    give the host tier (``Reach.extend_ceiling``, to 2%): sizes up to there are served with
    no estimate to check, larger ones where a build there would take them (its limits),
    and lengths 0 and 1 are built anew."""
    f = dynjax.qjit(lambda x: jnp.sum(x * 2.0, axis=0), abstracted_axes=({0: "n"},))

    def check(n):
        x = _rng(n).standard_normal((n, 3))
        np.testing.assert_array_equal(f(x), np.add.reduce(x * 2.0, axis=0))
        info = f.cache_info()
        return info["host_programs"], info["host_reuses"]
    assert check(6) == (1, 0)
    reach = f._last.program.single.reusable_hosts[0].reach
    limit = host_tier.MAX_ELEMENTS // 3   # (its estimates take the host tier up to the limit)
    assert 0.98 * limit <= reach.ceiling[0] <= limit and reach.ceiling == (reach.ceiling[0],) * 2 + (3,)
    assert check(8) == (1, 1) and check(reach.ceiling[0]) == (1, 2)
    assert check(limit) == (1, 3) and reach.ceiling == (limit, limit, 3)   # the full checks
    runs = f.cache_info()["host_runs"]
    assert check(limit + 1) == (1, 3) and f.cache_info()["host_runs"] == runs   # beyond the limit
    assert check(1) == (2, 3) and check(0) == (3, 3)
    assert check(7) == (3, 4)


def test_the_ceiling_stops_where_the_estimates_give_a_size_to_xla():
    with budget(8e-6):   # (the default XLA run time, where tanh(log1p(|x|)) crosses over)
        f = dynjax.qjit(lambda x: jnp.tanh(jnp.log1p(jnp.abs(x))), abstracted_axes=({0: "n"},))
        x = _rng(0).standard_normal((4000, 3))
        np.testing.assert_allclose(f(x[:6]), np.tanh(np.log1p(np.abs(x[:6]))), rtol=1e-13)
        reach = f._last.program.single.reusable_hosts[0].reach
        top = reach.ceiling[0]
        assert 100 < top < 4000 and reach.chosen(reach.ceiling)
        assert not reach.chosen((int(top * 1.03),) * 2 + (3,))
        for n, host in ((top, True), (top // 2, True), (int(top * 1.5), False), (3000, False)):
            runs = f.cache_info()["host_runs"]
            np.testing.assert_allclose(f(x[:n]), np.tanh(np.log1p(np.abs(x[:n]))), rtol=1e-13)
            assert f.cache_info()["host_runs"] == runs + host, n


def test_a_length_equal_to_a_static_one_inside_the_program_is_not_reused():
    """(The mlp's hidden layer is 6 wide: a program built at n = 6 serves no other n.)"""
    f = dynjax.qjit(lambda x: jnp.tanh(x @ W1) @ W2, abstracted_axes=({0: "n"},))
    for n in (6, 5, 2):
        x = _rng(n).standard_normal((n, 4))
        np.testing.assert_allclose(f(x), np.tanh(x @ W1) @ W2, rtol=1e-13)
    assert f.cache_info()["host_programs"] == 2 and f.cache_info()["host_reuses"] == 1


def test_a_reshape_to_another_arguments_length_is_checked_at_every_size():
    """A reshape's element count holds at the build's sizes only; at others it is checked
    (an error), not left to numpy's -1."""
    f = dynjax.qjit(lambda x, y: x.reshape(y.shape[0], 2), abstracted_axes=({0: "n"}, {0: "m"}))
    np.testing.assert_array_equal(f(np.arange(20.0).reshape(5, 4), np.ones(10)), np.arange(20.0).reshape(10, 2))
    with pytest.raises(ValueError, match="cannot reshape"):
        f(np.ones((3, 4)), np.ones(7))
    np.testing.assert_array_equal(f(np.arange(12.0).reshape(3, 4), np.ones(6)), np.arange(12.0).reshape(6, 2))
    assert f.cache_info()["host_reuses"] == 0


def test_two_lengths_equal_at_the_build_serve_only_equal_lengths():
    f = dynjax.qjit(lambda x, y: x[:, None] * y[None, :], abstracted_axes=({0: "n"}, {0: "m"}))
    f(np.ones(6), np.ones(6))
    f(np.ones(4), np.ones(4))
    assert f.cache_info()["host_reuses"] == 1
    np.testing.assert_array_equal(f(np.arange(4.0), np.arange(3.0)), np.outer(np.arange(4.0), np.arange(3.0)))
    assert f.cache_info()["host_programs"] == 2 and f.cache_info()["host_reuses"] == 1
    f(np.ones(3), np.ones(2))   # (built at 4 and 3: different lengths, as here)
    assert f.cache_info()["host_reuses"] == 2


def test_the_server_is_made_again_when_a_build_adds_a_program():
    """A second program that serves other sizes (built at two different lengths, where the
    first was built at equal ones) joins the function's server at once: the next pair of
    different lengths is served by the server, not by the dispatch table."""
    f = dynjax.qjit(lambda x, y: x[:, None] * y[None, :], abstracted_axes=({0: "n"}, {0: "m"}))
    f(np.ones(6), np.ones(6))
    f(np.ones(4), np.ones(4))
    f(np.arange(4.0), np.arange(3.0))   # a build of its own
    assert f.cache_info()["host_programs"] == 2
    served, real = [], f._serve
    f._serve = lambda args: served.append(real(args)) or served[-1]
    table = len(f._fast)
    x, y = np.arange(5.0), np.arange(2.0) + 1.0
    np.testing.assert_array_equal(f(x, y), np.outer(x, y))
    assert len(served) == 1 and isinstance(served[0], np.ndarray) and len(f._fast) == table


PROGRAMS_OF_ONE_SIZE = [
    # a value of the sizes, folded into the program: the mean divides by n
    ("mean", lambda x: jnp.mean(x), lambda x: np.mean(x)),
    # a length computed from the sizes (returned, and not)
    ("concatenation", lambda x: jnp.concatenate([x, x]) * 2.0, lambda x: np.concatenate([x, x]) * 2.0),
    ("sum of a concatenation", lambda x: jnp.sum(jnp.concatenate([x, x]) * 2.0),
     lambda x: np.sum(np.concatenate([x, x]) * 2.0)),
    ("flattening", lambda x: x.reshape(-1) + 1.0, lambda x: x.reshape(-1) + 1.0),
    # an impl rule (any Python code) on a dynamic shape
    ("cumulative sum", lambda x: jnp.cumsum(x), lambda x: np.cumsum(x)),
]


@pytest.mark.parametrize("name, fn, oracle", PROGRAMS_OF_ONE_SIZE, ids=[p[0] for p in PROGRAMS_OF_ONE_SIZE])
def test_programs_that_depend_on_their_sizes_are_built_per_size(name, fn, oracle):
    f = dynjax.qjit(fn, abstracted_axes=({0: "n"},))
    for k, n in enumerate((9, 7, 4)):
        x = _rng(n).standard_normal((n, 2) if name == "flattening" else n)
        np.testing.assert_allclose(f(x), oracle(x), rtol=1e-13)
        assert f.cache_info()["host_programs"] == k + 1 and f.cache_info()["host_reuses"] == 0
    program = f._last.program.single.last_executable
    assert isinstance(program, host_tier.HostProgram) and program.reach is None


def test_a_reused_program_keeps_the_errors_of_a_new_size():
    f = dynjax.qjit(lambda x, y: x * y, abstracted_axes=({0: "n"}, {0: "n"}))
    f(np.ones(6), np.ones(6))
    with pytest.raises(ValueError, match="n"):
        f(np.ones(4), np.ones(3))
    np.testing.assert_array_equal(f(np.arange(4.0), np.arange(4.0)), np.arange(4.0) ** 2)
    assert f.cache_info()["host_reuses"] == 1


def test_introspection_of_a_reused_size_shows_its_own_sizes():
    f = dynjax.qjit(lambda x: jnp.sin(x) + 1.0, abstracted_axes=({0: "n"},))
    f(np.ones(8))
    f(np.ones(5))
    assert f.cache_info()["host_reuses"] == 1
    assert "tensor<5xf64>" in f.mlir_specialized


def test_a_new_size_of_a_reusable_program_skips_the_call_path():
    """``qjit`` serves a size of the trace whose host program serves other sizes straight
    from that program (the segment's server, every call); arrays of another dtype or
    rank, or sizes the program does not admit, take the call's own path."""
    f = dynjax.qjit(lambda x, y: jnp.tanh(x) * y, abstracted_axes=({0: "n"}, {0: "n"}))
    f(np.ones(9), np.ones(9))
    own_path = f._call
    taken = []

    def counting(*args, **kwargs):
        taken.append([np.shape(a) for a in args])
        return own_path(*args, **kwargs)
    f._call = counting
    for n in (7, 5, 7, 3):
        x, y = _rng(n).standard_normal(n), _rng(n + 1).standard_normal(n)
        np.testing.assert_array_equal(f(x, y), np.tanh(x) * y)
    assert taken == [] and f.cache_info()["host_reuses"] == 4 and f.cache_info()["calls"] == 5
    np.testing.assert_array_equal(f(np.ones(12), np.ones(12)), np.tanh(np.ones(12)))   # larger
    assert taken == [] and f.cache_info()["host_reuses"] == 5
    x32 = np.ones(4, np.float32)
    assert f(x32, x32).dtype == np.float32                    # another dtype: its own trace
    np.testing.assert_array_equal(f(np.ones((2, 2)), np.ones((2, 2))), np.tanh(np.ones((2, 2))))   # rank
    with pytest.raises(ValueError, match="abstracted axis 'n'"):
        f(np.ones(4), np.ones(5))
    assert len(taken) == 3


def test_a_larger_size_whose_values_pass_the_host_tiers_limit_is_not_served():
    f = dynjax.qjit(lambda x, y: jnp.sum(x[:, None] * y[None, :]), abstracted_axes=({0: "n"}, {0: "m"}))
    x, y = _rng(1).standard_normal(300), _rng(2).standard_normal(200)
    np.testing.assert_allclose(f(x[:10], y[:9]), np.sum(np.outer(x[:10], y[:9])), rtol=1e-13)
    np.testing.assert_allclose(f(x[:40], y[:30]), np.sum(np.outer(x[:40], y[:30])), rtol=1e-13)
    assert f.cache_info()["host_reuses"] == 1
    runs = f.cache_info()["host_runs"]
    # 60,000 products: beyond the largest value the host tier computes
    np.testing.assert_allclose(f(x, y), np.sum(np.outer(x, y)), rtol=1e-12)
    assert f.cache_info()["host_reuses"] == 1 and f.cache_info()["host_runs"] == runs


def test_the_values_limit_counts_the_largest_value_of_each_kind():
    """Two values grow with n alone, (n, 2) and (n, 2, 50): the limit on computed values holds
    the larger one (100 n elements) to it, not the smaller."""
    w = _rng(3).standard_normal(50)
    f = dynjax.qjit(lambda x: jnp.sum(x[:, :, None] * w[None, None, :]) + jnp.sum(x),
                    abstracted_axes=({0: "n"},))
    x = _rng(4).standard_normal((400, 2))

    def want(n):
        return np.sum(x[:n, :, None] * w[None, None, :]) + np.sum(x[:n])
    for n in (10, 12, 150):   # 15,000 elements at 150 rows: within the limit
        np.testing.assert_allclose(f(x[:n]), want(n), rtol=1e-12)
    assert f.cache_info()["host_reuses"] == 2
    runs = f.cache_info()["host_runs"]
    np.testing.assert_allclose(f(x[:200]), want(200), rtol=1e-12)   # 20,000: beyond it
    assert f.cache_info()["host_reuses"] == 2 and f.cache_info()["host_runs"] == runs


def test_threads_at_new_sizes_share_programs_and_their_contexts():
    """Four threads at random small sizes: the programs, their reach and their contexts are
    shared (a thread that finds a program's context entered runs its plain function); every
    result is numpy's."""
    f = dynjax.qjit(lambda x, y: jnp.sum(jnp.tanh(x) * y, axis=0) + 1.0,
                    abstracted_axes=({0: "n"}, {0: "n"}))

    def work(seed):
        rng = _rng(seed)
        for _ in range(300):
            n = int(rng.integers(2, 60))
            x, y = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
            np.testing.assert_allclose(f(x, y), np.sum(np.tanh(x) * y, axis=0) + 1.0, rtol=1e-13)
    in_threads(work, range(4))
    info = f.cache_info()
    assert info["host_runs"] == 1200 and info["compilations"] == 0
    assert info["host_programs"] <= 6 and info["host_reuses"] >= 50   # (58 sizes; 3 is a static length)


# Every primitive, as test_eager_vs_compiled draws it, with the leading axis of every operand
# dynamic: a program built at 2n + 1 rows (the drawn rows twice and the first once more), then
# called at the drawn n >= 2 rows, computes there what the impl rules compute, bit for bit,
# whether a program built at other sizes serves it or a build of its own does (in one run:
# 156 examples of 91 cases applied, 46 of them served by the larger program, of 29 primitives)
@pytest.mark.parametrize("name", sorted(evc.CASES))
@settings(evc.PROFILE, max_examples=examples(6))
@given(data=st.data())
def test_every_primitive_at_other_sizes_computes_what_the_impls_compute(name, data):
    case = evc.CASES[name](data.draw)
    args = list(case.operands())
    if case.dyn != evc.DYN or not args or any(np.ndim(a) == 0 for a in args) or \
            len({np.shape(a)[0] for a in args}) != 1 or np.shape(args[0])[0] < 2:
        return   # (not a case of one dynamic leading axis on every operand)
    fn = case.make()
    f = dynjax.qjit(fn, abstracted_axes=case.dyn)
    larger = [np.concatenate([a, a, a[:1]]) for a in args]
    with host_tier_is("always"), np.errstate(all="ignore"):
        f(*larger)
        got = evc._outputs(f(*args))
        expected = evc._outputs(fn(*args))
    assert len(got) == len(expected)
    for k, (e, g) in enumerate(zip(expected, got)):
        evc.assert_agree(e, g, "exact", 0, f"{name} at {np.shape(args[0])[0]} rows, output {k}", flush=False)


@pytest.mark.usefixtures("compile_ahead")
def test_the_first_compile_builds_a_host_program_that_serves_the_small_sizes():
    """A program's first compile also builds its host program at a small size (the
    arguments cut to it): every small size after it is served by that program, none waits
    for a build of its own, and none runs in a compiled bucket."""
    from dynjax.execution.tiers import wait_for_background
    f = dynjax.qjit(lambda x: jnp.tanh(x) * 2.0, abstracted_axes=({0: "n"},))
    x = np.linspace(-1, 1, 20000)   # too large for the host: compiled, its buckets queued
    np.testing.assert_allclose(f(x), np.tanh(x) * 2.0, rtol=1e-13)
    wait_for_background()
    info = f.cache_info()
    assert (info["compilations"], info["host_programs"], info["host_runs"]) == (1, 1, 0), info
    assert info["padded_compilations"] >= 1
    assert _reusable(f)[0].reach.lengths == (5, 5)   # (the size, x's shape)
    for n in (7, 5, 9, 12, 300):
        np.testing.assert_array_equal(f(x[:n]), np.tanh(x[:n]) * 2.0)
    info = f.cache_info()
    assert (info["host_programs"], info["host_reuses"], info["host_runs"], info["padded_runs"]) == (1, 5, 5, 0), info


def _reusable(f):
    return f._entry().program.single.reusable_hosts


def test_the_sizes_a_first_compile_cuts_to_keep_their_order_and_pattern():
    """Each distinct size is cut to its own small length, in the sizes' order, equal sizes to
    one, none equal to a static length of the arguments (6 here: 5, then 7); the program
    then serves the sizes of that pattern (x and z of one length, y of another)."""
    f = dynjax.qjit(lambda x, y, z: (jnp.tanh(x.sum(1)[:, None] * y[None, :]), x + z),
                    abstracted_axes=({0: "n"}, {0: "m"}, {0: "n"}))
    rng = _rng(5)
    x, y, z = rng.standard_normal((3000, 6)), rng.standard_normal(20000), rng.standard_normal((3000, 6))
    f(x, y, z)
    assert f.cache_info()["host_programs"] == 1
    assert _reusable(f)[0].reach.lengths == (5, 7, 5, 6, 7, 5, 6)   # (n, m, the shapes of x, y, z)
    f2 = dynjax.qjit(lambda x, y: x.sum() + y.sum(), abstracted_axes=({0: "n"}, {0: "m"}))
    f2(y, x[:, 0])   # the larger size first: it keeps the larger length
    assert _reusable(f2)[0].reach.lengths == (6, 5, 6, 5)
    for n, m in ((3, 8), (9, 4), (8, 2), (12, 12)):
        a, b, c = x[:n], y[:m], z[:n]
        got = f(a, b, c)
        np.testing.assert_array_equal(got[0], np.tanh(a.sum(1)[:, None] * b[None, :]))
        np.testing.assert_array_equal(got[1], a + c)
    info = f.cache_info()
    # (12, 12): two equal lengths where the build had two different ones: built for itself
    assert (info["host_programs"], info["host_reuses"]) == (2, 3), info


@pytest.mark.parametrize("case", ["a size already small", "a size only passed as a value", "a list argument"])
def test_no_host_program_is_built_at_the_first_compile_where_the_sizes_cannot_be_cut(case):
    """No build ahead where a size is already no larger than the lengths it would be cut to,
    or where a size is not the length of an argument's axis (what it means is the user's)."""
    x = np.linspace(0, 1, 20000)   # (beyond the host tier: compiled)
    if case == "a size already small":
        f = dynjax.qjit(lambda x, y: x[:, None] * y[None, :], abstracted_axes=({0: "n"}, {0: "m"}))
        args = (x, x[:5])
    elif case == "a size only passed as a value":
        f = dynjax.qjit(lambda x, k: x * jnp.zeros(k).sum() + x, abstracted_axes=({0: "n"}, None))
        args = (x, 30000)
    else:
        f = dynjax.qjit(lambda xs: xs[0] * xs[1], abstracted_axes=([{0: "n"}, {0: "n"}],))
        args = ([x, x],)
    want = np.asarray(f(*args))
    if case != "a list argument":
        assert f.cache_info()["host_programs"] == 0
    else:   # (a list of arrays is cut as arrays are)
        assert f.cache_info()["host_programs"] == 1
    np.testing.assert_array_equal(np.asarray(f(*args)), want)


@pytest.mark.usefixtures("compile_ahead")
def test_the_first_small_size_beside_compiled_buckets_is_built_to_serve_the_others():
    """Where the first compile built no host program (a size was already small), a small
    size met once runs in a compiled bucket that holds it, but the program's first one is
    built for the host: where that program serves other sizes, the later small sizes are
    served by it, not by the bucket. (Where it does not, as for a cumulative sum, sizes met
    once stay the bucket's: test_host_tier.py.)"""
    from dynjax.execution.tiers import wait_for_background
    f = dynjax.qjit(lambda x, y: jnp.tanh(x[:, None] * y[None, :]), abstracted_axes=({0: "n"}, {0: "m"}))
    x, y = np.linspace(-1, 1, 20000), np.linspace(0, 1, 4)
    np.testing.assert_allclose(f(x, y), np.tanh(x[:, None] * y[None, :]), rtol=1e-13)
    wait_for_background()
    assert f.cache_info()["padded_compilations"] >= 1 and f.cache_info()["host_programs"] == 0
    for n in (7, 5, 9, 12):
        np.testing.assert_array_equal(f(x[:n], y), np.tanh(x[:n, None] * y[None, :]))
    info = f.cache_info()
    assert (info["host_programs"], info["host_reuses"], info["padded_runs"]) == (1, 3, 0), info


# --- the admission of a new size (Layout.admission): Reach.admits written out ---------------

def _layout_cases():
    """(layout, lengths at the build, static lengths): the segment's sizes come first in
    the lengths, then each array's shape."""
    f8, i4 = np.dtype(np.float64), np.dtype(np.int32)
    return [
        (host_reach.Layout([f8], [1], [(0, 0)]), (5, 5), set()),                     # x + 1
        (host_reach.Layout([f8, f8], [1, 1], [(0, 0)]), (6, 6, 6), set()),            # x * y, one n
        (host_reach.Layout([f8, f8], [1, 1], [(0, 0), (1, 0)]), (5, 6, 5, 6), set()),  # n and m
        (host_reach.Layout([f8, f8, f8], [2, 2, 2], [(0, 0)]),                        # an MLP
         (7, 7, 4, 4, 16, 16, 2), {4, 16, 2}),
        (host_reach.Layout([i4], [2], [(0, 0), (0, 1)]), (5, 6, 5, 6), {3}),           # (n, m)
        (host_reach.Layout([f8, f8], [2, 0], [(0, 1)]), (6, 3, 6), {3}),              # (3, n), 0-d
        (host_reach.Layout([f8], [1], [(0, 0)]), (1, 1), set()),                      # built at 1
    ]


def _spans(layout):
    """``host_reach.spans`` of a segment's arguments laid out so: the sizes, then the arrays."""
    out = [(p, p + 1, False) for p in range(len(layout.sources))]
    start = len(layout.sources)
    for r in layout.ranks:
        out.append((start, start + r, True))
        start += r
    return tuple(out)


def _expected_admission(reach, layout, args) -> bool:
    """What the full path decides without an estimate: arrays of the layout's dtypes and
    ranks, then ``admits`` where no length passes the reach's ceiling."""
    if any(a.__class__ is not np.ndarray or a.dtype != d or a.ndim != r
           for a, d, r in zip(args, layout.dtypes, layout.ranks)):
        return False
    seg = layout.segment_args(args)
    runtime = set(range(len(layout.sources), len(seg)))
    have = host_reach.lengths(seg, runtime)
    if any(h > c for h, c in zip(have, reach.ceiling)):
        return False
    return reach.admits(seg, runtime)


@pytest.mark.parametrize("case", range(len(_layout_cases())))
def test_the_admission_of_a_new_size_decides_as_the_reach_does(case):
    layout, lengths, static = _layout_cases()[case]
    reach = host_reach.Reach(lengths, _spans(layout), static, 0.0, 0.0, [])
    reach.ceiling = tuple(12 if d >= 2 and d not in static else d for d in lengths)
    admit = layout.admission(reach)
    rng = np.random.default_rng(case)
    choices = sorted({0, 1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 16} | set(lengths))
    decided = {True: 0, False: 0}
    for _ in range(3000):
        shapes = []
        for r in layout.ranks:   # around the build's shapes: its lengths, or others
            shapes.append(tuple(int(rng.choice(choices)) for _ in range(r)))
        if rng.random() < 0.5:   # the build's own shapes with one length changed
            shapes, k = _build_shapes(layout, lengths), rng.integers(sum(layout.ranks) or 1)
            flat = [d for s in shapes for d in s]
            if flat:
                flat[k] = int(rng.choice(choices))
            shapes, it = [], iter(flat)
            for r in layout.ranks:
                shapes.append(tuple(next(it) for _ in range(r)))
        dtypes = [d if rng.random() < 0.95 else np.dtype(np.float32) for d in layout.dtypes]
        args = [np.zeros(s, d) for s, d in zip(shapes, dtypes)]
        if rng.random() < 0.02:
            args[0] = args[0].tolist()
        want = _expected_admission(reach, layout, args)
        assert admit(*args) == want, (shapes, dtypes)
        decided[want] += 1
    assert decided[True] > 100 and decided[False] > 100, decided


def _build_shapes(layout, lengths):
    flat = list(lengths[len(layout.sources):])
    shapes, it = [], iter(flat)
    for r in layout.ranks:
        shapes.append(tuple(next(it) for _ in range(r)))
    return shapes


def test_the_admission_holds_the_ceiling_it_was_made_at():
    layout = host_reach.Layout([np.dtype(np.float64)], [1], [(0, 0)])
    reach = host_reach.Reach((5, 5), _spans(layout), set(), 0.0, 0.0, [])
    admit = layout.admission(reach)
    assert admit(np.ones(4)) and admit(np.ones(5)) and not admit(np.ones(6)) and not admit(np.ones(1))
    assert reach.admits([6, np.ones(6)], {1})   # a larger size the estimates choose: the ceiling rises
    assert not admit(np.ones(6))                # (written in as a number)
    admit = layout.admission(reach)
    assert admit(np.ones(6)) and not admit(np.ones(7))


def test_the_server_is_made_again_when_a_ceiling_rises():
    """A size beyond the ceiling that the full checks admit raises it (``Reach.admits``); the
    segment's server, which holds the ceiling as a number, is made again, so that a size
    between the old ceiling and the new one is served by it, not by the dispatch table."""
    f = dynjax.qjit(lambda x: jnp.sum(x * 2.0, axis=0), abstracted_axes=({0: "n"},))
    f(np.ones((6, 3)))
    segment = f._last.program.single
    reach = segment.reusable_hosts[0].reach
    old_top, limit = reach.ceiling[0], host_tier.MAX_ELEMENTS // 3
    assert old_top < limit - 1
    before = f._serve
    x = _rng(limit).standard_normal((limit, 3))
    np.testing.assert_array_equal(f(x), np.add.reduce(x * 2.0, axis=0))   # the full checks
    assert reach.ceiling[0] == limit and f._serve is not before
    table, served = len(f._fast), []
    real = f._serve
    f._serve = lambda args: served.append(real(args)) or served[-1]
    n = old_top + 1
    x = _rng(n).standard_normal((n, 3))
    np.testing.assert_array_equal(f(x), np.add.reduce(x * 2.0, axis=0))
    assert len(served) == 1 and isinstance(served[0], np.ndarray) and len(f._fast) == table


def test_a_stream_of_sizes_is_served_by_the_admission_without_the_dispatch_table():
    """Every call at a size the program admits, a repeated one too, is served by the segment's
    generated server before the dispatch table is asked, and none takes a place in the
    table (where it would evict the plans of sizes that need it)."""
    f = dynjax.qjit(lambda x, y: jnp.sum(jnp.tanh(x) * y, axis=0) + 1.0,
                    abstracted_axes=({0: "n"}, {0: "n"}))
    f(np.ones((40, 3)), np.ones((40, 3)))
    built, table = f.cache_info()["host_programs"], len(f._fast)
    admitted = []
    real = f._serve
    f._serve = lambda args: admitted.append(len(args[0])) or real(args)
    sizes = [17, 4, 29, 2, 38, 17, 4]
    for k, n in enumerate(sizes):
        x, y = _rng(n).standard_normal((n, 3)), _rng(n + 1).standard_normal((n, 3))
        np.testing.assert_allclose(f(x, y), np.sum(np.tanh(x) * y, axis=0) + 1.0, rtol=1e-13)
        assert "tensor<%dx3xf64>" % n in f.mlir_specialized   # introspection: its own sizes
    assert admitted == sizes
    info = f.cache_info()
    assert info["host_programs"] == built and info["host_reuses"] == 7 and len(f._fast) == table
    np.testing.assert_allclose(f(np.ones((40, 3)), np.ones((40, 3))), np.full(3, 40 * np.tanh(1.0) + 1.0))
    assert admitted == sizes + [40] and f.cache_info()["host_reuses"] == 7   # the build's own: the table's


def test_the_server_returns_the_tree_of_results_and_counts_the_call():
    """A function of several results, served at new sizes by the server: the results in
    their tree, new arrays (never an argument), the call counted and its trace noted as the
    direct path does; while another function is being traced, the call is staged instead."""
    f = dynjax.qjit(lambda x, y: {"s": x + y, "p": (x * y, jnp.sum(x))},
                    abstracted_axes=({0: "n"}, {0: "n"}))
    f(np.ones(12), np.ones(12))
    segment = f._last.program.single
    served = []
    real = f._serve
    f._serve = lambda args: served.append(len(args)) or real(args)
    for n in (5, 9, 2):
        x, y = _rng(n).standard_normal(n), _rng(n + 1).standard_normal(n)
        calls = f.calls
        f._last = None
        got = f(x, y)
        assert sorted(got) == ["p", "s"] and isinstance(got["p"], tuple)
        np.testing.assert_array_equal(got["s"], x + y)
        np.testing.assert_array_equal(got["p"][0], x * y)
        np.testing.assert_allclose(got["p"][1], np.sum(x), rtol=1e-13)
        assert not any(np.shares_memory(r, a) for r in (got["s"], got["p"][0]) for a in (x, y))
        assert f.calls == calls + 1 and f._last is not None and f._last.program.single is segment
    assert served == [2, 2, 2] and f.cache_info()["host_reuses"] == 3
    c = np.arange(7.0)   # numpy arrays, passed to f while g is being traced
    g = dynjax.qjit(lambda s: f(c, c)["s"] * s)
    np.testing.assert_array_equal(g(3.0), (c + c) * 3.0)
    assert served == [2, 2, 2, 2] and f.cache_info()["host_reuses"] == 3   # asked, and staged


def test_a_dropped_function_frees_its_segments_without_the_garbage_collector():
    """The server a function keeps writes to its segment, and the segment hands each new
    server to the function through weak references: nothing holds itself, so a function
    dropped after serving new sizes frees its segment (and its executables) at once."""
    gc.disable()
    try:
        f = dynjax.qjit(lambda x: jnp.tanh(x) * 2.0, abstracted_axes=({0: "n"},))
        for n in (10, 11, 12, host_tier.MAX_ELEMENTS + 1):   # the last one compiled
            np.testing.assert_allclose(f(np.linspace(0, 1, n)), np.tanh(np.linspace(0, 1, n)) * 2.0)
        tiers.wait_for_background()
        info = f.cache_info()
        assert info["host_reuses"] == 2 and info["compilations"] + info["padded_compilations"] >= 1
        assert f._serve is not None
        segment = f._last.program.single
        program = segment.reusable_hosts[0]   # (and its generated functions)
        held = [weakref.ref(x) for x in (f, segment, f._serve, program.run, program.fast.args[0])]
        del f, segment, program
        assert [r() for r in held] == [None] * 5
    finally:
        gc.enable()


def test_a_program_that_serves_only_its_own_sizes_is_not_kept_to_serve_others():
    """A build at a size equal to a static length admits no other size: it does not take
    the place of a program that does (a segment keeps four of them)."""
    f = dynjax.qjit(lambda x, a, b, c, d: x * (jnp.sum(a) + jnp.sum(b) + jnp.sum(c) + jnp.sum(d)),
                    abstracted_axes=({0: "n"}, None, None, None, None))
    extra = [np.ones(3), np.ones(4), np.ones(6), np.ones(7)]
    f(np.ones(10), *extra)
    builds = f.cache_info()["host_programs"]
    for n in (3, 4, 6, 7):   # each a static length: a build of its own
        np.testing.assert_allclose(f(np.arange(n, dtype=float), *extra), np.arange(n) * 20.0)
    assert f.cache_info()["host_programs"] == builds + 4
    reuses = f.cache_info()["host_reuses"]
    for n in (9, 8, 5):
        np.testing.assert_allclose(f(np.arange(n, dtype=float), *extra), np.arange(n) * 20.0)
    assert f.cache_info()["host_programs"] == builds + 4 and f.cache_info()["host_reuses"] == reuses + 3


def test_a_call_the_admission_serves_is_logged_with_its_sizes(caplog):
    f = dynjax.qjit(lambda x: x * 2.0, abstracted_axes=({0: "n"},))
    f(np.ones(9))
    with caplog.at_level(logging.INFO, logger="dynjax.tiers"):
        np.testing.assert_array_equal(f(np.arange(5.0)), np.arange(5.0) * 2.0)
    assert [r.getMessage() for r in caplog.records] == [
        "host tier, a program of other sizes: the size of n (axis 0 of argument 0) = 5"]
    caplog.clear()
    np.testing.assert_array_equal(f(np.arange(6.0)), np.arange(6.0) * 2.0)   # logging off
    assert caplog.records == [] and f.cache_info()["host_reuses"] == 2


def test_two_traces_by_turns_keep_their_generated_servers():
    """Calls of float64 and float32 arrays by turns, each at new sizes: each trace's segment
    keeps its one layout and server (made once), and each dtype's small sizes are served by
    its own program."""
    f = dynjax.qjit(lambda x: x * 3.0 - 1.0, abstracted_axes=({0: "n"},))
    f(np.ones(9)), f(np.ones(9, np.float32))
    servers = {}
    for n in (5, 6, 7, 8, 10, 11):
        for dtype in (np.float64, np.float32):
            x = np.linspace(-2, 2, n).astype(dtype)
            got = f(x)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, x * dtype(3.0) - dtype(1.0))
            servers.setdefault(dtype, f._last.server)
            assert f._serve is f._last.server is servers[dtype]   # not made again at each turn
    assert f.cache_info()["host_programs"] == 2


def test_of_two_threads_making_servers_the_last_reads_the_latest_programs(monkeypatch):
    """A thread making the segment's server from its programs while another changes them
    and makes one too: the server left is made from the latest programs (without the lock,
    the slower first thread's server, made from the older ones, would be left)."""
    f = dynjax.qjit(lambda x: x * 2.0, abstracted_axes=({0: "n"},))
    f(np.ones(9))
    segment = f._last.program.single
    older = segment.reusable_hosts
    newer = tuple(list(older))   # the same programs, another tuple: "changed"
    assert newer is not older
    real, made, started = segment_host._generate_server, {}, threading.Event()

    def generate(seg, layout, hosts, front):
        if hosts is older:
            started.set()
            time.sleep(0.2)   # the first maker is slow
        made[id(hosts)] = real(seg, layout, hosts, front)
        return made[id(hosts)]
    monkeypatch.setattr(segment_host, "_generate_server", generate)
    first = threading.Thread(target=segment._make_server)
    first.start()
    assert started.wait(10)
    segment.reusable_hosts = newer
    second = threading.Thread(target=segment._make_server)
    second.start()
    first.join(), second.join()
    assert f._serve is f._last.server is made[id(newer)]
    np.testing.assert_array_equal(f(np.arange(5.0)), np.arange(5.0) * 2.0)
