# RUN: %PYTHON %s | filecheck %s
# A custom_vmap function is one custom_vmap_call equation holding its jaxpr; under vmap the
# user's rule runs instead, so the batched program holds the rule's operations (cos), on the
# batch, and no call.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax.custom_batching import custom_vmap


@custom_vmap
def f(x):
    return jnp.sin(x)


@f.def_vmap
def f_rule(axis_size, in_batched, xs):
    return jnp.cos(xs), True


print(dynjax.make_jaxpr(f)(1.0))
# CHECK: { lambda ; [[X:[a-z]+]]:f64[]. let
# CHECK-NEXT: [[Y:[a-z]+]]:f64[] = custom_vmap_call[
# CHECK-NEXT: call_jaxpr={ lambda ; [[A:[a-z]+]]:f64[]. let
# CHECK-NEXT: {{[a-z]+}}:f64[] = sin [[A]]
# CHECK: num_consts=0
# CHECK-NEXT: rules=<custom_vmap rule of f>
# CHECK-NEXT: ] [[X]]
# CHECK-NEXT: in ([[Y]],) }

print(dynjax.make_jaxpr(dynjax.vmap(f), abstracted_axes={0: "b"})(np.ones(3)))
# CHECK: { lambda ; [[B:[a-z]+]]:i64[] [[XS:[a-z]+]]:f64[[[B]]]. let
# CHECK-NEXT: [[YS:[a-z]+]]:f64[[[B]]] = cos [[XS]]
# CHECK-NEXT: in ([[YS]],) }
