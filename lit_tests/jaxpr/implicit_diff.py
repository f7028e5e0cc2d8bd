# RUN: %PYTHON %s | filecheck %s
# custom_linear_solve holds four nested programs (matvec, its transpose vecmat, solve and
# transpose_solve), each taking its own constants and then the vector. Reverse mode
# transposes the equation into the same primitive with the roles swapped: the gradient
# runs transpose_solve on the cotangent, and never differentiates the solver.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import lax


def loss(d, b):     # the diagonal system d * x = b
    x = lax.custom_linear_solve(lambda v: d * v, b, lambda mv, r: r / d, lambda vm, r: r / (2.0 * d))
    return jnp.sum(x)


print(dynjax.make_jaxpr(loss, abstracted_axes=({0: "n"}, {0: "n"}))(np.ones(3), np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[D:[a-z]+]]:f64[[[N]]] [[B:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[X:[a-z]+]]:f64[[[N]]] = custom_linear_solve[
# CHECK-NEXT: const_lengths=(2, 2, 2, 2)
# each program's constants are the dim and d (captured), then comes the vector
# CHECK-NEXT: jaxprs=(
# CHECK-NEXT: { lambda ; [[M:[a-z]+]]:i64[] [[MD:[a-z]+]]:f64[[[M]]] [[MV:[a-z]+]]:f64[[[M]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[M]]] = mul [[MD]] [[MV]]
# the transpose of matvec, found by linear_transpose: again d * v
# CHECK: { lambda ; [[V:[a-z]+]]:i64[] [[VD:[a-z]+]]:f64[[[V]]] [[VV:[a-z]+]]:f64[[[V]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[V]]] = mul [[VD]] [[VV]]
# solve: r / d
# CHECK: { lambda ; [[S:[a-z]+]]:i64[] [[SD:[a-z]+]]:f64[[[S]]] [[SR:[a-z]+]]:f64[[[S]]]. let
# CHECK-NEXT: {{[a-z]+}}:f64[[[S]]] = div [[SR]] [[SD]]
# CHECK: num_aux=0
# CHECK-NEXT: ] [[N]] [[D]] [[N]] [[D]] [[N]] [[D]] [[N]] [[D]] [[B]]
# CHECK-NEXT: {{[a-z]+}}:f64[] = reduce_sum[axes=(0,)] [[X]]

# the gradient with respect to b: one custom_linear_solve of the cotangent (ones) whose
# solve program (the third) is transpose_solve, r / (2 d); the primal solve is dead code
print(dynjax.make_jaxpr(dynjax.grad(loss, argnums=1), abstracted_axes=({0: "n"}, {0: "n"}))(np.ones(3), np.ones(3)))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[D:[a-z]+]]:f64[[[N]]] [[B:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[CT:[a-z]+]]:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 [[N]]
# CHECK-NEXT: [[G:[a-z]+]]:f64[[[N]]] = custom_linear_solve[
# CHECK: jaxprs=(
# CHECK: = mul
# CHECK: = mul
# CHECK: { lambda ; [[T:[a-z]+]]:i64[] [[TD:[a-z]+]]:f64[[[T]]] [[TR:[a-z]+]]:f64[[[T]]]. let
# CHECK-NEXT: [[TWO:[a-z]+]]:f64[[[T]]] = mul 2.0 [[TD]]
# CHECK-NEXT: {{[a-z]+}}:f64[[[T]]] = div [[TR]] [[TWO]]
# CHECK: ] [[N]] [[D]] [[N]] [[D]] [[N]] [[D]] [[N]] [[D]] [[CT]]
# CHECK-NEXT: in ([[G]],) }
