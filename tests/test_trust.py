"""Regression tests for results users must be able to trust (issue: "Trust first").

Each test failed before its fix: stale results for numpy integer sizes, results aliasing
arguments, pytree arguments refused, int32 sizes breaking dim identity, make_jaxpr not
checking shared axis names, and the call-time conveniences (keyword-only parameters,
registered pytree classes, introspection before the first call, non-native byte order).
"""
import os
import traceback

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, make_jaxpr, qjit, while_loop


# --- 1. a numpy integer used as a size is keyed by its value ---------------------------------
@pytest.mark.parametrize("kind", [np.int64, np.int32, np.int16, np.uint8, np.array, int])
def test_numpy_integer_sizes_are_keyed_by_value(kind):
    f = qjit(lambda n: jnp.arange(n) * 2)
    for n in [3, 5, 0, 1, 5, 3]:
        r = f(kind(n))
        np.testing.assert_array_equal(r, np.arange(n) * 2)


def test_zero_d_array_size_is_keyed_by_value():
    g = qjit(lambda n: jnp.ones(n).sum())
    assert [float(g(np.array(k))) for k in [3, 5, 3, 0]] == [3.0, 5.0, 3.0, 0.0]


def test_numpy_integer_slice_start_is_keyed_by_value():
    g = qjit(lambda x, k: x[k:], abstracted_axes={0: "n"})
    x = np.arange(5.0)
    for k in [2, 1, 4, 0, 2]:
        np.testing.assert_array_equal(g(x, np.int64(k)), x[k:])
        np.testing.assert_array_equal(g(x, k), x[k:])


# --- 2. results never alias arguments ----------------------------------------------------------
def _resizing_loop(x, n):
    @for_loop(0, n, 1, allow_array_resizing=True)
    def body(i, a):
        return jnp.concatenate([a, a[:1]])
    return body(x)


def _index_size_loop(x, k):
    @for_loop(0, k, 1)
    def body(i, a):
        return a + jnp.ones(i + 1).sum()
    return body(x)


def _doubling_while(x, limit):
    @while_loop(lambda a: a.shape[0] < limit)
    def body(a):
        return jnp.concatenate([a, a])
    return body(x)


@pytest.mark.parametrize("fun,extra", [(_resizing_loop, 0), (_index_size_loop, 0), (_doubling_while, 0),
                                       (lambda x, n: x, 0), (lambda x, n: (x, x + n), 2)])
def test_results_never_alias_arguments(fun, extra):
    f = qjit(fun, abstracted_axes=({0: "n"}, None))
    x = np.arange(3.0)
    outs = f(x, extra)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for r in outs:
        assert not np.shares_memory(r, x)
    before = [np.array(r) for r in outs]
    x[:] = -7.0   # the caller mutates its argument: earlier results are unchanged
    for r, b in zip(outs, before):
        np.testing.assert_array_equal(r, b)


def test_results_never_alias_program_constants():
    c = np.arange(4.0)
    f = qjit(lambda n: _resizing_loop(jnp.asarray(c), n))
    r = f(0)
    np.testing.assert_array_equal(r, c)
    assert not np.shares_memory(r, c)


# --- 5. lists and tuples of arrays are pytrees on every call path ------------------------------
def test_tuple_of_differently_shaped_arrays():
    f = qjit(lambda p: p[0].sum() + p[1].sum())
    assert float(f((np.ones((2, 3)), np.ones(4)))) == 10.0
    assert float(f([np.ones((2, 3)), np.ones(4)])) == 10.0
    assert float(f((np.ones((1, 3)), np.ones(2)))) == 5.0


def test_list_of_numbers_is_a_pytree_of_scalars():
    f = qjit(lambda p: p[0] * 10 + p[1])
    assert float(f([1.0, 2.0])) == 12.0
    assert float(f((3, 4))) == 34.0
    assert make_jaxpr(lambda p: p[0] * 10 + p[1])([1.0, 2.0]).jaxpr.invars[0].aval.shape == ()


# --- 6. an int32 size keeps one dim ---------------------------------------------------------------
@pytest.mark.parametrize("kind", [np.int32, np.int16, np.uint32])
def test_narrow_integer_size_is_one_dim(kind):
    jx = make_jaxpr(lambda n: jnp.zeros(n) + jnp.zeros(n))(kind(3))
    assert str(jx).count("convert_element_type") <= 1   # one conversion (none if widened on input)
    # the two zeros(n) are one equation (the same pure operation on the same size), then the add
    assert str(jx).count(":f64[") == 2 and str(jx).count(":f64[b]") in (0, 2)
    f = qjit(lambda n: jnp.zeros(n) + jnp.ones(n) * 2)
    for n in [3, 0, 1]:
        np.testing.assert_array_equal(f(kind(n)), np.full(n, 2.0))


def test_narrow_integer_size_used_inside_a_loop_body_is_the_outer_dim():
    def f(n):
        a = jnp.zeros(n)

        @for_loop(0, 3, 1)
        def body(i, acc):
            return acc + jnp.ones(n)
        return body(a)
    for n in [4, 1, 0]:
        np.testing.assert_array_equal(qjit(f)(np.int32(n)), np.full(n, 3.0))


