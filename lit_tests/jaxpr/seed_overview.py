# RUN: %PYTHON %s | filecheck %s
# The seed's overview program: the captured a0 and the loop argument share the captured dim.
import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop


def circuit(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0

    a2 = loop(a0)
    return a0 + a2


print(dynjax.make_jaxpr(circuit)(5))
# CHECK:      { lambda ; [[A:[a-z]+]]:i64[]. let
# CHECK-NEXT:     [[B:[a-z]+]]:f64[[[A]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[A]]
# CHECK-NEXT:     [[C:[a-z]+]]:f64[[[A]]] = for_loop[
# CHECK-NEXT:       apply_reverse_transform=False
# CHECK-NEXT:       body_jaxpr={ lambda ; [[D:[a-z]+]]:i64[] [[E:[a-z]+]]:f64[[[D]]] [[F:[a-z]+]]:i64[] [[G:[a-z]+]]:f64[[[D]]]. let
# CHECK-NEXT:           [[H:[a-z]+]]:f64[[[D]]] = add [[G]] [[E]]
# CHECK-NEXT:         in ([[H]],) }
# CHECK-NEXT:       body_nconsts=2
# CHECK-NEXT:       nimplicit=0
# CHECK-NEXT:       preserve_dimensions=True
# CHECK-NEXT:     ] [[A]] [[B]] 0 10 1 0 [[B]]
# CHECK-NEXT:     [[I:[a-z]+]]:f64[[[A]]] = add [[B]] [[C]]
# CHECK-NEXT:   in ([[I]],) }
