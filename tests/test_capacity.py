"""Programs with resizing loops run as one executable within capacities (padded_runs.py).

Every result is checked against numpy, at trip counts around the capacities (16, 64, 256:
each overflow makes the host grow the capacities and run the program again)."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.execution import host_prologue, tiers
from dynjax.execution.padding import bucket
from dynjax import for_loop, lax, qjit

# these tests check the tiers as a user's process runs them: compiles ahead included
pytestmark = pytest.mark.usefixtures("compile_ahead")

COUNTS = [0, 1, 14, 15, 16, 17, 63, 64, 65, 100]


@pytest.fixture(autouse=True)
def auto_tier(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "auto")


def append_halves(n):
    return for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, jnp.full(1, 0.5)]))(jnp.zeros(1))


def test_loops_after_a_loop_that_stopped_early_do_not_run():
    """The first runs stop the resizing loop at its capacity: a half-integer partial sum,
    on which the while_loop below would never end. It must not run on it."""
    @qjit
    def f(n: int):
        s = jnp.sum(append_halves(n))
        steps = lax.while_loop(lambda k: k != s, lambda k: k + 1.0, 0.0)
        return steps, lax.fori_loop(0, (s * 2).astype(int), lambda i, c: c + 1, 0)

    for n in (100, 2, 40, 1000):
        steps, count = f(n)
        assert steps == n / 2 and count == n
    info = f.cache_info()
    assert info["host_steps"] == 0 and info["padded_runs"] == 4


def test_two_loops_the_second_sized_by_the_first():
    @qjit
    def f(n: int):
        a = for_loop(0, n, 1, allow_array_resizing=True)(
            lambda i, a: jnp.concatenate([a, (a[-1:] + i) * 1.0]))(jnp.ones(1))
        b = for_loop(0, a.shape[0], 1, allow_array_resizing=True)(
            lambda i, b: jnp.concatenate([b, a[i:i + 1] * 2, jnp.full(1, -1.0)]))(jnp.zeros(0))
        return a, b, jnp.sum(b)

    def ref(n):
        a = np.ones(1)
        for i in range(n):
            a = np.concatenate([a, a[-1:] + i])
        b = np.zeros(0)
        for i in range(a.shape[0]):
            b = np.concatenate([b, a[i:i + 1] * 2, [-1.0]])
        return a, b, np.sum(b)

    for n in COUNTS:
        for got, want in zip(f(n), ref(n)):
            np.testing.assert_array_equal(got, want)
    assert f.cache_info()["host_steps"] == 0


def test_sizes_from_int_arguments_and_dynamic_inputs():
    """An int argument sizes what the body appends (its bucket bounds it), the input array
    has a dynamic length, and the code after the loop reduces and reverses its result."""
    @qjit(abstracted_axes=({0: "m"}, None, None))
    def f(x, n, k):
        a = for_loop(0, n, 1, allow_array_resizing=True)(
            lambda i, a: jnp.concatenate([a, jnp.arange(k) * 1.0 + i]))(x)
        return a[::-1] * 2, jnp.sum(a), a.shape[0]

    rng = np.random.default_rng(0)
    for m, n, k in [(0, 0, 0), (1, 3, 2), (5, 16, 1), (17, 4, 9), (3, 30, 5), (40, 1, 70), (0, 5, 0)]:
        x = rng.integers(-5, 5, size=m).astype(float)
        want = x
        for i in range(n):
            want = np.concatenate([want, np.arange(k) * 1.0 + i])
        rev, total, length = f(x, n, k)
        np.testing.assert_array_equal(rev, want[::-1] * 2)
        assert total == np.sum(want) and length == want.shape[0]
    assert f.cache_info()["traces"] == 1 and f.cache_info()["host_steps"] == 0


def test_while_loop_growing_by_a_data_dependent_amount():
    """Each iteration appends the elements above a threshold: the size of the next
    iteration comes from the data."""
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        def body(c):
            a, t = c
            return jnp.concatenate([a, a[a > t] - 1.0]), t + 1.0
        return lax.while_loop(lambda c: c[1] < 6.0, body, (x, 0.0), allow_array_resizing=True)[0]

    rng = np.random.default_rng(1)
    for n in (0, 1, 3, 8, 20):
        x = rng.integers(0, 9, size=n).astype(float)
        a, t = x, 0.0
        while t < 6.0:
            a, t = np.concatenate([a, a[a > t] - 1.0]), t + 1.0
        np.testing.assert_array_equal(f(x), a)


def test_resizing_loop_inside_a_loop_runs_step_by_step():
    """Nested in a fixed loop, a resizing loop is not padded with the program; the outer
    loop is driven from the host and the inner one still runs within capacities."""
    @qjit
    def f(n: int, m: int):
        def outer(j, total):
            a = for_loop(0, m + j, 1, allow_array_resizing=True)(
                lambda i, a: jnp.concatenate([a, a[:1] + i]))(jnp.ones(1))
            return total + jnp.sum(a)
        return for_loop(0, n, 1)(outer)(0.0)

    for n, m in [(0, 3), (1, 0), (3, 20), (2, 70)]:
        want = sum(1.0 + sum(1.0 + i for i in range(m + j)) for j in range(n))
        assert f(n, m) == want


def test_threads_share_capacities_and_get_their_own_values():
    f = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[-1:] * 0.5 + i]))(jnp.ones(1)))

    def ref(n):
        a = np.ones(1)
        for i in range(n):
            a = np.concatenate([a, a[-1:] * 0.5 + i])
        return a
    counts = [0, 1, 15, 16, 17, 200, 63, 64, 65, 500, 3] * 4
    wants = {n: ref(n) for n in set(counts)}
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(f, counts))
    for n, got in zip(counts, results):
        np.testing.assert_array_equal(got, wants[n])
    assert f.cache_info()["host_steps"] == 0


def test_growth_is_logged_and_the_capacities_are_remembered(caplog):
    f = qjit(append_halves)
    with caplog.at_level(logging.INFO, logger="dynjax"):
        np.testing.assert_array_equal(f(100), np.r_[0.0, np.full(100, 0.5)])
    grown = [r.getMessage() for r in caplog.records if "grow its capacities" in r.getMessage()]
    assert grown == ["for_loop #0 needs sizes [17]: grow its capacities [16] to [64]",
                     "for_loop #0 needs sizes [65]: grow its capacities [64] to [256]"]
    # the loop ended at 101 elements: the run at the capacity they need (128) is compiled
    # ahead, in the background, for these inputs
    tiers.wait_for_background()
    compiles = f.cache_info()["padded_compilations"] + f.cache_info()["disk_cache_hits"]
    assert compiles == 4
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dynjax"):
        for n in (100, 7, 250):
            np.testing.assert_array_equal(f(n), np.r_[0.0, np.full(n, 0.5)])
    assert not [r for r in caplog.records if "grow" in r.getMessage()]
    served = [r.getMessage() for r in caplog.records if r.name == "dynjax.tiers"]
    assert served == [f"padded tier, resizing loops at capacities [[{c}]]" for c in (128, 256, 256)]
    assert f.cache_info()["padded_compilations"] + f.cache_info()["disk_cache_hits"] == compiles


def test_repeated_calls_take_the_fast_path_and_never_alias():
    f = qjit(append_halves)
    first = f(20)
    assert f._fast_plan((20,)) is not None
    second = f(20)
    np.testing.assert_array_equal(first, second)
    assert not np.may_share_memory(first, second)


def test_a_program_that_cannot_be_padded_still_runs_its_loop_within_capacities(caplog):
    """An inverse (a LAPACK call: no padding rule) next to the loop: the program runs step by
    step, and the loop, which reads an array of the argument's dynamic length, runs as a
    capacity program of its own (its length an extra input)."""
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        scale = jnp.linalg.inv(jnp.eye(2) * 2.0)[0, 0]
        return for_loop(0, x.shape[0], 1, allow_array_resizing=True)(
            lambda i, a: jnp.concatenate([a, a[-1:] + x[i] * scale]))(jnp.zeros(1))

    def ref(x):
        a = np.zeros(1)
        for i in range(x.shape[0]):
            a = np.concatenate([a, a[-1:] + x[i] * 0.5])
        return a
    with caplog.at_level(logging.INFO, logger="dynjax"):
        for n in (0, 1, 16, 17, 70):
            x = np.arange(n, dtype=float) - 3.0
            np.testing.assert_array_equal(f(x), ref(x))
    info = f.cache_info()
    assert info["host_steps"] == 5 and info["padded_runs"] >= 5
    assert "runs step by step" in caplog.text


def test_introspection_shows_the_capacity_executable():
    f = qjit(append_halves)
    f(40)
    assert "stablehlo.while" in f.mlir_specialized and "tensor<64xf64>" in f.mlir_specialized
    assert "while" in f.hlo


def grow_while(x):
    """Issue 22's growing stream: append one element per step up to 0.9 n + 1 elements."""
    m = (9 * x.shape[0]) // 10 + 1
    return lax.while_loop(lambda a: a.shape[0] < m,
                          lambda a: jnp.concatenate([a, a[-1:] * 0.5 + x[a.shape[0]]]),
                          x[:1], allow_array_resizing=True)


