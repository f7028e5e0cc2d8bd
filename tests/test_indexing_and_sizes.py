"""Regression tests of issue 20, items 4, 5, 7 and 16.

* 4: ``vmap`` of numpy indexing of a numpy array by a batched index (``vmap(lambda i:
  xx[i])``), which numpy cannot hand to a tracer: eager vmap goes member by member;
  under qjit a clear error says what to write.
* 5: ``A[:, j]`` in a ``for_loop`` that runs zero times, ``A`` with an empty axis (static or
  abstracted), on the exact and padded tiers.
* 7: sizes of 2**31 or more stay int64 through specialization; arrays too large to allocate
  are a ``MemoryError`` naming the line before XLA is asked; a uint64 size that does not fit
  int64 is reported as too large.
* 16: a closed cost formula converts to a number; the cost reads like a dict.
"""
import operator
import re

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, grad, qjit, vmap
from dynjax.core.trace import ConcretizationError

X1 = np.arange(10.)
X2 = np.arange(12.).reshape(3, 4)
I = np.array([1, -1, 2])
J = np.array([0, -2, 2])


# --- item 4: vmap of an index into a captured array ---------------------------------------------
def _members(fn, *cols):
    return np.stack([np.asarray(fn(*args)) for args in zip(*cols)])


@pytest.mark.parametrize("name, x, fn", [
    ("x[i]", X1, lambda x, i, j: x[i]),
    ("x[i, :]", X2, lambda x, i, j: x[i, :]),
    ("x[:, i]", X2, lambda x, i, j: x[:, i]),
    ("x[i, j]", X2, lambda x, i, j: x[i, j]),
    ("x[i, 3]", X2, lambda x, i, j: x[i, 3]),
    ("x[1, j]", X2, lambda x, i, j: x[1, j]),
    ("x[[i, j]]", X1, lambda x, i, j: x[[i, j]]),
])
def test_vmap_of_numpy_indexing_of_a_numpy_array(name, x, fn):
    want = _members(lambda i, j: fn(x, i, j), I, J)
    got = vmap(lambda i, j: fn(x, i, j))(I, J)           # eager: numpy's indexing, per member
    np.testing.assert_array_equal(got, want)
    # the same with x a traced value (a gather), eagerly batched and under qjit
    np.testing.assert_array_equal(vmap(lambda x, i, j: fn(x, i, j), in_axes=(None, 0, 0))(x, I, J), want)
    f = qjit(lambda x, i, j: vmap(lambda i, j: fn(x, i, j))(i, j))
    np.testing.assert_array_equal(f(x, I, J), want)
    # x batched itself
    xb = np.stack([x, x + 100, x - 7])
    np.testing.assert_array_equal(qjit(vmap(fn))(xb, I, J), _members(fn, xb, I, J))


def test_the_issue_repro_and_friends():
    xx = np.arange(10.)
    np.testing.assert_array_equal(vmap(lambda i: xx[i])(np.array([1, 3])), [1., 3.])
    lst = [10, 20, 30]
    np.testing.assert_array_equal(vmap(lambda i: lst[i])(np.array([2, 0, -1])), [30, 10, 30])
    idx = np.array([[1, 2], [-1, 0], [3, 3]])
    np.testing.assert_array_equal(vmap(vmap(lambda i: xx[i]))(idx), xx[idx])    # nested
    np.testing.assert_array_equal(vmap(lambda i: xx[i])(idx), xx[idx])          # array members
    empty = vmap(lambda i: xx[i, None] * 2)(np.zeros(0, int))
    assert empty.shape == (0, 1) and empty.dtype == np.float64
    shared = vmap(lambda i: (xx[i], xx), out_axes=(0, None))(I)
    assert shared[1] is xx
    with pytest.raises(IndexError):   # numpy's semantics, member by member
        vmap(lambda i: xx[i])(np.array([1, 12]))
    # constants as the batch inside qjit also go member by member
    np.testing.assert_array_equal(qjit(lambda: vmap(lambda i: xx[i])(I))(), xx[I])


def test_vmap_of_updates_of_a_numpy_array():
    for upd, ref in [(lambda x, i: jnp.at(x)[i].set(7.), lambda x, i: _np_set(x, i, 7.)),
                     (lambda x, i: jnp.at(x)[i].add(7.), lambda x, i: _np_add(x, i, 7.)),
                     (lambda x, i: jnp.at(x)[:, i].set(7.), lambda x, i: _np_set(x, (slice(None), i), 7.))]:
        x = X2
        want = _members(lambda i: ref(x, i), I)
        np.testing.assert_array_equal(vmap(lambda i: upd(x, i))(I), want)
        np.testing.assert_array_equal(qjit(lambda x, idx: vmap(lambda i: upd(x, i))(idx))(x, I), want)


