"""``dynjax.lax``: strict primitives (XLA semantics) against numpy oracles, static and dynamic shapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dynjax import lax
from helpers import check_three_ways, examples

SIZES = st.lists(st.integers(2, 5), min_size=1, max_size=2).map(lambda l: l + [0, 1])
FEW = settings(max_examples=examples(4), deadline=None)


def rand(seed, shape, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-6, 7, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_integer_division_rounds_toward_zero():
    x = np.array([7, -7, 7, -7, 0, 5], np.int64)
    y = np.array([2, 2, -2, -2, 3, 0], np.int64)
    trunc = np.where(y == 0, 0, np.trunc(x / np.where(y == 0, 1, y))).astype(np.int64)
    check_three_ways(lax.div, lambda a, b: trunc, lambda _: (x, y), [0], ways=["eager", "static", "dynamic"])
    check_three_ways(lax.rem, lambda a, b: np.where(y == 0, 0, np.fmod(a, np.where(y == 0, 1, b))),
                     lambda _: (x, y), [0], ways=["eager", "static", "dynamic"])


@given(sizes=SIZES, seed=st.integers(0, 99))
@FEW
def test_broadcast_in_dim_and_iota(sizes, seed):
    check_three_ways(lambda x: lax.broadcast_in_dim(x, (2, x.shape[0], 3), (1,)),
                     lambda x: np.broadcast_to(x[None, :, None], (2, x.shape[0], 3)),
                     lambda n: (rand(seed, (n,)),), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda n: lax.broadcasted_iota(np.int32, (n, 3), 1),
                     lambda n: np.broadcast_to(np.arange(3, dtype=np.int32), (n, 3)), lambda n: (n,), sizes)
    check_three_ways(lambda n: lax.iota(np.float32, n + 1), lambda n: np.arange(n + 1, dtype=np.float32),
                     lambda n: (n,), sizes)


@given(sizes=SIZES, seed=st.integers(0, 99))
@FEW
def test_reshape_transpose_rev_squeeze(sizes, seed):
    check_three_ways(lambda x: lax.reshape(x, (3, x.shape[0] * 2)), lambda x: x.reshape(3, -1),
                     lambda n: (rand(seed, (n, 6)),), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x: lax.transpose(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1),
                     lambda n: (rand(seed, (n, 2, 3)),), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x: lax.rev(x, (0, 1)), lambda x: x[::-1, ::-1],
                     lambda n: (rand(seed, (n, 3)),), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x: lax.squeeze(x, (1,)), lambda x: x[:, 0],
                     lambda n: (rand(seed, (n, 1)),), sizes, abstracted_axes={0: "n"})


@given(sizes=SIZES, seed=st.integers(0, 99), data=st.data())
@FEW
def test_dynamic_slice_clamps_start(sizes, seed, data):
    """JAX's semantics: a negative start counts from the end (once), then the start is
    clamped so that the slice fits."""
    start = data.draw(st.integers(-12, 8))

    def np_slice(x, s, size):
        s = s + x.shape[0] if s < 0 else s
        s = min(max(s, 0), x.shape[0] - size)
        return x[s:s + size]
    check_three_ways(lambda x, s: lax.dynamic_slice(x, (s, 0), (2, 3)), lambda x, s: np_slice(x, s, 2),
                     lambda n: (rand(seed, (n + 2, 3)), start), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x, s: lax.dynamic_slice(x, (s,), (x.shape[0] // 2,)),
                     lambda x, s: np_slice(x, s, x.shape[0] // 2),
                     lambda n: (rand(seed, (n,)), start), sizes, abstracted_axes={0: "n"})


@given(sizes=SIZES, seed=st.integers(0, 99), data=st.data())
@FEW
def test_dynamic_update_slice(sizes, seed, data):
    start = data.draw(st.integers(-12, 8))

    def np_update(x, u, s):
        out = x.copy()
        s = s + x.shape[0] if s < 0 else s
        s = min(max(s, 0), x.shape[0] - u.shape[0])
        out[s:s + u.shape[0]] = u
        return out
    check_three_ways(lambda x, u, s: lax.dynamic_update_slice(x, u, (s, 0)), np_update,
                     lambda n: (rand(seed, (n + 2, 2)), rand(seed + 1, (2, 2)), start), sizes,
                     abstracted_axes=({0: "n"},))


@given(sizes=SIZES, seed=st.integers(0, 99))
@FEW
def test_concatenate_and_pad(sizes, seed):
    check_three_ways(lambda x, y: lax.concatenate([x, y, x], -1), lambda x, y: np.concatenate([x, y, x], -1),
                     lambda n: (rand(seed, (2, n)), rand(seed + 1, (2, 3))), sizes, abstracted_axes=({1: "n"},))
    check_three_ways(lambda x: lax.pad(x, 0.5, [(1, 2, 0), (0, -1, 1)]),
                     lambda x: _np_pad(x, 0.5, [(1, 2, 0), (0, -1, 1)]),
                     lambda s: (rand(s, (2, 3)),), [seed, seed + 1])


def _np_pad(x, value, config):
    """Reference lax.pad: interior padding, then edge padding (negative trims)."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        if interior and n > 1:
            shape = list(x.shape)
            shape[axis] = n + (n - 1) * interior
            buf = np.full(shape, value)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(None, None, interior + 1)
            buf[tuple(idx)] = x
            x = buf
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=value)
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(-min(lo, 0), x.shape[axis] + min(hi, 0))
        x = x[tuple(idx)]
    return x