# --- 7. make_jaxpr checks shared axis names; JAX's leaf form of abstracted_axes ----------------
def test_make_jaxpr_checks_axes_sharing_a_name():
    with pytest.raises(TypeError, match=r"abstracted axis 'b' has size 4 in axis 1 of argument 0 "
                                        r"but size 8 in axis 0 of argument 1"):
        make_jaxpr(jnp.matmul, abstracted_axes=({0: "a", 1: "b"}, {0: "b", 1: "c"}))(
            np.ones((8, 4)), np.ones((8, 4)))
    jx = make_jaxpr(jnp.matmul, abstracted_axes=({0: "a", 1: "b"}, {0: "b", 1: "c"}))(
        np.ones((8, 4)), np.ones((4, 2)))
    assert len(jx.jaxpr.invars) == 5


def test_qjit_checks_axes_sharing_a_name_at_call_time():
    f = qjit(lambda x, y: x + y, abstracted_axes={0: "n"})
    np.testing.assert_array_equal(f(np.ones(3), np.ones(3)), np.full(3, 2.0))
    with pytest.raises(ValueError, match="abstracted axis 'n' has size 3 .* but size 4"):
        f(np.ones(3), np.ones(4))


def test_abstracted_axes_leaf_form():
    jx = make_jaxpr(lambda x, y: x + y, abstracted_axes=("n",))(np.ones(4), np.ones(4))
    assert str(jx).startswith("{ lambda ; a:i64[] b:f64[a] c:f64[a]. let")
    f = qjit(lambda x, y: (x * y).sum(), abstracted_axes=("n",))
    for n in [1, 5, 0]:
        assert float(f(np.ones(n), np.full(n, 2.0))) == 2.0 * n
    assert f.cache_info()["traces"] == 1


# --- call-time conveniences -------------------------------------------------------------------------
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


dynjax.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))


def test_registered_pytree_class_as_positional_and_keyword_argument():
    f = qjit(lambda p, scale=1.0: (p.a * scale).sum() + p.b.sum(), abstracted_axes={0: "n"})
    assert float(f(Pair(np.ones(3), np.ones(3)))) == 6.0
    assert float(f(p=Pair(np.ones(3), np.ones(3)), scale=2.0)) == 9.0
    assert float(f(Pair(np.ones(1), np.ones(1)), scale=3.0)) == 4.0
    assert f.cache_info()["traces"] == 2   # with and without the keyword
    g = qjit(lambda p: p.a.sum() * p.b.sum())
    assert float(g(Pair(np.ones(3), np.ones(2)))) == 6.0


def test_keyword_only_parameters():
    def g(x, *, k, shift=0.0):
        return x * k + shift
    f = qjit(g)
    np.testing.assert_array_equal(f(np.ones(2), k=3.0), [3.0, 3.0])
    np.testing.assert_array_equal(f(np.ones(2), k=3.0, shift=1.0), [4.0, 4.0])
    with pytest.raises(TypeError, match="missing a required argument: 'k'"):
        f(np.ones(2))


def test_introspection_before_the_first_call_is_none():
    f = qjit(lambda x: x + 1)
    assert f.jaxpr is None and f.mlir is None and f.mlir_specialized is None and f.hlo is None
    f(np.ones(2))
    assert "add" in str(f.jaxpr) and "stablehlo.add" in f.mlir


def test_non_native_byte_order_is_converted():
    f = qjit(lambda x: x + 1)
    big = np.arange(3, dtype=">f8")
    np.testing.assert_array_equal(f(big), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qjit(lambda x: x * 2)(np.arange(3, dtype=">i4")), [0, 2, 4])
    assert jnp.sum(big) == 3.0


# --- errors at call time end at the user's call --------------------------------------------------
def _last_frame(exc_info):
    return traceback.extract_tb(exc_info.tb)[-1]


# dynjax's own source files: the package directory, not any path with "dynjax" in it (a clone
# made by `git clone` sits in a folder named dynjax, and so does this test file)
_PACKAGE = os.path.dirname(os.path.abspath(dynjax.__file__)) + os.sep


def _in_dynjax(frame) -> bool:
    return os.path.abspath(frame.filename).startswith(_PACKAGE)


def _user_frames(exc_info):
    return [fr for fr in traceback.extract_tb(exc_info.tb) if not _in_dynjax(fr)]


def test_wrong_argument_type_names_the_argument():
    f = qjit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="argument 1: str is not a valid argument type") as e:
        f(np.ones(2), "abc")
    frames = traceback.extract_tb(e.tb)
    assert frames[0].filename == __file__
    assert len([fr for fr in frames if _in_dynjax(fr)]) <= 1   # the entry frame only


def test_wrong_number_of_arguments():
    f = qjit(lambda x: x + 1)
    with pytest.raises(TypeError, match=r"<lambda>\(\): too many positional arguments"):
        f(1, 2)
    with pytest.raises(TypeError, match="missing a required argument"):
        f()


def test_function_returning_a_string_names_the_result():
    with pytest.raises(TypeError, match=r"the returned value is a str \('s'\)"):
        qjit(lambda x: "s")(1)
    with pytest.raises(TypeError, match=r"returned value 1 \(in \(\*, \*\)\) is a dict_keys"):
        qjit(lambda x: (x, {}.keys()))(1)


def test_trace_time_error_ends_at_the_users_line():
    def bad(x):
        return x + jnp.ones(3)   # the offending line
    with pytest.raises(TypeError) as e:
        qjit(bad, abstracted_axes={0: "n"})(np.ones(2))
    last = _last_frame(e)
    assert last.filename == __file__ and "the offending line" in last.line
