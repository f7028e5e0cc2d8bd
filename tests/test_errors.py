"""User errors are reported at trace time, in the user's terms, pointing at the user's line."""
import os
import re

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.core.trace import ConcretizationError

HERE = os.path.abspath(__file__)


def trace_error(exc_type, f, *args, **kw):
    """Trace ``f`` expecting ``exc_type``; check the traceback ends in this file. Returns the message."""
    with pytest.raises(exc_type) as info:
        dynjax.make_jaxpr(f, **kw)(*args)
    last = info.traceback[-1]
    assert os.path.abspath(str(last.path)) == HERE, f"last frame is {last.path}:{last.lineno}"
    return str(info.value)


def test_add_two_different_dynamic_dims():
    msg = trace_error(TypeError, lambda a, b: a + b, np.ones(3), np.ones(3),
                      abstracted_axes=(("n",), ("m",)))
    assert "float64[n] and float64[m]" in msg, msg
    assert "the sizes n and m are not known to be equal" in msg, msg


def test_same_named_dynamic_dims_are_compatible():
    closed = dynjax.make_jaxpr(lambda a, b: a + b, abstracted_axes=(("n",), ("n",)))(np.ones(3), np.ones(3))
    dynjax.check_jaxpr(closed)
    a, b = np.arange(4.0), np.ones(4)
    (out,) = dynjax.eval_jaxpr(closed.jaxpr, closed.consts, 4, a, b)
    np.testing.assert_array_equal(out, a + b)


def test_static_broadcast_error_names_shapes():
    msg = trace_error(TypeError, lambda a, b: a * b, np.ones((2, 3)), np.ones(4))
    assert "float64[2,3] and float64[4]" in msg, msg


def test_dynamic_against_static_dim():
    msg = trace_error(TypeError, lambda a, b: a - b, np.ones(3), np.ones(3), abstracted_axes=({0: "n"}, None))
    assert "float64[n] and float64[3]" in msg, msg


@pytest.mark.parametrize("f,shapes", [
    (lambda a, b: jnp.dot(a, b), ((3, 4), (5,))),
    (lambda a, b: jnp.dot(a, b), ((3, 4), (5, 2))),
    (lambda a, b: jnp.matmul(a, b), ((2, 3), (4, 2))),
    (lambda a, b: a @ b, ((3,), (4,))),
])
def test_dot_static_contraction_mismatch(f, shapes):
    msg = trace_error(TypeError, f, np.ones(shapes[0]), np.ones(shapes[1]))
    names = " and ".join(f"float64[{','.join(map(str, s))}]" for s in shapes)
    assert names in msg, msg


def test_dot_dynamic_contraction_mismatch():
    msg = trace_error(TypeError, lambda a, b: jnp.dot(a, b), np.ones((2, 3)), np.ones(3),
                      abstracted_axes=({1: "n"}, {0: "m"}))
    assert "float64[2,n] and float64[m]" in msg, msg
    msg = trace_error(TypeError, lambda a, b: a @ b, np.ones((3, 3)), np.ones((3, 3)),
                      abstracted_axes=(("n", "m"), ("k", "n")))
    assert "float64[n,m] and float64[k,n]" in msg, msg


@pytest.mark.parametrize("shape,f,kw", [
    ((3, 4), lambda x: x.reshape(5), {}),
    ((3, 4), lambda x: x.reshape(5, -1), {}),
    ((3, 4), lambda x: jnp.reshape(x, (2, 2, 2)), {}),
    ((3, 2), lambda x: x.reshape(x.shape[0], 3), {"abstracted_axes": {0: "n"}}),
    ((3, 2), lambda x: x.reshape(3, x.shape[0]), {"abstracted_axes": {0: "n"}}),
], ids=["static", "static-1", "static3d", "dynamic", "dynamic2"])
def test_reshape_incompatible(shape, f, kw):
    msg = trace_error(TypeError, f, np.ones(shape), **kw)
    assert "reshape" in msg and "float64[" in msg and "into shape" in msg, msg


def test_traced_value_in_python_if():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    msg = trace_error(ConcretizationError, f, np.ones(3))
    assert isinstance(ConcretizationError("x"), TypeError)
    assert "bool[]" in msg and "control flow" in msg, msg


def test_traced_value_as_python_int():
    msg = trace_error(ConcretizationError, lambda n: range(n), 3)
    assert "i64[]" in msg, msg
    msg = trace_error(ConcretizationError, lambda x: float(x[0]), np.ones(3))
    assert "f64[]" in msg, msg


