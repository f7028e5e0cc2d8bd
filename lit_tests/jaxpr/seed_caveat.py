# RUN: %PYTHON %s | filecheck %s
# The seed's caveat program works in dynjax: the loop argument's dim is assumed invariant
# first, so the captured a0 and the argument share the captured dim (see control_flow.md).
import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop


def circuit(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0

    return loop(a0)


print(dynjax.make_jaxpr(circuit)(5))
# CHECK: body_jaxpr={ lambda ; [[D:[a-z]+]]:i64[] [[E:[a-z]+]]:f64[[[D]]] {{[a-z]+}}:i64[] [[G:[a-z]+]]:f64[[[D]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[D]]] = add [[G]] [[E]]
# CHECK: nimplicit=0


def resized(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 3, 1)
    def loop(i, a):
        return jnp.concatenate([a + a0, a])
    return loop(a0)


try:
    dynjax.make_jaxpr(resized)(5)
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: shapes float64[{{d[0-9]+}}] and float64[{{d[0-9]+}}] cannot be broadcast together
