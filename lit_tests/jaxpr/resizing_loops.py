# RUN: %PYTHON %s | filecheck %s
# Loops with allow_array_resizing=True deduce their result sizes by a fixpoint over the
# body: a size the body returns unchanged stays the outer size, and results that are equal
# in every iteration share one size.
import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop, while_loop


def grow_one(n):
    a0 = jnp.ones([n])
    b0 = jnp.ones([n])

    @while_loop(lambda a, b, i: i < 3, allow_array_resizing=True)
    def loop(a, b, i):
        return a, jnp.concatenate([b, b]), i + 1
    a2, b2, _ = loop(a0, b0, 0)
    return a0 + a2, b2


# a keeps the outer size n; only b's size is carried (nimplicit=1)
print(dynjax.make_jaxpr(grow_one)(4))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[]. let
# CHECK-NEXT:    [[A0:[a-z]+]]:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[N]]
# CHECK-NEXT:    [[M:[a-z]+]]:i64[] [[A2:[a-z]+]]:f64[[[N]]] [[B2:[a-z]+]]:f64[[[M]]] {{[a-z]+}}:i64[] = while_loop[
# CHECK-NEXT:      body_jaxpr={ lambda ; [[C:[a-z]+]]:i64[] [[K:[a-z]+]]:i64[] [[A:[a-z]+]]:f64[[[C]]] [[B:[a-z]+]]:f64[[[K]]] [[I:[a-z]+]]:i64[]. let
# CHECK-NEXT:          [[K2:[a-z]+]]:i64[] = add [[K]] [[K]]
# CHECK-NEXT:          [[BB:[a-z]+]]:f64[[[K2]]] = concatenate[dimension=0 num_operands=2] [[B]] [[B]] [[K2]]
# CHECK-NEXT:          [[I1:[a-z]+]]:i64[] = add [[I]] 1
# CHECK-NEXT:        in ([[K2]], [[A]], [[BB]], [[I1]]) }
# CHECK:           nimplicit=1
# CHECK-NEXT:      preserve_dimensions=False
# CHECK-NEXT:    ] [[N]] [[N]] [[N]] [[A0]] [[A0]] 0
# CHECK-NEXT:    {{[a-z]+}}:f64[[[N]]] = add [[A0]] [[A2]]
# CHECK-NEXT:  in ([[M]], {{[a-z]+}}, [[B2]]) }


def shared(sz):
    input_a = jnp.ones([sz + 1], dtype=float)
    input_b = jnp.ones([sz + 2], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(_i, _a, _b):
        return input_a, input_a

    return loop(input_b, input_b)


# both results are the same value in every iteration: one carried size for both
print(dynjax.make_jaxpr(shared)(3))
# CHECK: { lambda ; {{[a-z]+}}:i64[]. let
# CHECK:         [[S:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[S]]] [[Y:[a-z]+]]:f64[[[S]]] = for_loop[
# CHECK-NEXT:      apply_reverse_transform=False
# CHECK-NEXT:      body_jaxpr={ lambda ; [[C:[a-z]+]]:i64[] [[IA:[a-z]+]]:f64[[[C]]] {{[a-z]+}}:i64[] [[K:[a-z]+]]:i64[] {{[a-z]+}}:f64[[[K]]] {{[a-z]+}}:f64[[[K]]]. let
# CHECK-NEXT:        in ([[C]], [[IA]], [[IA]]) }
# CHECK:           nimplicit=1
# CHECK-NEXT:      preserve_dimensions=False
# CHECK:         in ([[S]], [[X]], [[Y]]) }
