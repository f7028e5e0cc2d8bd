# RUN: %PYTHON %s | filecheck %s
# The seed's loop-expansion examples: shared dims stay shared; a body that breaks the
# sharing is an error; with resizing every dim is its own loop-carried value.
import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop


def same_dims(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a, a_):
        b = jnp.ones([sz + 1], dtype=float)
        return b, b
    return loop(a0, a0)


print(dynjax.make_jaxpr(same_dims)(5))
# CHECK: { lambda ; [[SZ:[a-z]+]]:i64[]. let
# CHECK:         [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[Y:[a-z]+]]:f64[[[N]]] = for_loop[
# CHECK:           body_jaxpr={ lambda ; [[C:[a-z]+]]:i64[] [[I:[a-z]+]]:i64[] [[K:[a-z]+]]:i64[] {{[a-z]+}}:f64[[[K]]] {{[a-z]+}}:f64[[[K]]]. let
# CHECK-NEXT:          [[K1:[a-z]+]]:i64[] = add [[C]] 1
# CHECK-NEXT:          [[B:[a-z]+]]:f64[[[K1]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[K1]]
# CHECK-NEXT:        in ([[K1]], [[B]], [[B]]) }
# CHECK:           nimplicit=1
# CHECK:         ] [[SZ]] 0 10 1 0 [[SZ]] {{[a-z]+}} {{[a-z]+}}


def broken(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a, a_):
        b = jnp.ones([sz + 1], dtype=float)
        return a, b
    return loop(a0, a0)


try:
    dynjax.make_jaxpr(broken)(5)
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: for_loop: the loop body returns arrays whose dimensions were the same at input but are not the same any more at output


def resizing(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, experimental_preserve_dimensions=False)
    def loop(i, a, b, b_):
        return a, b, b_

    b0 = jnp.ones([sz + 1], dtype=float)
    return loop(a0, b0, b0)


print(dynjax.make_jaxpr(resizing)(5))
# CHECK: { lambda ; {{[a-z]+}}:i64[]. let
# CHECK:         for_loop[
# CHECK:           body_jaxpr={ lambda ; {{[a-z]+}}:i64[] [[D1:[a-z]+]]:i64[] [[D2:[a-z]+]]:i64[] [[D3:[a-z]+]]:i64[] {{[a-z]+}}:f64[[[D1]]] {{[a-z]+}}:f64[[[D2]]] {{[a-z]+}}:f64[[[D3]]]. let
# CHECK:           nimplicit=3
# CHECK:           preserve_dimensions=False


def add_inside(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(i, a, b, b_):
        return a, b + b_, b_

    b0 = jnp.ones([sz + 1], dtype=float)
    return loop(a0, b0, b0)


try:
    dynjax.make_jaxpr(add_inside)(5)
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: shapes float64[{{d[0-9]+}}] and float64[{{d[0-9]+}}] cannot be broadcast together
