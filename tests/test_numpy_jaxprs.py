"""Printed jaxprs of common numpy programs hold only the equations the program needs."""
import numpy as np

import dynjax.numpy as jnp
from helpers import jaxpr_text


def lines(text):
    return [line.strip() for line in text.splitlines()]


def test_ones_of_traced_size_plus_one():
    assert lines(jaxpr_text(lambda sz: jnp.ones((sz + 1,)), 3)) == [
        "{ lambda ; a:i64[]. let",
        "b:i64[] = add a 1",
        "c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 b",
        "in (b, c) }",
    ]


def test_arange_of_traced_size():
    # numpy's arange(n) is empty for a negative n: the length is max(n, 0)
    assert lines(jaxpr_text(lambda n: jnp.arange(n), 3)) == [
        "{ lambda ; a:i64[]. let",
        "b:i64[] = max a 0",
        "c:i64[b] = iota[dimension=0 dtype=int64 shape=(None,)] b",
        "in (b, c) }",
    ]


def test_elementwise_and_reduction_on_dynamic_axis():
    text = jaxpr_text(lambda x: jnp.sum(jnp.sin(x) * 2), np.ones(3), abstracted_axes={0: "n"})
    assert lines(text) == [
        "{ lambda ; a:i64[] b:f64[a]. let",
        "c:f64[a] = sin b",
        "d:f64[a] = mul c 2.0",
        "e:f64[] = reduce_sum[axes=(0,)] d",
        "in (e,) }",
    ]


def test_weak_scalars_keep_float32():
    assert lines(jaxpr_text(lambda x: x * 2 + 1.5, np.ones(2, np.float32))) == [
        "{ lambda ; a:f32[2]. let",
        "b:f32[2] = mul a 2.0",
        "c:f32[2] = add b 1.5",
        "in (c,) }",
    ]


def test_no_equations_for_no_ops():
    # reshape to the same shape, transpose of a vector, a full slice, astype to the same dtype
    text = jaxpr_text(lambda x: x.reshape(x.shape[0]).T[:].astype(np.float64), np.ones(3),
                      abstracted_axes={0: "n"})
    assert lines(text) == ["{ lambda ; a:i64[] b:f64[a]. let", "in (b,) }"]


def test_static_slice_of_dynamic_array():
    text = jaxpr_text(lambda x: x[:, 1], np.ones((3, 2)), abstracted_axes={0: "n"})
    assert lines(text) == [
        "{ lambda ; a:i64[] b:f64[a,2]. let",
        "c:f64[a,1] = slice[limit_indices=(None, 2) start_indices=(0, 1) strides=None] b",
        "d:f64[a] = squeeze[dimensions=(1,)] c",
        "in (d,) }",
    ]