@given(sizes=SIZES, seed=st.integers(0, 99))
@FEW
def test_sort_multiple_keys_and_cumsum(sizes, seed):
    def np_sort2(k1, k2, v):
        order = np.lexsort((k2, k1))
        return k1[order], k2[order], v[order]
    check_three_ways(lambda a, b, c: lax.sort((a, b, c), 0, num_keys=2), np_sort2,
                     lambda n: (rand(seed, (n,), np.int32) % 3, rand(seed + 1, (n,)), rand(seed + 2, (n,))),
                     sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x: lax.cumsum(x, 0, reverse=True), lambda x: np.cumsum(x[::-1], 0)[::-1],
                     lambda n: (rand(seed, (n, 2)),), sizes, abstracted_axes={0: "n"})


@given(sizes=SIZES, seed=st.integers(0, 99))
@FEW
def test_dot_general_batch_dims(sizes, seed):
    check_three_ways(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                     lambda x, y: np.einsum("bij,bjk->bik", x, y),
                     lambda n: (rand(seed, (n, 2, 3)), rand(seed + 1, (n, 3, 4))), sizes, abstracted_axes={0: "n"})
    check_three_ways(lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ())), preferred_element_type=np.int64),
                     lambda x, y: (x.T.astype(np.int64) @ y.astype(np.int64)),
                     lambda n: (rand(seed, (n, 2), np.int32), rand(seed + 1, (n, 3), np.int32)), sizes,
                     abstracted_axes={0: "n"})


@pytest.mark.parametrize("bad", [
    lambda x: lax.add(x, np.ones(3, np.float32)),            # dtypes differ
    lambda x: lax.add(x, np.ones(4)),                        # shapes differ
    lambda x: lax.sin(np.arange(3)),                         # integer operand
    lambda x: lax.reshape(x, (4,)),                          # sizes differ
    lambda x: lax.transpose(x, (0, 0)),
    lambda x: lax.squeeze(x, (0,)),
    lambda x: lax.concatenate([x, x], 2),
    lambda x: lax.broadcast_in_dim(x, (2, 4), (1,)),
])
def test_strict_operand_checks(bad):
    import dynjax
    with pytest.raises(TypeError):
        dynjax.make_jaxpr(bad)(np.ones(3))


def test_eager_checks_hold_after_a_dtype_was_accepted():
    """Eager elementwise operations remember the dtypes they took, so that a loop evaluated
    eagerly does not check every operation again (``lax.add`` of two arrays: 19 -> 7 us);
    what tracing refuses stays refused after that, and the values are numpy's."""
    f32 = np.ones(3, np.float32)
    np.testing.assert_array_equal(lax.add(f32, f32), np.full(3, 2, np.float32))
    np.testing.assert_array_equal(lax.sin(f32), np.sin(f32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.add(f32, np.ones(2, np.float32))
    with pytest.raises(TypeError, match="same dtype"):
        lax.add(f32, np.ones(3))
    with pytest.raises(TypeError, match="same dtype"):
        lax.add(f32, 2.0)   # a Python float is float64, as in JAX with x64
    with pytest.raises(TypeError, match="sin"):
        lax.sin(np.arange(3))
    assert lax.add(f32, np.float32(2)).dtype == np.float32   # a rank-0 operand broadcasts
