# RUN: %PYTHON %s | filecheck %s
# A qjit function under a transformation inside a trace with a dynamic axis: its jaxpr (traced
# once, with the caller's size as a dynamic axis) is inlined, and differentiated, in the
# caller's trace. A float0 tangent holds no data: it is not an output of the jaxpr.
import numpy as np

import dynjax
import dynjax.numpy as jnp


@dynjax.qjit
def inner(x):
    return jnp.sum(jnp.sin(x))


print(dynjax.make_jaxpr(dynjax.grad(inner), abstracted_axes=({0: "n"},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[C:[a-z]+]]:f64[[[N]]] = cos [[X]]
# CHECK-NEXT: [[ONES:[a-z]+]]:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[N]]
# CHECK-NEXT: [[G:[a-z]+]]:f64[[[N]]] = mul [[ONES]] [[C]]
# CHECK-NEXT: in ([[G]],) }
print(inner.cache_info()["inlined_traces"])
# CHECK-NEXT: 1

# jvp of an integer function with a float0 tangent: only the primal is an output
print(dynjax.make_jaxpr(lambda k: dynjax.jvp(lambda k: k * 2, (k,), (np.zeros(2, dynjax.float0),)))(np.arange(2)))
# CHECK: { lambda ; [[K:[a-z]+]]:i64[2]. let
# CHECK-NEXT: [[Y:[a-z]+]]:i64[2] = mul [[K]] 2
# CHECK-NEXT: in ([[Y]],) }
