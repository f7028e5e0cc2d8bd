# RUN: %PYTHON %s | filecheck %s
# The seed's loop-expansion examples: shared dims stay shared; a body that breaks the
# sharing is an error; with resizing, unchanged sizes stay and diverging ones are split.
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


# With resizing, a size the body returns unchanged stays the outer size (no implicit value):
print(dynjax.make_jaxpr(resizing)(5))
# CHECK: { lambda ; [[SZ:[a-z]+]]:i64[]. let
# CHECK:         [[A0:[a-z]+]]:f64[[[SZ]]] = broadcast_in_dim
# CHECK:         [[SZ1:[a-z]+]]:i64[] = add [[SZ]] 1
# CHECK:         {{[a-z]+}}:f64[[[SZ]]] {{[a-z]+}}:f64[[[SZ1]]] {{[a-z]+}}:f64[[[SZ1]]] = for_loop[
# CHECK:           body_jaxpr={ lambda ; [[C1:[a-z]+]]:i64[] [[C2:[a-z]+]]:i64[] {{[a-z]+}}:i64[] [[X:[a-z]+]]:f64[[[C1]]] [[Y:[a-z]+]]:f64[[[C2]]] [[Z:[a-z]+]]:f64[[[C2]]]. let
# CHECK-NEXT:        in ([[X]], [[Y]], [[Z]]) }
# CHECK:           nimplicit=0
# CHECK:           preserve_dimensions=False


def add_inside(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(i, a, b, b_):
        return a, b + b_, b_

    b0 = jnp.ones([sz + 1], dtype=float)
    return loop(a0, b0, b0)


# b and b_ enter with one size and keep it in every iteration, so b + b_ is well-typed
print(dynjax.make_jaxpr(add_inside)(5))
# CHECK: { lambda ; {{[a-z]+}}:i64[]. let
# CHECK:           body_jaxpr={ lambda ; {{[a-z]+}}:i64[] [[C:[a-z]+]]:i64[] {{[a-z]+}}:i64[] {{[a-z]+}}:f64[{{[a-z]+}}] [[B:[a-z]+]]:f64[[[C]]] [[B_:[a-z]+]]:f64[[[C]]]. let
# CHECK-NEXT:          {{[a-z]+}}:f64[[[C]]] = add [[B]] [[B_]]
# CHECK:           nimplicit=0


def diverging(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(i, a, b, b_):
        return a, jnp.concatenate([b + b_, b]), b_

    b0 = jnp.ones([sz + 1], dtype=float)
    return loop(a0, b0, b0)


# once b grows and b_ does not, they have different sizes and b + b_ is an error
try:
    dynjax.make_jaxpr(diverging)(5)
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: shapes float64[{{d[0-9]+}}] and float64[{{d[0-9]+}} + 1] cannot be broadcast together
