# RUN: %PYTHON %s | filecheck %s
# A for-loop body building jnp.ones([i]) from the loop index: the result's dim is an
# implicit output (OutDBIdx), because the index itself is not a result of the loop.
import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop


def f(sz):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return jnp.ones([i], dtype=float)
    return loop(a0)


closed = dynjax.make_jaxpr(f)(5)
print(closed)
print(closed.out_type)
# CHECK:      [[N:[a-z]+]]:i64[] [[R:[a-z]+]]:f64[[[N]]] = for_loop[
# CHECK:        body_jaxpr={ lambda ; [[I:[a-z]+]]:i64[] {{[a-z]+}}:i64[] {{[a-z]+}}:f64[{{[a-z]+}}]. let
# CHECK-NEXT:       [[B:[a-z]+]]:f64[[[I]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[I]]
# CHECK-NEXT:     in ([[I]], [[B]]) }
# CHECK:        nimplicit=1
# CHECK:      in ([[N]], [[R]]) }
# CHECK: ((ShapedArray(i64[]), False), (DShapedArray(f64[OutDBIdx(0)]), True))