def test_traced_value_len_of_dynamic_axis():
    msg = trace_error(ConcretizationError, lambda x: len(x), np.ones(3), abstracted_axes={0: "n"})
    assert "x.shape[0]" in msg


@pytest.mark.parametrize("make", [lambda: jnp.ones(-1), lambda: jnp.zeros((2, -3)), lambda: jnp.full(-2, 1.0),
                                  lambda: jnp.eye(-1), lambda: jnp.empty((-1,))])
def test_negative_static_size(make):
    with pytest.raises(ValueError, match="negative"):
        make()
    with pytest.raises(ValueError, match="negative"):
        dynjax.make_jaxpr(make)()


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble, "U3", object, "datetime64[s]", "V8"])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match="not supported|not understood|cannot"):
        jnp.ones(3, dtype=dtype)
    msg = trace_error(TypeError, lambda x: x.astype(dtype), np.ones(3))
    assert "dtype" in msg or "not supported" in msg, msg
    msg = trace_error(TypeError, lambda n: jnp.zeros(n, dtype), 3)
    assert "not supported" in msg or "not understood" in msg, msg


def test_unsupported_argument_dtype():
    with pytest.raises(TypeError, match="float128 is not supported"):
        dynjax.make_jaxpr(lambda x: x)(np.ones(3, np.longdouble))


def test_boolean_subtract_is_an_error():
    msg = trace_error(TypeError, lambda a, b: a - b, np.ones(3, bool), np.ones(3, bool))
    assert "bool" in msg


@pytest.mark.parametrize("idx,exc", [(5, IndexError), (-6, IndexError), ((0, 0, 0), IndexError),
                                     (np.array([0.5, 1]), IndexError), ((Ellipsis, Ellipsis), IndexError),
                                     (slice(None, None, 0), ValueError), ("a", IndexError)])
def test_bad_static_index(idx, exc):
    trace_error(exc, lambda x: x[idx], np.ones((5, 2)))


def test_traced_slice_step():
    msg = trace_error(IndexError, lambda x, k: x[::k], np.ones(4), 2)
    assert "step" in msg


def test_arange_traced_float_bound():
    msg = trace_error(TypeError, lambda a: jnp.arange(a), 2.5)
    assert "linspace" in msg
    msg = trace_error(TypeError, lambda n: jnp.arange(0, n, 0.5), 2)
    assert "linspace" in msg or "float" in msg


def test_concatenate_mismatch():
    msg = trace_error(TypeError, lambda a, b: jnp.concatenate([a, b], axis=0), np.ones((2, 3)), np.ones((2, 4)))
    assert "float64[2,3] and float64[2,4]" in msg, msg
    msg = trace_error(TypeError, lambda a, b: jnp.concatenate([a, b], axis=1), np.ones((2, 3)), np.ones((2, 4)),
                      abstracted_axes=({0: "n"}, {0: "m"}))
    assert "float64[n,3] and float64[m,4]" in msg, msg


def test_where_needs_both_or_neither_branch():
    msg = trace_error(ValueError, lambda x: jnp.where(x > 0, x), np.ones(3))
    assert "both or neither" in msg


def test_eager_errors_are_numpy_like():
    with pytest.raises(TypeError):
        jnp.add(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        jnp.argmax(np.ones(0))
    for f in (jnp.max, jnp.min):
        with pytest.raises(ValueError, match="zero-size"):
            f(np.ones((2, 0)), axis=1)
        with pytest.raises(ValueError, match="zero-size"):
            dynjax.make_jaxpr(lambda x: f(x))(np.ones(0))


def test_a_tracer_kept_after_its_trace_is_an_escaped_tracer_error():
    """A tracer stored in a Python variable and used after make_jaxpr returned (a size or
    an array) raises EscapedTracerError instead of recording into the finished jaxpr."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax.core.trace import EscapedTracerError
    kept = []

    def keep(x):
        kept.extend([x.shape[0], x * 2])
        return x
    dynjax.make_jaxpr(keep, abstracted_axes={0: "n"})(np.ones(3))
    with pytest.raises(EscapedTracerError, match="i64"):
        jnp.ones(kept[0])
    with pytest.raises(EscapedTracerError, match=r"f64\[n\]"):
        jnp.sum(kept[1])