def grow_while_np(x):
    m = (9 * x.shape[0]) // 10 + 1
    a = x[:1]
    while a.shape[0] < m:
        a = np.concatenate([a, a[-1:] * 0.5 + x[a.shape[0]]])
    return a


def test_a_stream_of_sizes_compiles_logarithmically_many_capacity_programs():
    """Sizes in any order: a run that completed serves every size whose buckets are at most
    REUSE_ABOVE times smaller (its buckets and capacities hold them), a larger size starts
    from the capacities that served smaller ones, scaled, and a new run is built AHEAD
    buckets larger; so 40 sizes in 1..2000 need a handful of executables, not ~3 per size."""
    f = qjit(grow_while, abstracted_axes=({0: "n"},))
    rng = np.random.default_rng(0)
    base = rng.standard_normal(2000)
    sizes = [int(n) for n in rng.choice(np.arange(1, 2001), 40, replace=False)]

    def built():   # programs made, whether compiled or read from the disk cache
        info = f.cache_info()
        return info["padded_compilations"] + info["disk_cache_hits"]
    for n in sizes:
        np.testing.assert_allclose(f(base[:n]), grow_while_np(base[:n]), rtol=1e-13)
    info = f.cache_info()
    assert info["padded_runs"] == len(sizes) and info["host_steps"] == 0
    # the first size fits its first guess; later ones reuse or scale: a handful in all
    assert built() <= 6, info
    before = built()
    for n in sorted(sizes, reverse=True)[:10]:   # sizes already served: no new program
        np.testing.assert_allclose(f(base[:n]), grow_while_np(base[:n]), rtol=1e-13)
    assert built() == before
    # tiny sizes: one program of their own at most (a much larger run would pad their work
    # more than REUSE_ABOVE times), shared by all of them
    for n in (1, 2, 3, 1):
        np.testing.assert_allclose(f(base[:n]), grow_while_np(base[:n]), rtol=1e-13)
    assert built() <= before + 1


