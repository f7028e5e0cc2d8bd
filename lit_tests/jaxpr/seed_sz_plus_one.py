# RUN: %PYTHON %s | filecheck %s
# The seed's implicit-result example: `b` is an implicit output, `c` the explicit one.
import dynjax
import dynjax.numpy as jnp


def f(sz):
    return jnp.ones((sz + 1,), dtype=float)


print(dynjax.make_jaxpr(f)(3))
# CHECK:      { lambda ; a:i64[]. let
# CHECK-NEXT:     b:i64[] = add a 1
# CHECK-NEXT:     c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 b
# CHECK-NEXT:   in (b, c) }
