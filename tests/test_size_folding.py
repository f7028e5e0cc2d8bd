"""Every size the tracer accepts compiles, or is a clear error naming the user's line.

Sizes computed from baked integers on the host (``execution/program.py::_host_sizes``), for
every scalar primitive the planner treats as foldable; static slices of dynamic axes that
are too short at run time inside code that never runs; reshapes and slices that only turn
out invalid at run time.
"""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import lax, qjit
from dynjax.core.primitive import impl_rules
from dynjax.execution import int_folds
from dynjax.execution.analysis import _FOLDABLE
from dynjax.lax import primitives as P

# a size computed through each foldable primitive, with its numpy value
SIZE_THROUGH = {
    P.add_p: (lambda k: lax.add(k, 2), lambda k: k + 2),
    P.sub_p: (lambda k: lax.sub(k, 1), lambda k: k - 1),
    P.mul_p: (lambda k: lax.mul(k, 3), lambda k: 3 * k),
    P.div_p: (lambda k: lax.div(k, 2), lambda k: k // 2),
    P.rem_p: (lambda k: lax.rem(k, 3), lambda k: k % 3),
    P.max_p: (lambda k: lax.max(k, 4), lambda k: max(k, 4)),
    P.min_p: (lambda k: lax.min(k, 2), lambda k: min(k, 2)),
    P.neg_p: (lambda k: lax.neg(lax.neg(k)), lambda k: k),
    P.abs_p: (lambda k: lax.abs(lax.sub(0, k)), lambda k: k),
    P.sign_p: (lambda k: lax.mul(lax.sign(k), k), lambda k: k),
    P.convert_element_type_p: (lambda k: (k * 0.8).astype(int), lambda k: int(k * 0.8)),
    P.select_n_p: (lambda k: lax.select(lax.gt(k, 3), k, lax.add(k, 1)), lambda k: k if k > 3 else k + 1),
    P.eq_p: (lambda k: lax.select(lax.eq(k, 2), 7, k), lambda k: 7 if k == 2 else k),
    P.ne_p: (lambda k: lax.select(lax.ne(k, 2), k, 7), lambda k: 7 if k == 2 else k),
    P.lt_p: (lambda k: lax.select(lax.lt(k, 2), 1, k), lambda k: 1 if k < 2 else k),
    P.le_p: (lambda k: lax.select(lax.le(k, 2), 1, k), lambda k: 1 if k <= 2 else k),
    P.gt_p: (lambda k: lax.select(lax.gt(k, 2), 1, k), lambda k: 1 if k > 2 else k),
    P.ge_p: (lambda k: lax.select(lax.ge(k, 2), 1, k), lambda k: 1 if k >= 2 else k),
    P.and_p: (lambda k: lax.select(lax.bitwise_and(lax.gt(k, 1), lax.lt(k, 5)), 1, k),
              lambda k: 1 if 1 < k < 5 else k),
    P.or_p: (lambda k: lax.select(lax.bitwise_or(lax.lt(k, 1), lax.gt(k, 5)), 1, k),
             lambda k: 1 if (k < 1 or k > 5) else k),
    P.not_p: (lambda k: lax.select(lax.bitwise_not(lax.gt(k, 2)), 1, k), lambda k: 1 if not k > 2 else k),
    P.floor_p: (lambda k: lax.floor(k * 0.5).astype(int), lambda k: int(np.floor(k * 0.5))),
    P.ceil_p: (lambda k: lax.ceil(k * 0.5).astype(int), lambda k: int(np.ceil(k * 0.5))),
    P.integer_pow_p: (lambda k: lax.integer_pow(k, 2), lambda k: k * k),
}


def test_every_foldable_primitive_has_a_case():
    assert set(SIZE_THROUGH) == set(_FOLDABLE)


@pytest.mark.parametrize("prim", sorted(SIZE_THROUGH, key=lambda p: p.name), ids=lambda p: p.name)
def test_a_size_through_each_foldable_primitive_compiles(prim):
    size, ref = SIZE_THROUGH[prim]
    f = qjit(lambda k: jnp.arange(size(k)) * 2)
    for k in (0, 1, 2, 3, 6):
        n = ref(k)
        np.testing.assert_array_equal(f(k), np.arange(max(n, 0)) * 2)
    assert f.cache_info()["host_steps"] == 0


@pytest.mark.parametrize("k", [0, 1, 2, 5, 7])
def test_negative_bounds_and_abs(k):
    x = np.arange(5.0)
    tail = qjit(lambda x, k: x[-k:], abstracted_axes=({0: "n"}, None))
    head = qjit(lambda x, k: x[:-k], abstracted_axes=({0: "n"}, None))
    np.testing.assert_array_equal(tail(x, k), x[-k:])
    np.testing.assert_array_equal(head(x, k), x[:-k])
    np.testing.assert_array_equal(qjit(lambda k: jnp.ones(abs(k)))(-k), np.ones(k))
    np.testing.assert_array_equal(qjit(lambda n: jnp.ones((n * 0.8).astype(int)))(k), np.ones(int(k * 0.8)))
    assert tail.cache_info()["host_steps"] == 0 and len(tail._last.program.steps) == 1


def _sum_by_index(x):
    @dynjax.for_loop(0, x.shape[0], 1)
    def body(i, s):
        return s + x[i]
    return body(0.0)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_index_inside_a_loop_over_an_empty_axis(n):
    x = np.arange(n, dtype=float) + 1
    assert float(qjit(_sum_by_index, abstracted_axes={0: "n"})(x)) == x.sum()


def test_run_time_invalid_reshape_names_the_line():
    f = qjit(lambda x, n: x.reshape(n, -1), abstracted_axes=({0: "n"}, None))
    np.testing.assert_array_equal(f(np.arange(6.0), 2), np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match=r"cannot reshape an array of shape \(5,\) \(5 elements\) into "
                                         r"shape \(2, 2\) \(4 elements\) \(at .*test_size_folding.py:\d+\)"):
        f(np.ones(5), 2)


def test_run_time_oversized_slice_names_the_line():
    first = qjit(lambda x: x[0] * 2, abstracted_axes={0: "n"})
    assert float(first(np.ones(3))) == 2.0
    with pytest.raises(ValueError, match=r"an index into axis 0 of an array of shape \(0,\).*test_size_folding"):
        first(np.ones(0))
    window = qjit(lambda x: lax.dynamic_slice(x, [0], [3]), abstracted_axes={0: "n"})
    np.testing.assert_array_equal(window(np.arange(4.0)), [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"a slice of 3 elements of axis 0 of an array of shape \(2,\)"):
        window(np.ones(2))


def test_asserted_equal_size_by_reshape():
    f = qjit(lambda x, y: x[1:] + jnp.reshape(y, x[1:].shape), abstracted_axes=({0: "n"}, {0: "m"}))
    np.testing.assert_array_equal(f(np.ones(4), np.arange(3.0)), np.arange(3.0) + 1)
    with pytest.raises(ValueError, match=r"cannot reshape an array of shape \(2,\)"):
        f(np.ones(4), np.arange(2.0))


# --- integer folds in Python ints (execution/int_folds.py) -------------------------------

def _edges(dtype):
    lo, hi = int_folds.dtype_range(dtype)
    near = [0, 1, 2, 3, 7, 10, 255, 256, 2**31 - 1, 2**31, 2**62, 2**63 - 2]
    vals = {v for x in near for v in (x, -x, lo + x, hi - x)}
    return sorted(v for v in vals if lo <= v <= hi)


def _impl(prim, vals, dtype, params):
    with np.errstate(all="ignore"):
        out = np.asarray(impl_rules[prim](*[np.asarray(x, dtype) for x in vals], **params))
    return out


@pytest.mark.parametrize("name", sorted(int_folds.FOLDS))
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.uint64, np.bool_])
def test_each_python_int_fold_gives_the_impl_rules_value_or_defers_to_it(name, dtype):
    """On operands of every integer dtype and bool, at the edges of their ranges: the fold's
    value within the result dtype's range is the impl rule's, or it defers (None)."""
    prim = next(p for p in P.__dict__.values() if getattr(p, "name", None) == name and hasattr(p, "multiple_results"))
    values = _edges(dtype)
    rng = np.random.default_rng(len(name))
    values += [int(x) for x in rng.choice(values, 30)]
    if name in ("neg", "abs", "sign"):
        cases = [([x], {}) for x in values]
    elif name == "convert_element_type":
        cases = [([x], {"new_dtype": np.dtype(d), "weak_type": False})
                 for x in values for d in (np.int64, np.int32, np.uint8, np.uint64, np.bool_)]
    elif name == "select_n":
        cases = [([w, x, y], {}) for w in (0, 1, 2, -1) for x, y in zip(values, values[::-1])]
    elif name == "integer_pow":
        cases = [([x], {"y": y}) for x in values for y in (0, 1, 2, 3, 5, 64)]
    else:
        cases = [([x, y], {}) for x in values for y in values]
    folded = 0
    for vals, params in cases:
        try:
            if name == "select_n":   # (the case index: an int32)
                want = np.asarray(impl_rules[prim](np.asarray(vals[0], np.int32),
                                                   *[np.asarray(x, dtype) for x in vals[1:]]))
            else:
                want = _impl(prim, vals, dtype, params)
        except Exception:
            want = None
        bounds = int_folds.dtype_range(want.dtype) if want is not None else None
        got = int_folds.fold(name, vals, params, bounds) if bounds is not None else None
        if got is None:
            continue   # the impl rule decides (beyond the range, x / 0, a shift too far, ...)
        assert want is not None and want.shape == () and got == int(want) and type(got) is int, \
            (name, dtype, vals, params, got, want)
        folded += 1
    if dtype is np.int64:   # (not all deferred: elsewhere the impl may refuse the dtype, bool - bool)
        assert folded >= min(50, len(cases) // 3), (name, folded, len(cases))


def test_the_folded_sizes_check_as_before_at_many_sizes():
    """A program whose sizes go through every fold: negative and wrapped sizes still name
    the size, valid ones run."""
    f = qjit(lambda x: jnp.zeros(lax.max(lax.rem(lax.div(x.shape[0] * 3 - 7, 2), 50), 0) + 1),
             abstracted_axes=({0: "n"},))
    for n in (0, 1, 2, 3, 5, 40, 101, 1000):
        want = max(int(np.fmod(int((n * 3 - 7) / 2), 50)), 0) + 1
        assert f(np.ones(n)).shape == (want,), n
    g = qjit(lambda x: jnp.zeros(x.shape[0] - 5), abstracted_axes=({0: "n"},))
    with pytest.raises(ValueError, match="negative"):
        g(np.ones(3))