def test_a_much_larger_capacity_run_serves_a_tiny_size_while_its_own_compiles():
    """A run at buckets more than REUSE_ABOVE times larger pads a tiny call's work many times
    over, but it is correct: it serves the tiny call at once, while the program of the tiny
    size's own bucket (capacities scaled down from the larger run) compiles in the background,
    and serves the later tiny calls. No call waits for a compile a built run can stand in for."""
    from dynjax.execution.padded_runs import AHEAD, REUSE_ABOVE, bucket
    f = qjit(grow_while, abstracted_axes=({0: "n"},))
    compiles = lambda: f.cache_info()["padded_compilations"] + f.cache_info()["disk_cache_hits"]
    x = np.linspace(-1, 1, 1500)
    np.testing.assert_allclose(f(x), grow_while_np(x), rtol=1e-13)
    tiers.wait_for_background()   # the run at the capacities x needs, compiled ahead
    before = compiles()
    own = f"tensor<{bucket(AHEAD * bucket(5))}xf64>"
    assert 1536 > bucket(AHEAD * bucket(5)) * REUSE_ABOVE
    small = x[:5]
    release = threading.Event()
    tiers.background(release.wait)   # the tiny bucket's compile waits: the large run serves
    try:
        np.testing.assert_allclose(f(small), grow_while_np(small), rtol=1e-13)
        assert compiles() == before and own not in f.mlir_specialized
    finally:
        release.set()
    tiers.wait_for_background()
    assert compiles() == before + 1
    np.testing.assert_allclose(f(x[:3]), grow_while_np(x[:3]), rtol=1e-13)
    assert own in f.mlir_specialized
    # a size within REUSE_ABOVE of the large run reuses it
    mid = x[:400]
    np.testing.assert_allclose(f(mid), grow_while_np(mid), rtol=1e-13)
    assert compiles() == before + 1


