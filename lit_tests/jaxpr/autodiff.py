# RUN: %PYTHON %s | filecheck %s
# Printed jaxprs of the differentiation transformations with a dynamic axis: tangents and
# cotangents have the primal's dim variable.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import lax

AXES = ({0: "n"}, {0: "n"})


def f(x):
    return jnp.sin(x) * x


# jvp: the primal and the tangent operations interleaved, every value of type f64[n]
print(dynjax.make_jaxpr(lambda x, t: dynjax.jvp(f, (x,), (t,)), abstracted_axes=AXES)(np.ones(3), np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[T:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[N]]] = sin [[X]]
# CHECK-NEXT: [[C:[a-z]+]]:f64[[[N]]] = cos [[X]]
# CHECK-NEXT: [[TC:[a-z]+]]:f64[[[N]]] = mul [[T]] [[C]]
# CHECK-NEXT: [[Y:[a-z]+]]:f64[[[N]]] = mul [[S]] [[X]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = mul [[TC]] [[X]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = mul [[T]] [[S]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = add
# CHECK-NEXT: in ([[Y]], {{[a-z]+}}) }


def lin(x, t):
    y, f_jvp = dynjax.linearize(f, x)
    return f_jvp(t)


# linearize: the primal part (sin, cos) is computed first, once; the linear map applied to
# the tangent afterwards uses only the residuals
print(dynjax.make_jaxpr(lin, abstracted_axes=AXES)(np.ones(3), np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[T:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[N]]] = sin [[X]]
# CHECK-NEXT: [[C:[a-z]+]]:f64[[[N]]] = cos [[X]]
# CHECK-NEXT: [[TC:[a-z]+]]:f64[[[N]]] = mul [[T]] [[C]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = mul [[TC]] [[X]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = mul [[T]] [[S]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = add
# CHECK-NEXT: in


# grad: the transposed linear map; the cotangent 1.0 of the sum is broadcast to f64[n]
print(dynjax.make_jaxpr(dynjax.grad(lambda x: jnp.sum(f(x))), abstracted_axes=({0: "n"},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK: {{[a-z]+}}:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[N]]
# CHECK-NOT: reduce_sum
# CHECK: in ({{[a-z]+}},) }


def loop(x):
    return jnp.sum(lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x, x))


# grad through a loop: a forward scan stacks the carries (f64[3,n]); a reverse scan runs the
# transposed body over them
print(dynjax.make_jaxpr(dynjax.grad(loop), abstracted_axes=({0: "n"},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK: {{[a-z]+}}:f64[[[N]]] [[STACK:[a-z]+]]:f64[3,[[N]]] = scan[
# CHECK: reverse=False
# CHECK: scan[
# CHECK: reverse=True
# CHECK: [[STACK]]
# CHECK: in ({{[a-z]+}},) }

try:
    dynjax.grad(lambda x: x * 2.0)(np.ones(3))
except TypeError as e:
    print("TypeError:", e)
# CHECK: TypeError: grad: gradient only defined for scalar-output functions. Output had shape f64[3]; use vjp or jacrev for a non-scalar output
