# RUN: %PYTHON %s | filecheck %s
# Collectives over a named axis become operations over the batch axis of the vmap that binds
# the name: psum is a reduce_sum over it, axis_index an iota, all_gather moves the batch axis
# into the result. Nothing named is left in the jaxpr (the batch size n is dynamic).
import dynjax  # noqa: E402
from dynjax import lax  # noqa: E402


def f(x):
    return dynjax.vmap(lambda r: (lax.psum(r, "i") * lax.axis_index("i"), lax.all_gather(r, "i")),
                       axis_name="i")(x)


print(dynjax.make_jaxpr(f, abstracted_axes=({0: "n"},))(dynjax.ShapeDtypeStruct((5, 3), "float64")))

# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]],3]. let
# CHECK: reduce_sum[axes=(0,)] [[X]]
# CHECK: iota
# CHECK-NOT: transpose
# CHECK-NOT: psum
# CHECK-NOT: axis_index
# CHECK-NOT: all_gather