def _np_set(x, i, v):
    x = x.copy()
    x[i] = v
    return x


def _np_add(x, i, v):
    x = x.copy()
    x[i] += v
    return x


def test_grad_through_vmap_of_numpy_indexing():
    w = np.array([1., 2., 3.])
    g = grad(lambda w: jnp.sum(vmap(lambda w, i: w * X1[i] ** 2)(w, I)))(w)
    np.testing.assert_allclose(g, X1[I] ** 2)
    g = qjit(grad(lambda x: jnp.sum(vmap(lambda i: x[i] ** 2)(I))))(X1)
    want = np.zeros(10)
    np.add.at(want, I, 2 * X1[I])
    np.testing.assert_allclose(g, want)


def test_traced_index_into_a_numpy_array_under_qjit_says_what_to_write():
    with pytest.raises(ConcretizationError, match=r"jnp\.getitem\(x, i\)"):
        qjit(lambda idx: vmap(lambda i: X1[i])(idx))(I)


# --- item 5: A[:, j] in a loop that runs zero times ------------------------------------------------
def _columns(A, k):
    return for_loop(0, k, 1)(lambda j, acc: acc + A[:, j])(jnp.zeros(A.shape[0]))


def _rows(A, k):
    return for_loop(0, k, 1)(lambda j, acc: acc + A[j, :].sum() + A[j, j])(0.)


@pytest.mark.parametrize("tier", ["exact", "padded"])
@pytest.mark.parametrize("axes", [None, {0: "n", 1: "m"}, {1: "m"}, {0: "n"}])
def test_column_in_a_loop_that_never_runs(monkeypatch, tier, axes):
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    cols = qjit(_columns, abstracted_axes=(axes, None) if axes else None)
    rows = qjit(_rows, abstracted_axes=(axes, None) if axes else None)
    for shape in [(3, 0), (0, 4), (0, 0), (3, 4)]:
        A = np.arange(np.prod(shape), dtype=float).reshape(shape)
        np.testing.assert_array_equal(cols(A, 0), np.zeros(shape[0]))
        assert rows(A, 0) == 0.
        if min(shape) >= 2:
            np.testing.assert_array_equal(cols(A, 2), A[:, 0] + A[:, 1])
            assert rows(A, 2) == A[:2].sum() + A[0, 0] + A[1, 1]


def test_column_update_and_vmap_in_a_loop_that_never_runs():
    upd = qjit(lambda A, k: for_loop(0, k, 1)(lambda j, B: B.at[:, j].set(1.))(A),
               abstracted_axes=({0: "n", 1: "m"}, None))
    for shape in [(3, 0), (0, 4)]:
        np.testing.assert_array_equal(upd(np.zeros(shape), 0), np.zeros(shape))
    np.testing.assert_array_equal(upd(np.zeros((2, 3)), 2), [[1, 1, 0], [1, 1, 0]])
    vm = qjit(lambda A, k: vmap(lambda a: _columns(a, k))(A), abstracted_axes=({1: "n", 2: "m"}, None))
    np.testing.assert_array_equal(vm(np.zeros((2, 3, 0)), 0), np.zeros((2, 3)))
    sized = qjit(lambda n, m, k: _columns(jnp.ones((n, m)), k))
    np.testing.assert_array_equal(sized(3, 0, 0), np.zeros(3))


# --- item 7: int64 sizes and sizes too large to allocate -------------------------------------------
N = 2**31 + 16


def _specialized(f, n):
    from dynjax.lowering import module_text
    from mlir_passes.specialize import specialize
    return specialize(module_text(dynjax.make_jaxpr(f)(5)), [None], {0: n})


@pytest.mark.parametrize("f", [
    lambda n: jnp.cumsum(jnp.zeros([n], bool))[::2**30],   # reads its axis size from the array
    lambda n: jnp.arange(n)[::2**30],
    lambda n: jnp.zeros([n, 1], bool).reshape(-1)[::2**30],
])
def test_sizes_of_2_to_the_31_stay_int64_through_specialization(f):
    text = _specialized(f, N)
    assert f"tensor<{N}x" in text
    assert "-2147483632" not in text
    assert not re.search(r"tensor<-", text)