def test_a_tail_slice_keeps_its_width_in_a_capacity_loop():
    """``a[-1:]`` of a growing array is ``min(n, 1)`` wide: the loop body works on one element,
    not on the whole capacity buffer (each step was O(capacity) before)."""
    f = qjit(grow_while, abstracted_axes=({0: "n"},))
    x = np.linspace(-1, 1, 1500)
    np.testing.assert_allclose(f(x), grow_while_np(x), rtol=1e-13)
    body = f.mlir_specialized.split("do {")[1]
    widths = {int(w) for w in __import__("re").findall(r"tensor<(\d+)xf64>", body)}
    capacity = max(widths)
    assert capacity >= 1351
    ops_on_capacity = [line for line in body.splitlines()
                       if f"tensor<{capacity}xf64>" in line and "=" in line and "dynamic_slice" not in line]
    # besides one-element reads, only the in-place write of the new element touches the buffer
    assert len(ops_on_capacity) == 1 and "dynamic_update_slice" in ops_on_capacity[0], ops_on_capacity
    for n in (1, 2, 5):
        y = np.arange(float(n))
        np.testing.assert_allclose(f(y), grow_while_np(y), rtol=1e-13)


def test_long_runs_reuse_one_runner_thread():
    """Runs waited for interruptibly (a while loop's trip count is an input) are handed to a
    reused runner thread, not a new thread per call."""
    import threading
    from dynjax.runtime import runners as pool

    @qjit
    def count(k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] + 1.0), (0, 0.0))[1]

    assert count(3) == 3.0
    assert count._entry().program.single.last_executable.wait_interruptibly
    assert pool.wait_for_runs(10)
    runners = {id(r) for r in pool._RUNNERS.all}
    for k in range(20):
        assert count(k) == float(k)
    # no new runner: the idle ones (at most MAX_IDLE, from earlier concurrent calls) served
    assert {id(r) for r in pool._RUNNERS.all} == runners and 1 <= len(runners) <= pool._RunnerPool.MAX_IDLE
    assert [t.name for t in threading.enumerate()].count("dynjax-run") == len(runners)
    assert pool.wait_for_runs(10) and pool.runs_in_flight() == 0


def test_long_runs_of_other_threads_run_on_their_own_thread(monkeypatch):
    """Ctrl-C reaches the main thread alone: another thread's run is not handed to a
    runner (a hand-over of 35-120 us that would buy nothing), the main thread's is."""
    import threading
    from dynjax.runtime import runners as pool

    @qjit
    def count(k):
        return lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] + 1.0), (0, 0.0))[1]

    assert count(3) == 3.0 and count._entry().program.single.last_executable.wait_interruptibly
    handed = []
    real = pool.submit
    monkeypatch.setattr(pool, "submit", lambda job: handed.append(threading.current_thread().name) or real(job))
    results = []
    worker = threading.Thread(target=lambda: results.extend(float(count(k)) for k in range(5)), name="worker")
    worker.start()
    worker.join()
    assert results == [0.0, 1.0, 2.0, 3.0, 4.0] and handed == []
    assert count(7) == 7.0 and handed == ["MainThread"]


