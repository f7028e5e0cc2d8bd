"""The dispatch fast path of ``qjit`` and the runtime's staging buffers.

A steady-state call looks its arguments up in ``QJIT._fast`` (by shape and dtype of arrays,
by exact type of scalars, and by value only for integer arguments the executable bakes in)
and runs the executable, whose small inputs are written into staging buffers XLA reads in
place. These tests check that every argument kind takes that path, that the answers and
result dtypes are right, and that results never share memory with arguments or with later
calls' inputs.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dynjax.numpy as jnp
from dynjax import qjit
from dynjax.runtime import xla


def _no_slow_path(f):
    """Make any call that misses the dispatch table fail."""
    def slow(*args, **kwargs):
        raise AssertionError(f"slow path taken for {args} {kwargs}")
    f._call = slow


KINDS = [
    ("python float", 1.5, 2.25),
    ("python int", 3, 4),
    ("python bool", True, False),
    ("np.float64", np.float64(1.5), np.float64(2.25)),
    ("np.float32", np.float32(1.5), np.float32(2.25)),
    ("np.int64", np.int64(3), np.int64(4)),
    ("np.int32", np.int32(3), np.int32(4)),
    ("0-d f64 array", np.array(1.5), np.array(2.25)),
    ("0-d i64 array", np.array(3), np.array(4)),
    ("np.ones(10)", np.ones(10), np.arange(10.0)),
    ("f32 array", np.ones(3, np.float32), np.arange(3, dtype=np.float32)),
]


@pytest.mark.usefixtures("exact_tier")
@pytest.mark.parametrize("label,a,b", KINDS, ids=[k[0] for k in KINDS])
def test_every_argument_kind_takes_the_fast_path(label, a, b):
    one = qjit(lambda x: x * 2)
    two = qjit(lambda x, y: x * y)
    want_one, want_two = one(a), two(a, b)   # traces, compiles and registers
    assert one._fast_plan((a,)) is not None and two._fast_plan((a, b)) is not None
    before = one.cache_info()["exact_runs"]
    _no_slow_path(one)
    _no_slow_path(two)
    for _ in range(3):
        r1, r2 = one(a), two(a, b)
        assert r1.dtype == want_one.dtype and r2.dtype == want_two.dtype
        np.testing.assert_array_equal(r1, np.asarray(a) * 2)
        np.testing.assert_array_equal(r2, np.asarray(a) * np.asarray(b))
    assert one.cache_info()["exact_runs"] == before + 3


@pytest.mark.usefixtures("exact_tier")
def test_int_sizes_are_keyed_by_value():
    f = qjit(lambda n: jnp.ones(n).sum())   # may fold to n: then n is a runtime integer
    assert [float(f(n)) for n in (3, 4, 3, 4, 5)] == [3.0, 4.0, 3.0, 4.0, 5.0]
    g = qjit(lambda n: jnp.sin(jnp.ones(n)).sum())   # n is a size baked into the executable
    assert [float(g(n)) for n in (3, 4, 3, 4, 5)] == pytest.approx([np.sin(1.0) * n for n in (3, 4, 3, 4, 5)])
    assert g.cache_info()["specializations"] == 3
    _no_slow_path(f)
    _no_slow_path(g)
    assert [float(f(n)) for n in (5, 3, 4)] == [5.0, 3.0, 4.0]
    assert [float(g(n)) for n in (5, 3, 4)] == pytest.approx([np.sin(1.0) * n for n in (5, 3, 4)])
    with pytest.raises(AssertionError, match="slow path"):
        g(6)   # a size never seen is not served by another size's executable


@pytest.mark.usefixtures("exact_tier")
@pytest.mark.parametrize("kind", [int, np.int64, np.array])
def test_numpy_and_array_int_sizes_are_keyed_by_value(kind):
    f = qjit(lambda n: jnp.arange(n) * 2)
    for n in (2, 5, 2, 0, 5):
        np.testing.assert_array_equal(f(kind(n)), np.arange(n) * 2)
    _no_slow_path(f)
    for n in (0, 2, 5):
        np.testing.assert_array_equal(f(kind(n)), np.arange(n) * 2)


@pytest.mark.usefixtures("exact_tier")
def test_runtime_ints_are_keyed_by_type():
    f = qjit(lambda x, k: x * k)
    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x, 1), x)
    _no_slow_path(f)
    for k in (2, -3, 0, 7, 2**40):
        np.testing.assert_array_equal(f(x, k), x * k)
    assert f.cache_info()["specializations"] == 1


@pytest.mark.usefixtures("exact_tier")
def test_size_and_runtime_int_in_one_signature():
    f = qjit(lambda n, k: jnp.arange(n) * k)
    for n, k in [(3, 2), (3, 5), (4, 2), (3, -1), (4, 0)]:
        np.testing.assert_array_equal(f(n, k), np.arange(n) * k)
    assert f.cache_info()["specializations"] == 2   # one per size n, none per k
    _no_slow_path(f)
    for n, k in [(4, 9), (3, 11)]:
        np.testing.assert_array_equal(f(n, k), np.arange(n) * k)


def test_python_int_out_of_range_is_an_error_not_a_wrong_answer():
    f = qjit(lambda x, k: x * k)
    x = np.ones(2)
    f(x, 3)
    with pytest.raises((TypeError, OverflowError)):
        f(x, 2**64)
    np.testing.assert_array_equal(f(x, 5), [5.0, 5.0])


def test_python_float_is_weak_and_numpy_float32_is_not():
    f = qjit(lambda a, s: a * s)
    a = np.ones(3, np.float32)
    for _ in range(2):
        assert f(a, 2.0).dtype == np.float32            # weak Python float
        assert f(a, np.float32(2.0)).dtype == np.float32
        assert f(a, np.array(2.0)).dtype == np.float64  # a strong f64 array promotes
    g = qjit(lambda s: s * 2)
    for _ in range(2):
        assert g(1.5).dtype == np.float64 and g(np.float32(1.5)).dtype == np.float32
        assert float(g(1.5)) == 3.0 and float(g(np.float32(1.5))) == 3.0


def test_bool_and_int_arguments_have_separate_plans():
    f = qjit(lambda k: k + 1)
    for _ in range(2):
        assert int(f(True)) == 2 and int(f(1)) == 2 and int(f(False)) == 1
    assert f._fast_plan((True,)) is not f._fast_plan((1,))
    g = qjit(lambda b, x: jnp.where(b, x, -x))
    x = np.arange(3.0)
    for b in (True, False, True, np.bool_(False)):
        np.testing.assert_array_equal(g(b, x), x if b else -x)


def test_results_do_not_alias_arguments_or_later_calls():
    ident = qjit(lambda x: x)
    for x in (np.arange(10.0), np.array(2.5)):
        r1 = ident(x)
        r2 = ident(x + 1)     # the same staging buffer is written again
        assert not np.shares_memory(r1, x) and not np.shares_memory(r2, x)
        np.testing.assert_array_equal(r1, x)
        np.testing.assert_array_equal(r2, x + 1)
        x_before = x.copy()
        x += 100              # mutating the argument afterwards changes no result
        np.testing.assert_array_equal(r1, x_before)
    f = qjit(lambda s: s * 1.0)
    r = [f(float(i)) for i in range(5)]
    assert [float(v) for v in r] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_large_and_small_inputs_together():
    f = qjit(lambda x, y, s: x.sum() + y.sum() * s)
    big = np.ones(10_000)          # 80 kB: put on the device per call, not staged
    small = np.arange(4.0)
    for s in (1.0, 2.0, 3.0):
        assert float(f(big, small, s)) == 10_000 + 6.0 * s
    strided = np.arange(20.0)[::2]
    assert float(f(big, strided[:4], 1.0)) == 10_000 + 12.0


def test_threads_calling_with_different_values():
    f = qjit(lambda x, k, s: x * k + s)
    x = np.arange(5.0)
    f(x, 1, 0.5)
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        for j in range(200):
            k, s = i * 1000 + j, float(j)
            np.testing.assert_array_equal(f(x, k, s), x * k + s)
        return True
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8)))


def test_executable_checks_arguments():
    exe = xla.compile("""module @m { func.func public @main(%x: tensor<2xf64>, %k: tensor<i64>) -> tensor<2xf64> {
      %0 = stablehlo.convert %k : (tensor<i64>) -> tensor<f64>
      %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f64>) -> tensor<2xf64>
      %2 = stablehlo.multiply %x, %1 : tensor<2xf64>
      return %2 : tensor<2xf64> }}""")
    np.testing.assert_array_equal(exe(np.ones(2), 3)[0], [3.0, 3.0])
    np.testing.assert_array_equal(exe([1.0, 2.0], np.int64(2))[0], [2.0, 4.0])   # converted
    np.testing.assert_array_equal(exe(np.arange(4.0)[::2], 2)[0], [0.0, 4.0])   # strided
    with pytest.raises(TypeError, match="argument 0"):
        exe(np.ones(3), 1)
    with pytest.raises(TypeError, match="argument 1"):
        exe(np.ones(2), 1.5)
    with pytest.raises(TypeError, match="argument 1"):
        exe(np.ones(2), 2**64)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        exe(np.ones(2))
    np.testing.assert_array_equal(exe(np.ones(2), 4)[0], [4.0, 4.0])   # still usable


def test_numpy_float64_scalars_are_strongly_typed_whatever_the_call_order():
    """``np.float64`` subclasses Python's float but is a numpy scalar: strongly typed (as in
    jax), so ``x_f32 * np.float64(2)`` is float64 while ``x_f32 * 2.0`` stays float32, in
    either call order (the trace cache must never hand one the other's trace)."""
    x = np.ones(2, np.float32)
    for order in (1, -1):
        f = qjit(lambda x, s: x * s)
        calls = [(np.float64(2), np.float64), (np.array(2.0), np.float64), (2.0, np.float32)][::order]
        for s, want in calls:
            out = f(x, s)
            assert out.dtype == want, (s, out.dtype)
            np.testing.assert_array_equal(out, np.full(2, 2.0))


@pytest.mark.usefixtures("exact_tier")
def test_one_array_calls_take_the_memo_only_for_their_own_shape_and_dtype():
    """A call with one array remembers its plan in the table's memo (``BoundedCache.memo``):
    the next call with the same shape and dtype object skips hashing a key. Any other shape,
    an equal shape of another dtype, a byte-swapped dtype or a scalar takes the table."""
    from dynjax.execution.lru import NO_MEMO
    f = qjit(lambda x: x * 3 + 1)
    calls = [np.arange(4.0), np.arange(5.0), np.arange(4.0), np.arange(4, dtype=np.float32),
             np.arange(4.0).astype(">f8"), np.arange(4.0), np.array(2.0), np.array(2.5),
             np.arange(4.0).reshape(2, 2), np.arange(4.0)[::2], np.arange(4.0)]
    for _ in range(2):
        for x in calls:
            out = f(x)
            want = x * 3 + 1
            assert out.dtype == want.dtype.newbyteorder("=") and out.shape == want.shape
            np.testing.assert_array_equal(out, want)
    memo = f._fast.memo
    assert memo is not NO_MEMO and memo[0] == (4,) and memo[1] is np.dtype(np.float64)
    _no_slow_path(f)
    np.testing.assert_array_equal(f(np.ones(4)), np.full(4, 4.0))


@pytest.mark.usefixtures("exact_tier")
def test_the_memo_is_emptied_when_the_table_changes():
    from dynjax.execution.lru import NO_MEMO
    f = qjit(lambda x: x + 1)
    x = np.arange(3.0)
    f(x), f(x)
    assert f._fast.memo[2] is f._fast.peek(((x.shape, x.dtype),))
    f._fast.put(("another key",), None)   # any change: a new plan, an eviction
    assert f._fast.memo is NO_MEMO
    np.testing.assert_array_equal(f(x), x + 1)
    assert f._fast.memo is not NO_MEMO

    # a change between the lookup and the memo's update (another thread's) empties it too
    lookup = f._fast_hit

    def changing_lookup(key):
        plan = lookup(key)
        f._fast.put(("yet another key",), None)
        return plan
    f._fast.memo = NO_MEMO
    f._fast_hit = changing_lookup
    np.testing.assert_array_equal(f(x), x + 1)
    assert f._fast.memo is NO_MEMO
