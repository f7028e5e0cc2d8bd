"""rot90, tile, repeat, append, insert, delete, split, array_split, hsplit, vsplit, dsplit,
meshgrid and indices against numpy.

Every program runs three ways: numpy (the oracle), dynjax eagerly (numpy arrays in, numpy
arrays out) and compiled with ``qjit`` and abstracted axes, traced once for every size
(0 and 1 included). Eager and compiled results must agree bit for bit; both must equal
numpy's (shape, dtype and values).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from helpers import examples


def assert_same(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=str(what))


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def check(fn, ref, arg_sets, axes={0: "n"}, traces=1):
    """``fn`` eagerly and compiled (one trace for every argument set) against ``ref``."""
    compiled = dynjax.qjit(fn, abstracted_axes=axes)
    for args in arg_sets:
        want = ref(*args)
        eager = fn(*args)
        got = compiled(*args)
        what = [np.shape(a) for a in args]
        assert len(_leaves(want)) == len(_leaves(eager)) == len(_leaves(got)), what
        for g, w, e in zip(_leaves(got), _leaves(want), _leaves(eager)):
            assert isinstance(e, np.ndarray), (what, type(e))
            assert_same(e, w, ("eager", what))
            assert_same(g, e, ("compiled vs eager", what))
    if traces is not None:
        assert compiled.cache_info()["traces"] == traces
    return compiled


def arr(*shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return rng.integers(-9, 10, size=shape).astype(dtype)


SIZES = (0, 1, 5)


# ----------------------------------------------------------------------------------------------
# rot90
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (0, 2), (2, 0), (-1, -3), (1, 2)])
def test_rot90(k, axes):
    check(lambda x: jnp.rot90(x, k, axes), lambda x: np.rot90(x, k, axes),
          [(arr(n, 3, 4),) for n in SIZES])


def test_rot90_2d_and_dtypes():
    for dt in (np.int8, np.bool_, np.complex64, np.float32):
        check(lambda x: jnp.rot90(x), lambda x: np.rot90(x), [(arr(n, 3, dtype=dt),) for n in SIZES],
              axes={0: "n", 1: "m"})


def test_rot90_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"len\(axes\) must be 2"):
        jnp.rot90(x, axes=(0,))
    with pytest.raises(ValueError, match="Axes must be different"):
        jnp.rot90(x, axes=(0, -2))
    with pytest.raises(ValueError, match="Axes must be different"):
        jnp.rot90(np.arange(3))
    with pytest.raises(ValueError, match=r"out of range for array of ndim=3"):
        jnp.rot90(np.ones((2, 3, 4)), axes=(0, 4))
    with pytest.raises(TypeError, match="static integer"):
        dynjax.qjit(lambda x, k: jnp.rot90(x, k))(x, 1)


# ----------------------------------------------------------------------------------------------
# tile
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reps", [1, 2, 0, (2, 1), (1, 3), (0, 2), (2, 1, 3), (), (3,), np.array([2, 2])])
@pytest.mark.parametrize("ndim", [1, 2])
def test_tile(reps, ndim):
    shape = (lambda n: (n,)) if ndim == 1 else (lambda n: (n, 3))
    check(lambda x: jnp.tile(x, reps), lambda x: np.tile(x, reps), [(arr(*shape(n)),) for n in SIZES])


def test_tile_scalars_and_traced_reps():
    assert_same(jnp.tile(5, 3), np.tile(5, 3))
    assert_same(jnp.tile(np.float32(2), ()), np.tile(np.float32(2), ()))
    f = dynjax.qjit(lambda x, r: jnp.tile(x, (r, 2)), abstracted_axes=({0: "n"}, None))
    for n, r in [(3, 2), (0, 4), (2, 0), (1, 1)]:
        x = arr(n)
        assert_same(f(x, r), np.tile(x, (r, 2)))
        assert_same(jnp.tile(x, (r, 2)), np.tile(x, (r, 2)))
    assert f.cache_info()["traces"] == 1
    g = dynjax.qjit(lambda x: jnp.tile(x, x.shape[0]), abstracted_axes={0: "n"})
    for n in SIZES:
        assert_same(g(arr(n)), np.tile(arr(n), n))
    assert g.cache_info()["traces"] == 1


def test_tile_errors():
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        jnp.tile(np.arange(3), -1)
    with pytest.raises(TypeError):
        jnp.tile(np.arange(3), 1.5)


# ----------------------------------------------------------------------------------------------
# repeat
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("r", [0, 1, 3, [2], np.array(2, np.int8)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
def test_repeat_scalar_count(r, axis):
    check(lambda x: jnp.repeat(x, r, axis=axis), lambda x: np.repeat(x, r, axis=axis),
          [(arr(n, 3),) for n in SIZES])


def test_repeat_count_array_along_static_axis():
    counts = [2, 0, 3]
    for axis in (1, -1):
        check(lambda x: jnp.repeat(x, counts, axis=axis), lambda x: np.repeat(x, counts, axis=axis),
              [(arr(n, 3),) for n in SIZES])
    check(lambda x: jnp.repeat(x, np.array([True, False, True])), lambda x: np.repeat(x, [True, False, True]),
          [(np.arange(3.0),)], axes=None)
    assert_same(jnp.repeat(7, [2]), np.repeat(7, [2]))
    assert_same(jnp.repeat(np.array(7), 2, axis=0), np.repeat(np.array(7), 2, axis=0))
    assert_same(jnp.repeat(np.arange(3), [1.0, 2.0, 1.0]), np.repeat(np.arange(3), [1.0, 2.0, 1.0]))


def test_repeat_traced_scalar_count():
    f = dynjax.qjit(lambda x, r: jnp.repeat(x, r, axis=0), abstracted_axes=({0: "n"}, None))
    for n, r in [(3, 2), (0, 3), (4, 0), (1, 1), (2, -1)]:
        x = arr(n, 2)
        want = np.repeat(x, max(r, 0), axis=0)      # traced: a negative count is 0
        assert_same(f(x, r), want)
        assert_same(f(x, np.int32(r)), want)
    assert f.cache_info()["traces"] == 2           # i64 and i32 counts


@settings(max_examples=examples(40))
@given(n=st.integers(0, 7), m=st.integers(1, 3), data=st.data())
def test_repeat_count_arrays(n, m, data):
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
    x = arr(n, m)
    for axis in (0, -2):
        want = np.repeat(x, counts, axis=axis)
        eager = jnp.repeat(x, counts, axis=axis)
        assert_same(eager, want)
        got = _REPEAT_ROWS(x, counts)
        assert_same(got, eager)
    flat = np.repeat(x[:, 0], counts)
    assert_same(_REPEAT_FLAT(x[:, 0].copy(), counts), flat)
    assert_same(jnp.repeat(x[:, 0], counts), flat)


_REPEAT_ROWS = dynjax.qjit(lambda x, r: jnp.repeat(x, r, axis=0), abstracted_axes=({0: "n"}, {0: "n"}))
_REPEAT_FLAT = dynjax.qjit(lambda x, r: jnp.repeat(x, r), abstracted_axes=({0: "n"}, {0: "n"}))


def test_repeat_count_arrays_one_trace():
    check(lambda x, r: jnp.repeat(x, r, axis=0), lambda x, r: np.repeat(x, r, axis=0),
          [(arr(n, 2), np.arange(n) % 3) for n in (0, 1, 5, 8)], axes=({0: "n"}, {0: "n"}))


def test_repeat_data_dependent_size_used_further():
    def fn(x, r):
        y = jnp.repeat(x, r)
        return jnp.sum(y), y * jnp.arange(y.shape[0]), jnp.asarray(jnp.repeat(x, r).shape[0])

    def ref(x, r):
        y = np.repeat(x, r)
        return np.sum(y), y * np.arange(y.shape[0]), np.asarray(y.shape[0])

    check(fn, ref, [(arr(n), np.arange(n) % 4) for n in (0, 1, 6, 9)], axes=({0: "n"}, {0: "n"}))


def test_repeat_traced_negative_counts_are_zero():
    f = dynjax.qjit(lambda x, r: jnp.repeat(x, r), abstracted_axes=({0: "n"}, {0: "n"}))
    x, r = np.arange(4.0), np.array([2, -1, 0, 3])
    assert_same(f(x, r), np.repeat(x, np.maximum(r, 0)))


def test_repeat_method():
    f = dynjax.qjit(lambda x: x.repeat(2, axis=0), abstracted_axes={0: "n"})
    assert_same(f(arr(3, 2)), arr(3, 2).repeat(2, axis=0))


def test_repeat_errors():
    x = np.arange(3)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        jnp.repeat(x, -1)
    with pytest.raises(ValueError, match="repeats may not contain negative values"):
        jnp.repeat(x, [1, -1, 2])
    with pytest.raises(ValueError, match=r"operands could not be broadcast together with shape \(3,\) \(2,\)"):
        jnp.repeat(x, [1, 2])
    with pytest.raises(TypeError, match="Cannot cast array data from dtype\\('float64'\\)"):
        jnp.repeat(x, np.array([1.0, 2.0, 1.0]))
    with pytest.raises(TypeError, match="uint64"):
        jnp.repeat(x, np.array([1, 2, 1], np.uint64))
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds for array of dimension 2"):
        jnp.repeat(np.ones((2, 3)), 2, axis=3)
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        jnp.repeat(np.ones((2, 3)), 2, axis=3)
    with pytest.raises(TypeError, match="not known to be equal"):
        dynjax.qjit(lambda x, r: jnp.repeat(x, r), abstracted_axes=({0: "n"}, {0: "k"}))(x, x)


# ----------------------------------------------------------------------------------------------
# append
# ----------------------------------------------------------------------------------------------
def test_append():
    check(lambda x: jnp.append(x, 5.0), lambda x: np.append(x, 5.0), [(arr(n, 3),) for n in SIZES])
    check(lambda x: jnp.append(x, x[:1], axis=0), lambda x: np.append(x, x[:1], axis=0),
          [(arr(n, 3),) for n in SIZES])
    check(lambda x: jnp.append(x, x, axis=-1), lambda x: np.append(x, x, axis=-1), [(arr(n, 3),) for n in SIZES])
    check(lambda x: jnp.append(x, np.arange(3)), lambda x: np.append(x, np.arange(3)),
          [(arr(n, dtype=np.int32),) for n in SIZES])
    check(lambda x, y: jnp.append(x, y), lambda x, y: np.append(x, y), [(arr(n), arr(n + 1)) for n in SIZES],
          axes=({0: "n"}, {0: "m"}))
    assert_same(jnp.append(5, 6), np.append(5, 6))
    assert_same(jnp.append(np.arange(3), 1.5), np.append(np.arange(3), 1.5))


def test_append_errors():
    with pytest.raises(ValueError, match="all the input arrays must have same number of dimensions"):
        jnp.append(np.ones((2, 2)), [1, 2], axis=0)
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 2"):
        jnp.append(np.ones((2, 2)), np.ones((1, 3)), axis=0)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        jnp.append(np.ones((2, 2)), np.ones((2, 2)), axis=2)


# ----------------------------------------------------------------------------------------------
# insert
# ----------------------------------------------------------------------------------------------
INSERT_1D = [
    (0, 9), (1, [7, 8]), (-1, 9), ([1], [7, 8]), ([0, 0, -1], [7, 8, 9]), ([2, 0], 5),
    (slice(None, None, 2), 100), (slice(1, 2), [7, 8]), ([], 3), (np.array([True, False]), 6),
    (np.int64(1), 2.7), (np.array(0), [4, 5]), (np.array([False, True]), [6]),
]


@pytest.mark.parametrize("obj,values", INSERT_1D, ids=[repr(o) for o, _ in INSERT_1D])
def test_insert_1d(obj, values):
    sizes = [n for n in (1, 2, 5) if np.all(np.abs(np.asarray(obj)) <= n)] if not isinstance(obj, slice) else [2, 5]
    for dt in (np.int64, np.float32):
        check(lambda x: jnp.insert(x, obj, values), lambda x: np.insert(x, obj, values),
              [(arr(n, dtype=dt),) for n in sizes], axes=None, traces=len(sizes))


@pytest.mark.parametrize("obj", [0, 1, -1, [1], [0, 2, 2], slice(0, None, 2)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_insert_2d_axes(obj, axis):
    def values(x):
        if axis is None:
            return 99.0
        return np.arange(1.0, 1 + x.shape[1 - axis % 2]) if np.ndim(obj) == 0 and not isinstance(obj, slice) else -5.0
    check(lambda x: jnp.insert(x, obj, values(x), axis=axis), lambda x: np.insert(x, obj, values(x), axis=axis),
          [(arr(n, 3),) for n in (2, 3)], axes=None, traces=2)


def test_insert_on_a_dynamic_axis():
    # static indices, one trace for every length
    for obj in (0, -1, [0, -1, 1], [1], slice(None, None, 2), slice(1, None)):
        check(lambda x: jnp.insert(x, obj, -7.0, axis=0), lambda x: np.insert(x, obj, -7.0, axis=0),
              [(arr(n, 3),) for n in (1, 2, 5)])
    check(lambda x: jnp.insert(x, 2, np.array([[1.0, 2.0, 3.0]]), axis=0),
          lambda x: np.insert(x, 2, np.array([[1.0, 2.0, 3.0]]), axis=0), [(arr(n, 3),) for n in (2, 5)])
    check(lambda x: jnp.insert(x, 1, [10, 20, 30], axis=1), lambda x: np.insert(x, 1, [10, 20, 30], axis=1),
          [(arr(3, n),) for n in (1, 4)], axes={1: "m"})


def test_insert_traced_indices():
    # index arrays with a static length (values broadcast), a dynamic length, a traced scalar
    f = dynjax.qjit(lambda x, i: jnp.insert(x, i, -1.0), abstracted_axes=({0: "n"}, None))
    g = dynjax.qjit(lambda x, i: jnp.insert(x, i, jnp.arange(i.shape[0]) * 10),
                    abstracted_axes=({0: "n"}, {0: "k"}))
    h = dynjax.qjit(lambda x, i: jnp.insert(x, i, [7, 8]), abstracted_axes=({0: "n"}, None))
    for n in (0, 1, 4):
        x = arr(n, dtype=np.int64)
        for idx in ([0, n, -n], [n, 0, 0]):
            idx = np.array(idx)
            assert_same(f(x, idx), np.insert(x, idx, -1.0))
            assert_same(jnp.insert(x, idx, -1.0), np.insert(x, idx, -1.0))
            assert_same(g(x, idx), np.insert(x, idx, np.arange(3) * 10))
        for i in range(-n, n + 1):
            assert_same(h(x, i), np.insert(x, i, [7, 8]))
            assert_same(h(x, np.array([i])), np.insert(x, [i], [7, 8]))
    assert f.cache_info()["traces"] == 1
    assert g.cache_info()["traces"] == 1
    # a traced boolean obj: before each True position (their number is known at run time)
    check(lambda x: jnp.insert(x, x > 0, -1.0), lambda x: np.insert(x, x > 0, -1.0),
          [(arr(n),) for n in (0, 1, 4, 9)])


@settings(max_examples=examples(40))
@given(n=st.integers(0, 6), data=st.data())
def test_insert_random_indices(n, data):
    k = data.draw(st.integers(0, 5))
    idx = np.array(data.draw(st.lists(st.integers(-n, n), min_size=k, max_size=k)), np.int64)
    x = arr(n, 2)
    vals = np.arange(100.0, 100.0 + 2 * k).reshape(k, 2) if k != 1 else np.array([[100.0, 101.0]])
    want = np.insert(x, idx, vals, axis=0)
    assert_same(jnp.insert(x, idx, vals, axis=0), want)
    assert_same(_INSERT_ROWS(x, idx, vals), want)
    flat = np.insert(x[:, 0], idx, -3)
    assert_same(jnp.insert(x[:, 0], idx, -3), flat)
    assert_same(_INSERT_FLAT(x[:, 0].copy(), idx), flat)


_INSERT_ROWS = dynjax.qjit(lambda x, i, v: jnp.insert(x, i, v, axis=0),
                           abstracted_axes=({0: "n"}, {0: "k"}, {0: "k"}))
_INSERT_FLAT = dynjax.qjit(lambda x, i: jnp.insert(x, i, -3), abstracted_axes=({0: "n"}, {0: "k"}))


def test_insert_errors():
    x = np.arange(3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        jnp.insert(x, 5, 9)
    with pytest.raises(IndexError, match=r"index \[-4\] is out of bounds for axis 0 with size 3"):
        jnp.insert(x, [-4], 9)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        jnp.insert(x, [1, 5], 9)
    with pytest.raises(ValueError, match="must be one dimensional or scalar"):
        jnp.insert(x, [[1, 2]], 9)
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        jnp.insert(x, [1.0, 2.0], 9)
    with pytest.raises(TypeError, match="slice indices must be integers"):
        jnp.insert(x, 1.0, 9)
    with pytest.raises(ValueError, match="could not broadcast input array from shape"):
        jnp.insert(x, [1, 1], [7, 8, 9])
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        jnp.insert(np.ones((2, 3)), 1, 9, axis=2)


# ----------------------------------------------------------------------------------------------
# delete
# ----------------------------------------------------------------------------------------------
DELETE_1D = [0, -1, [0], [0, 0, -1], [[0, 1]], [], slice(1, None, 2), slice(None, None, -2),
             slice(5, 0, -2), slice(1, 3), np.array(1), np.array([1], np.int8)]


@pytest.mark.parametrize("obj", DELETE_1D, ids=[repr(o) for o in DELETE_1D])
def test_delete_1d(obj):
    check(lambda x: jnp.delete(x, obj), lambda x: np.delete(x, obj), [(arr(n),) for n in (2, 5)],
          axes=None, traces=2)
    if not (isinstance(obj, slice) or np.size(obj) == 0):
        return
    check(lambda x: jnp.delete(x, obj), lambda x: np.delete(x, obj), [(arr(n),) for n in SIZES])


@pytest.mark.parametrize("obj", [0, -1, [0, -1, 0], slice(None, None, 2), slice(1, None)])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_delete_on_a_dynamic_axis(obj, axis):
    sizes = (1, 2, 5) if isinstance(obj, slice) else (2, 5)
    check(lambda x: jnp.delete(x, obj, axis=axis), lambda x: np.delete(x, obj, axis=axis),
          [(arr(3, n),) for n in sizes], axes={1: "m"})


def test_delete_masks():
    mask = np.array([True, False, True, False])
    check(lambda x: jnp.delete(x, mask, axis=0), lambda x: np.delete(x, mask, axis=0), [(arr(4, 2),)], axes=None)
    f = dynjax.qjit(lambda x: jnp.delete(x, x > 0, axis=0), abstracted_axes={0: "n"})
    for n in SIZES:
        x = arr(n)
        assert_same(f(x), np.delete(x, x > 0))
        assert_same(jnp.delete(x, x > 0), np.delete(x, x > 0))
    assert f.cache_info()["traces"] == 1


def test_delete_traced_indices():
    f = dynjax.qjit(lambda x, i: jnp.delete(x, i, axis=0), abstracted_axes=({0: "n"}, {0: "k"}))
    s = dynjax.qjit(lambda x, i: jnp.delete(x, i), abstracted_axes=({0: "n"}, None))
    for n in (1, 2, 5):
        x = arr(n, 2)
        for idx in ([0], [n - 1, 0, -1, -n], [], [0, 0, 0]):
            idx = np.array(idx, np.int64)
            assert_same(f(x, idx), np.delete(x, idx, axis=0))
        for i in range(-n, n):
            assert_same(s(x[:, 0].copy(), i), np.delete(x[:, 0], i))
    assert f.cache_info()["traces"] == 1
    assert s.cache_info()["traces"] == 1


@settings(max_examples=examples(40))
@given(n=st.integers(1, 7), data=st.data())
def test_delete_random_indices(n, data):
    k = data.draw(st.integers(0, 6))
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)), np.int64)
    x = arr(n, 3)
    for axis in (0, None):
        want = np.delete(x, idx, axis=axis)
        assert_same(jnp.delete(x, idx, axis=axis), want)
    assert_same(_DELETE_ROWS(x, idx), np.delete(x, idx, axis=0))
    assert_same(_DELETE_STATIC(x, idx), np.delete(x, idx, axis=0))


_DELETE_ROWS = dynjax.qjit(lambda x, i: jnp.delete(x, i, axis=0), abstracted_axes=({0: "n"}, {0: "k"}))
_DELETE_STATIC = dynjax.qjit(lambda x, i: jnp.delete(x, i, axis=0))


def test_delete_data_dependent_size_used_further():
    def fn(x, i):
        y = jnp.delete(x, i)
        return jnp.sum(y), y + jnp.ones(y.shape[0])

    def ref(x, i):
        y = np.delete(x, i)
        return np.sum(y), y + np.ones(y.shape[0])

    check(fn, ref, [(arr(n), np.array([0, 0, n - 1])) for n in (1, 3, 6)], axes=({0: "n"}, None))


def test_delete_errors():
    x = np.arange(3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        jnp.delete(x, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        jnp.delete(x, [0, 3])
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        jnp.delete(x, [-4])
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        jnp.delete(x, [1.0])
    with pytest.raises(ValueError, match="boolean array argument obj to delete must be one dimensional"):
        jnp.delete(x, [True, False])
    with pytest.raises(ValueError, match="boolean array argument obj to delete"):
        jnp.delete(x, True)
    with pytest.raises(ValueError, match="axis 5 is out of bounds"):
        jnp.delete(np.ones((2, 3)), 1, axis=5)
    with pytest.raises(IndexError, match="out of bounds"):   # static index on a static axis, traced array
        dynjax.qjit(lambda x: jnp.delete(x, 7))(x)


# ----------------------------------------------------------------------------------------------
# split, array_split, hsplit, vsplit, dsplit
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sections", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("axis", [0, -2])
def test_array_split_sections_on_a_dynamic_axis(sections, axis):
    check(lambda x: jnp.array_split(x, sections, axis=axis), lambda x: np.array_split(x, sections, axis=axis),
          [(arr(n, 2),) for n in (0, 1, 5, 6, 9)])


@pytest.mark.parametrize("sections", [1, 2, 3])
def test_split_sections_on_a_dynamic_axis(sections):
    sizes = [n for n in (0, 1, 2, 3, 6, 12) if n % sections == 0]
    check(lambda x: jnp.split(x, sections), lambda x: np.split(x, sections), [(arr(n, 2),) for n in sizes])
    f = dynjax.qjit(lambda x: jnp.split(x, 2, axis=1), abstracted_axes={1: "m"})
    for m in (0, 2, 6):
        for g, w in zip(f(arr(3, m)), np.split(arr(3, m), 2, axis=1)):
            assert_same(g, w)
    assert f.cache_info()["traces"] == 1


def test_split_unequal_division():
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        jnp.split(np.arange(7), 2)
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        dynjax.qjit(lambda x: jnp.split(x, 2))(np.arange(7))
    # a dynamic length is checked at run time, before the program runs
    f = dynjax.qjit(lambda x: jnp.split(x, 2), abstracted_axes={0: "n"})
    assert_same(f(np.arange(6))[1], np.arange(3, 6))
    with pytest.raises(ValueError, match="cannot reshape"):
        f(np.arange(7))


@pytest.mark.parametrize("points", [[2], [2, 1, 9, -1], [], [0, 0], [-2, 3], np.array([1, 2])])
@pytest.mark.parametrize("fn", ["split", "array_split"])
def test_split_points(points, fn):
    check(lambda x: getattr(jnp, fn)(x, points, axis=0), lambda x: getattr(np, fn)(x, points, axis=0),
          [(arr(n, 3),) for n in (0, 1, 3, 10)])
    check(lambda x: getattr(jnp, fn)(x, points, axis=-1), lambda x: getattr(np, fn)(x, points, axis=-1),
          [(arr(2, n),) for n in (0, 1, 3, 10)], axes={1: "m"})


def test_split_traced_points():
    f = dynjax.qjit(lambda x, p: jnp.split(x, p), abstracted_axes=({0: "n"}, None))
    for n in (0, 3, 8):
        for p in ([1, 4], [5, 2], [-1, 9]):
            got = f(np.arange(float(n)), np.array(p))
            for g, w in zip(got, np.split(np.arange(float(n)), p)):
                assert_same(g, w)
    assert f.cache_info()["traces"] == 1


@settings(max_examples=examples(40))
@given(n=st.integers(0, 12), sections=st.integers(1, 6), data=st.data())
def test_array_split_random(n, sections, data):
    x = arr(n, 2)
    for g, w in zip(_ARRAY_SPLIT[sections](x), np.array_split(x, sections)):
        assert_same(g, w)
    points = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=4))
    want = np.array_split(x, points)
    eager = jnp.array_split(x, points)
    assert len(eager) == len(want)
    for e, w in zip(eager, want):
        assert_same(e, w)
    if n % sections == 0:
        for g, w in zip(_SPLIT[sections](x), np.split(x, sections)):
            assert_same(g, w)


_ARRAY_SPLIT = {s: dynjax.qjit(lambda x, s=s: jnp.array_split(x, s), abstracted_axes={0: "n"}) for s in range(1, 7)}
_SPLIT = {s: dynjax.qjit(lambda x, s=s: jnp.split(x, s), abstracted_axes={0: "n"}) for s in range(1, 7)}


def test_hsplit_vsplit_dsplit():
    check(lambda x: jnp.hsplit(x, 2), lambda x: np.hsplit(x, 2), [(arr(n, 4),) for n in SIZES])
    check(lambda x: jnp.hsplit(x, [1]), lambda x: np.hsplit(x, [1]), [(arr(n),) for n in SIZES])
    check(lambda x: jnp.vsplit(x, [1, 3]), lambda x: np.vsplit(x, [1, 3]), [(arr(n, 4),) for n in SIZES])
    check(lambda x: jnp.dsplit(x, 3), lambda x: np.dsplit(x, 3), [(arr(n, 2, 6),) for n in SIZES])
    check(lambda x: jnp.vsplit(x, 2), lambda x: np.vsplit(x, 2), [(arr(n, 3),) for n in (0, 2, 8)])


def test_split_errors():
    with pytest.raises(ValueError, match="number sections must be larger than 0"):
        jnp.array_split(np.arange(6), 0)
    with pytest.raises(ValueError, match="number sections must be larger than 0"):
        jnp.split(np.arange(6), -1)
    with pytest.raises(ValueError, match="hsplit only works on arrays of 1 or more dimensions"):
        jnp.hsplit(np.array(3), 1)
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2 or more dimensions"):
        jnp.vsplit(np.arange(3), 1)
    with pytest.raises(ValueError, match="dsplit only works on arrays of 3 or more dimensions"):
        jnp.dsplit(np.arange(3), 1)
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        jnp.split(np.arange(3), 3, axis=2)
    with pytest.raises(TypeError, match="number of sections must be static"):
        dynjax.qjit(lambda x, s: jnp.split(x, s))(np.arange(4), 2)


# ----------------------------------------------------------------------------------------------
# meshgrid, indices
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_meshgrid(indexing, sparse, count):
    def fn(x, y):
        return jnp.meshgrid(*[x, y, x[:2]][:count], indexing=indexing, sparse=sparse)

    def ref(x, y):
        return np.meshgrid(*[x, y, x[:2]][:count], indexing=indexing, sparse=sparse)

    check(fn, ref, [(arr(n), arr(m, dtype=np.int32)) for n, m in [(0, 1), (1, 3), (4, 0), (5, 2)]],
          axes=({0: "n"}, {0: "m"}))
    assert isinstance(jnp.meshgrid(np.arange(2), np.arange(3)), tuple)


def test_meshgrid_flattens_and_errors():
    check(lambda x: jnp.meshgrid(x, np.arange(3)), lambda x: np.meshgrid(x, np.arange(3)),
          [(arr(n, 2),) for n in SIZES])
    with pytest.raises(ValueError, match="Valid values for `indexing` are 'xy' and 'ij'"):
        jnp.meshgrid(np.arange(2), indexing="foo")


@pytest.mark.parametrize("dtype", [int, np.int32, np.float32, np.complex64])
@pytest.mark.parametrize("sparse", [False, True])
def test_indices(dtype, sparse):
    check(lambda x: jnp.indices((x.shape[0], 3), dtype=dtype, sparse=sparse),
          lambda x: np.indices((x.shape[0], 3), dtype=dtype, sparse=sparse), [(arr(n),) for n in SIZES])
    check(lambda x: jnp.indices((2, x.shape[0], x.shape[0] + 1), dtype=dtype, sparse=sparse),
          lambda x: np.indices((2, x.shape[0], x.shape[0] + 1), dtype=dtype, sparse=sparse),
          [(arr(n),) for n in SIZES])
    assert_same(jnp.indices((), dtype=dtype), np.indices((), dtype=dtype))
    assert_same(jnp.indices((3,), dtype=dtype, sparse=sparse)[0], np.indices((3,), dtype=dtype, sparse=sparse)[0])


def test_indices_from_an_int_argument():
    f = dynjax.qjit(lambda k: jnp.indices((k, 2)))
    for k in (0, 1, 4):
        assert_same(f(k), np.indices((k, 2)))
    assert f.cache_info()["traces"] == 1