DATA_SIZED = [
    # (a selection that only feeds a reduction has no size from data once rewritten as a masked
    # reduction, execution/masked_reductions.py: a cumsum keeps this one's)
    ("mask_cumsum", lambda x: jnp.sum(jnp.cumsum(x[x > 0]) ** 2), lambda x: np.sum(np.cumsum(x[x > 0]) ** 2)),
    ("mask_returned", lambda x: (x[x > 0], jnp.cumsum(x[x < 0])),
     lambda x: (x[x > 0], np.cumsum(x[x < 0]))),
    ("nonzero_gather", lambda x: jnp.mean(x[jnp.nonzero(x > 0.5)[0]] * 2 + 1),
     lambda x: np.mean(x[np.nonzero(x > 0.5)[0]] * 2 + 1) if np.any(x > 0.5) else np.nan),
    ("two_masks_concat", lambda x: jnp.concatenate([x[x > 0], -x[x < -0.5]]).max(initial=-1.0),
     lambda x: np.concatenate([x[x > 0], -x[x < -0.5]]).max(initial=-1.0)),
]


@pytest.mark.parametrize("policy", ["auto", "exact"])
@pytest.mark.parametrize("name, fn, oracle", DATA_SIZED, ids=[d[0] for d in DATA_SIZED])
def test_sizes_from_data_run_as_one_executable(name, fn, oracle, policy, monkeypatch):
    """A size computed from data (``x[x > 0]``) is bounded by the array it comes from, so the
    program is one padded executable even at a call's exact sizes: no segments, no host round
    trip; only a size returned to the user is cut on the host."""
    monkeypatch.setenv("DYNJAX_TIERS", policy)
    f = qjit(fn, abstracted_axes=({0: "n"},))
    rng = np.random.default_rng(len(name))
    sizes = [50, 0, 1, 2, 17, 50, 300]
    for n in sizes:
        x = rng.standard_normal(n)
        with np.errstate(all="ignore"):
            want = oracle(x)
        got = f(x)
        for g, w in zip(*(t if isinstance(t, tuple) else (t,) for t in (got, want))):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"{name} at n={n}")
    info = f.cache_info()
    assert info["host_steps"] == 0, info
    assert len(f._entry().program.steps) == 1
    if policy == "exact":   # one executable per distinct size, each at the exact input sizes
        assert info["specializations"] == len(set(sizes)), info
        assert info["padded_runs"] == 0 and info["exact_runs"] == len(sizes), info
    else:                   # the first size exact (one compile), the others padded by bucket
        assert info["specializations"] == 1 and info["padded_runs"] == len(sizes) - 2, info


def test_short_runs_of_loops_with_an_input_trip_count_skip_the_runner_thread():
    """A padded program whose cost is a formula in its integer inputs (a for_loop of n steps)
    waits interruptibly (on a runner thread, so that Ctrl-C is heard) only when that formula
    says the run may be long at this call's n; a while loop, which the cost model cannot
    bound, always does; a program of bounded cost never does."""
    from dynjax.execution.padded_runs import long_runs
    from dynjax.execution.tiers import LONG_FLOPS
    loop = dynjax.make_jaxpr(lambda n: for_loop(0, n, 1)(lambda i, a: a * 1.5 + 1.0)(jnp.zeros(8)))(3).jaxpr
    decide = long_runs(loop)
    assert callable(decide)
    assert decide([1000]) is False and decide([10 * LONG_FLOPS]) is True
    spin = dynjax.make_jaxpr(lambda x: lax.while_loop(lambda c: c < x, lambda c: c + 1.0, 0.0))(3.0).jaxpr
    assert long_runs(spin) is True
    plain = dynjax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(np.ones(8)).jaxpr
    assert long_runs(plain) is False
    # and the compiled program gives the same values either way
    f = qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[:1] + i]))(jnp.ones(1)))
    for n in (0, 1, 40, 1000):
        want = np.ones(1)
        for i in range(n):
            want = np.concatenate([want, want[:1] + i])
        np.testing.assert_array_equal(f(n), want)


# --- a repeated call: the run at the capacities its inputs need --------------------------------
def doubling(x):
    return lax.while_loop(lambda c: c[1] < 6, lambda c: (jnp.concatenate([c[0], c[0] * 0.5]), c[1] + 1),
                          (x, 0), allow_array_resizing=True)[0]


