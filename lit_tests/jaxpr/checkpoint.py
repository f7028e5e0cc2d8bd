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

# the dot is saved (computed once, in the forward pass); the backward pass is a checkpoint
# again (so that a second derivative recomputes it too), which recomputes sin and cos from
# the saved dot behind a barrier and applies the transposed tangent operations
print(dynjax.make_jaxpr(dynjax.grad(lambda x, w: jnp.sum(ck(x, w))), abstracted_axes=axes)(
    np.ones(3), np.ones((3, 3))))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[W:[a-z]+]]:f64[[[N]],[[N]]]. let
# CHECK-NEXT: [[D:[a-z]+]]:f64[[[N]]] = dot_general{{.*}} [[X]] [[W]]
# CHECK-NEXT: [[CT:[a-z]+]]:f64[[[N]]] = broadcast_in_dim{{.*}} 1.0 [[N]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = checkpoint[
# CHECK-NEXT: jaxpr={ lambda ; [[G:[a-z]+]]:i64[] [[H:[a-z]+]]:f64[[[G]]] {{[a-z]+}}:i64[] [[J:[a-z]+]]:f64[[[G]]] [[K:[a-z]+]]:f64[[[G]],[[G]]] [[L:[a-z]+]]:f64[[[G]]]. let
# CHECK-NEXT: [[M:[a-z]+]]:f64[[[G]]] {{[a-z]+}}:f64[[[G]]] {{[a-z]+}}:f64[[[G]],[[G]]] = optimization_barrier [[H]] [[J]] [[K]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[G]]] = sin [[M]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[G]]] = cos [[M]]
# CHECK: dot_general
# CHECK: policy=dots_saveable
# CHECK-NEXT: prevent_cse=True
# CHECK-NEXT: ] [[N]] [[D]] [[N]] [[X]] [[W]] [[CT]]

# with the default policy (nothing saveable) only the input is kept: everything is recomputed
# from it behind the barrier
g = dynjax.grad(lambda x: jnp.sum(dynjax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x)))
print(dynjax.make_jaxpr(g, abstracted_axes=({0: "n"},))(np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[CT:[a-z]+]]:f64[[[N]]] = broadcast_in_dim{{.*}} 1.0 [[N]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[N]]] = checkpoint[
# CHECK-NEXT: jaxpr={ lambda ; [[E:[a-z]+]]:i64[] [[F:[a-z]+]]:f64[[[E]]] {{[a-z]+}}:f64[[[E]]]. let
# CHECK-NEXT: [[XB:[a-z]+]]:f64[[[E]]] = optimization_barrier [[F]]
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[E]]] = sin [[XB]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[E]]] = cos [[XB]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[E]]] = cos [[S]]
# CHECK: ] [[N]] [[X]] [[CT]]
