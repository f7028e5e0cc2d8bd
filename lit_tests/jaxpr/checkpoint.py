# RUN: %PYTHON %s | filecheck %s
# checkpoint is one call equation holding the function's jaxpr and the policy; its gradient
# recomputes in the backward pass what the policy does not save, from inputs that go
# through an optimization barrier (prevent_cse), at a symbolic size.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import checkpoint_policies as cp


def f(x, w):
    return jnp.sin(x @ w) * x


ck = dynjax.checkpoint(f, policy=cp.dots_saveable)
axes = ({0: "n"}, {0: "n", 1: "n"})

print(dynjax.make_jaxpr(ck, abstracted_axes=axes)(np.ones(3), np.ones((3, 3))))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[W:[a-z]+]]:f64[[[N]],[[N]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = checkpoint[
# CHECK-NEXT: jaxpr={ lambda ; [[E:[a-z]+]]:i64[] [[F:[a-z]+]]:f64[[[E]]] [[G:[a-z]+]]:f64[[[E]],[[E]]]. let
# CHECK-NEXT: [[H:[a-z]+]]:f64[[[E]]] = dot_general{{.*}} [[F]] [[G]]
# CHECK-NEXT: [[I:[a-z]+]]:f64[[[E]]] = sin [[H]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[E]]] = mul [[I]] [[F]]
# CHECK: policy=dots_saveable
# CHECK-NEXT: prevent_cse=True
# CHECK-NEXT: ] [[N]] [[X]] [[W]]

# the dot is saved (computed once, before the barrier); sin and cos are recomputed from it
print(dynjax.make_jaxpr(dynjax.grad(lambda x, w: jnp.sum(ck(x, w))), abstracted_axes=axes)(
    np.ones(3), np.ones((3, 3))))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[W:[a-z]+]]:f64[[[N]],[[N]]]. let
# CHECK-NEXT: [[D:[a-z]+]]:f64[[[N]]] = dot_general{{.*}} [[X]] [[W]]
# CHECK-NEXT: [[DB:[a-z]+]]:f64[[[N]]] [[XB:[a-z]+]]:f64[[[N]]] [[WB:[a-z]+]]:f64[[[N]],[[N]]] = optimization_barrier [[D]] [[X]] [[W]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = sin [[DB]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = cos [[DB]]
# CHECK-NOT: checkpoint

# with the default policy (nothing saveable) only the input is kept: everything is recomputed
# from it behind the barrier
g = dynjax.grad(lambda x: jnp.sum(dynjax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x)))
print(dynjax.make_jaxpr(g, abstracted_axes=({0: "n"},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[XB:[a-z]+]]:f64[[[N]]] = optimization_barrier [[X]]
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[N]]] = sin [[XB]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = cos [[XB]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = cos [[S]]