def doubled(x):
    for _ in range(6):
        x = np.concatenate([x, x * 0.5])
    return x


@pytest.mark.parametrize("n", [0, 1, 5, 40])
def test_repeated_inputs_run_at_the_capacities_they_need(n, caplog):
    """The first call grows the capacities fourfold, past what the loop needs (64 x n of up to
    4x that); the run at the capacity it ended with is compiled ahead, and serves the
    repeated calls directly, through the dispatch table: no more compiles, no choice made."""
    f = qjit(doubling, abstracted_axes=({0: "n"},))
    x = np.linspace(-1.0, 1.0, n)
    np.testing.assert_array_equal(f(x), doubled(x))
    tiers.wait_for_background()
    cp = f._entry().program.capacity
    need = bucket(64 * n)
    assert cp.steady.get((n,))[2] == ((need,),)
    compiles = f.cache_info()["padded_compilations"] + f.cache_info()["disk_cache_hits"]
    with caplog.at_level(logging.INFO, logger="dynjax"):
        for _ in range(3):
            got = f(x)
            np.testing.assert_array_equal(got, doubled(x))
            assert not np.may_share_memory(got, x)
    served = [r.getMessage() for r in caplog.records if r.name == "dynjax.tiers"]
    assert served == [f"padded tier, resizing loops at capacities [[{need}]], the size of n (axis 0 of "
                      "argument 0) = " + str(n)] * 3
    plan = f._fast_plan((x,))   # the dispatch table's plan goes to the direct run first
    assert plan is not None and plan[1].steady == cp.run_steady
    info = f.cache_info()
    assert info["padded_compilations"] + info["disk_cache_hits"] == compiles
    assert info["padded_runs"] == 4 and info["host_steps"] == 0


def test_a_trip_count_that_recurs_gets_its_capacity(monkeypatch):
    """Inputs served at larger capacities than they need get their own run once they recur
    enough to pay for its compile (``tiers.worth_exact``; here after 2 calls)."""
    monkeypatch.setenv("DYNJAX_EXACT_AFTER", "2")
    monkeypatch.setenv("DYNJAX_SYNC_COMPILE", "1")
    f = qjit(append_halves)
    for n in (1000, 100, 100, 100, 1000):
        np.testing.assert_array_equal(f(n), np.r_[0.0, np.full(n, 0.5)])
    cp = f._entry().program.capacity
    assert cp.steady.get((1000,))[2] == ((1024,),) and cp.steady.get((100,))[2] == ((128,),)
    info = f.cache_info()
    assert info["padded_compilations"] + info["disk_cache_hits"] == 4 + 1   # 16, 64, 256, 1024; then 128


def test_data_that_make_a_loop_go_further_leave_the_direct_run(caplog):
    """The same sizes, other data: a loop that now needs more than the run serving those
    inputs has stops early, and they take the general path (growth) from then on."""
    @qjit(abstracted_axes=({0: "n"},))
    def f(x):
        return lax.while_loop(lambda a: jnp.sum(a) < x[0], lambda a: jnp.concatenate([a, a[:1]]),
                              jnp.ones(1), allow_array_resizing=True)

    def want(x):
        a = np.ones(1)
        while a.sum() < x[0]:
            a = np.concatenate([a, a[:1]])
        return a
    for k, first in enumerate((10.0, 10.0, 10.0, 300.0, 10.0, 300.0, 0.0)):
        x = np.array([first, 2.0])
        np.testing.assert_array_equal(f(x), want(x))
        if k == 0:   # the run at the capacity these inputs needed (16), compiled ahead
            tiers.wait_for_background()
            assert f._entry().program.capacity.steady.get((2,))[2] == ((16,),)
    cp = f._entry().program.capacity
    assert cp.steady.get((2,)) is None and cp.repeats.get((2,)).unsteady


