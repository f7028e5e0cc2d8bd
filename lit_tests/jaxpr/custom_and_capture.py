# RUN: %PYTHON %s | filecheck %s
# vmap of a custom_jvp function stays one custom_jvp_call with a batched rule, and a
# function traced inside a transformation takes the values it closes over as constvars.
import numpy as np

import dynjax
import dynjax.numpy as jnp


@dynjax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), 2.0 * jnp.cos(x) * t


# the batched function is the call's jaxpr (the batch size is its captured dim); the rule
# is the batched rule
print(dynjax.make_jaxpr(dynjax.vmap(f), abstracted_axes={0: "b"})(np.ones(3)))
# CHECK: { lambda ; [[B:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[B]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[B]]] = custom_jvp_call[
# CHECK-NEXT: call_jaxpr={ lambda ; [[D:[a-z]+]]:i64[] [[E:[a-z]+]]:f64[[[D]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[D]]] = sin [[E]]
# CHECK: num_consts=1
# CHECK-NEXT: rules=<custom_jvp f, batched>
# CHECK-NEXT: ] [[B]] [[X]]


# jvp of the batched call uses the batched rule: 2 cos, not the cos of sin's derivative
print(dynjax.make_jaxpr(lambda x, t: dynjax.jvp(dynjax.vmap(f), (x,), (t,)))(np.ones(3), np.ones(3)))
# CHECK: { lambda ; [[X:[a-z]+]]:f64[3] [[T:[a-z]+]]:f64[3]. let
# CHECK: custom_jvp_call
# CHECK: [[C:[a-z]+]]:f64[3] = cos [[X]]
# CHECK-NEXT: [[C2:[a-z]+]]:f64[3] = mul 2.0 [[C]]
# CHECK-NEXT: {{[a-z]+}}:f64[3] = mul [[C2]] [[T]]


def closes_over(x):
    print(dynjax.make_jaxpr(lambda y: x * y)(2.0))
    return x


# the jvp tracer x is an input of the inner jaxpr (a constvar), as in jax.make_jaxpr
dynjax.jvp(closes_over, (3.0,), (1.0,))
# CHECK: { lambda [[A:[a-z]+]]:f64[]; [[Y:[a-z]+]]:f64[]. let
# CHECK-NEXT: {{[a-z]+}}:f64[] = mul [[A]] [[Y]]