@pytest.mark.parametrize("tier", ["exact", "padded", "auto"])
def test_an_array_too_large_to_allocate_is_a_memory_error(monkeypatch, tier):
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    f = qjit(lambda n: jnp.ones([n], dtype=jnp.int8))
    with pytest.raises(MemoryError, match=r"1000000000000 bytes.*|test_indexing_and_sizes\.py"):
        f(10**12)
    with pytest.raises(MemoryError, match=r"test_indexing_and_sizes\.py:\d+"):
        f(2**63 - 1)


def test_the_memory_limit_is_configurable(monkeypatch):
    monkeypatch.setenv("DYNJAX_MAX_ARRAY_BYTES", str(1 << 20))
    f = qjit(lambda n: jnp.zeros([n]))
    assert f(1000).shape == (1000,)
    with pytest.raises(MemoryError, match=r"shape \(200000,\) and dtype float64.*1600000 bytes.*"
                                          r"1048576 bytes \(0.0 GiB\) available \(DYNJAX_MAX_ARRAY_BYTES\)"):
        f(200000)


def test_a_size_beyond_int64_is_too_large_not_negative():
    f = qjit(lambda n: jnp.ones([n], dtype=jnp.int8))
    with pytest.raises(ValueError, match="too large") as e:
        f(np.uint64(2**64 - 1))
    assert "negative" not in str(e.value)
    with pytest.raises(ValueError, match="too large"):
        f(2**64 - 1)


@pytest.mark.parametrize("kind", ["host tier", "compiled", "resizing loop"])
def test_an_int_beyond_int64_after_a_call_names_the_argument(kind):
    """After a first call, later calls take the dispatch table's direct plan; an integer
    argument that does not fit int64 there gets the first call's error naming it (an
    OverflowError as jax.jit raises, and a ValueError), not numpy's bare OverflowError."""
    if kind == "host tier":
        f = qjit(lambda n: jnp.ones(3) * n)
    elif kind == "compiled":
        f = qjit(lambda x, n: x * n, abstracted_axes=({0: "m"}, None))
    else:
        f = qjit(lambda x, n: for_loop(0, n, 1, allow_array_resizing=True)(
            lambda i, a: jnp.concatenate([a, a[:1] + i]))(x))
    x = np.arange(5000.0)
    args = (3,) if kind == "host tier" else (x, 3)
    expect = {"host tier": np.ones(3) * 3, "compiled": x * 3,
              "resizing loop": np.concatenate([x, x[0] + np.arange(3.0)])}[kind]
    for _ in range(3):
        np.testing.assert_array_equal(f(*args), expect)
    for big in (2**63, 2**70, -2**63 - 1):
        with pytest.raises(OverflowError, match=r"argument (0|1) is -?\d+, (too large for|below the smallest) int64"):
            f(*args[:-1], big)
        with pytest.raises(ValueError):
            f(*args[:-1], big)
    np.testing.assert_array_equal(f(*args), expect)


# --- item 16: a closed cost converts to a number ------------------------------------------------------
def test_a_closed_cost_converts_to_a_number():
    c = dynjax.cost_analysis(lambda a, b: a @ b, np.ones((3, 5)), np.ones((5, 7)))
    assert float(c.flops) == 210.0 and int(c.flops) == 210 and operator.index(c.flops) == 210
    assert c["flops"] == 210 and c["bytes_read"] == 8 * (15 + 35)
    assert dict(c.items()) == {"flops": 210, "transcendentals": 0, "bytes_read": 400, "bytes_written": 168}
    assert "flops" in c and list(c) == list(c.keys())
    loop = dynjax.cost_analysis(lambda x: for_loop(0, 5, 1)(lambda i, x: x * 2.)(x), np.ones(3))
    assert loop["flops"] == 15


def test_a_cost_with_free_dims_names_them():
    c = dynjax.cost_analysis(lambda a, b: a @ b, np.ones((3, 5)), np.ones((5, 7)),
                             abstracted_axes=({0: "n"}, {1: "m"}))
    with pytest.raises(TypeError, match=r"free dims m, n"):
        float(c.flops)
    with pytest.raises(TypeError, match=r"free dims"):
        int(c.bytes_read)
    assert str(c["flops"]) == str(c.flops)          # the formula, evaluated by at()
    assert c.at(n=3, m=7)["flops"] == 210