def _until_sum(x, t):
    """Take elements of ``x`` while their sum stays below ``t`` (and some are left): the
    loop's end depends on the data."""
    def cond(a):
        return (a.shape[0] < x.shape[0]) & (jnp.sum(a) < t)

    def body(a):
        k = a.shape[0]
        return jnp.concatenate([a, x[k:k + 1] * 1.0])
    a = lax.while_loop(cond, body, x[:0], allow_array_resizing=True)
    return a, jnp.cumsum(a)[::2], a.shape[0]


def _until_sum_np(x, t):
    k = 0
    while k < x.shape[0] and x[:k].sum() < t:
        k += 1
    a = x[:k]
    return a, np.cumsum(a)[::2], k


def test_loop_reports_are_finished_on_the_host():
    """A resizing loop's report (whether it stopped for want of room, the size it would have
    needed) and the results' lengths are integer arithmetic on the loop's final counters and
    the inputs: the padded module returns those scalars and the host finishes the arithmetic
    (``host_prologue.hoist_epilogue``). Here whether the loop wanted to go on reads the data
    (a device value among them). Every size and threshold agrees with numpy, through the
    capacity growth a long run needs and the runs served again."""
    f = qjit(_until_sum, abstracted_axes=({0: "n"}, None))
    rng = np.random.default_rng(3)
    for n in (0, 1, 5, 1000, 5, 1000):
        x = rng.uniform(0.0, 1.0, n)
        for t in (0.0, 0.5, 3.0, 1e9):
            got = f(x, t)
            want = _until_sum_np(x, t)
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, err_msg=f"n={n}, t={t}")
            assert np.asarray(got[0]).shape == want[0].shape
    assert f.cache_info()["padded_runs"] == 24 and f.cache_info()["host_steps"] == 0
    text = f.mlir_specialized
    signature = next(line for line in text.splitlines() if "@main" in line)
    results = signature[signature.index("->"):]
    # besides the two arrays, the device returns four scalars for the host (the loop's final
    # length, whether it wanted to go on, which reads the data, and the strided length before
    # and after its division), not the six values the host makes of them; more than
    # SEPARATE_SCALARS, so they come packed in one vector
    assert host_prologue.SEPARATE_SCALARS < 4
    assert results.count("tensor<") == 3 and "tensor<4xi64>" in results, signature


def _append_first(n):
    """Row 13 of bench.py: append ``a[0] + i`` at each step, from one element."""
    return for_loop(0, n, 1, allow_array_resizing=True)(
        lambda i, a: jnp.concatenate([a, a[:1] + i]))(jnp.ones(1))


def _append_first_np(n):
    a = np.ones(1)
    for i in range(n):
        a = np.concatenate([a, a[:1] + i])
    return a


def _drop_two_add_one(n):
    """From three elements, drop two and append the first of the rest plus one: 3, 2, 0, 0..."""
    def body(i, a):
        b = a[2:]
        return jnp.concatenate([b, b[:1] + 1.0])
    return for_loop(0, n, 1, allow_array_resizing=True)(body)(jnp.arange(3.0))


def _drop_two_add_one_np(n):
    a = np.arange(3.0)
    for _ in range(n):
        b = a[2:]
        a = np.concatenate([b, b[:1] + 1.0])
    return a


@pytest.mark.parametrize("program, oracle", [(_append_first, _append_first_np),
                                             (_drop_two_add_one, _drop_two_add_one_np)])
def test_a_carried_size_keeps_its_lower_end_only_when_the_body_does(program, oracle):
    """A resizing loop's carried sizes start at their initial sizes' lower end (1 for
    ``_append_first``) and keep it when the body never makes them smaller (proved by
    induction on the intervals, ``padding_control_flow._invariant_lows``): there ``a[:1]`` is
    one element wide. ``_drop_two_add_one`` shrinks from 3 to 0, so its sizes get no lower
    end; a wrong one would cut its slices wrong. Both agree with numpy, through the capacity
    growth of long runs."""
    f = qjit(program)
    for n in (0, 1, 2, 3, 5, 1000, 3, 2000):
        got, want = f(n), oracle(n)
        assert got.shape == want.shape, n
        np.testing.assert_array_equal(got, want, err_msg=f"n={n}")
    assert f.cache_info()["padded_runs"] == 8 and f.cache_info()["host_steps"] == 0
