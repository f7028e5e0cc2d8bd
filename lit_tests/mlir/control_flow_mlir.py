# RUN: %PYTHON %s | filecheck %s
# Lowering families of control flow: cond -> stablehlo.case, while_loop -> stablehlo.while,
# scan -> stablehlo.while with row slices and updates.
import numpy as np

import dynjax.numpy as jnp
from dynjax import lax, qjit


@qjit(abstracted_axes=(None, {0: "n"}))
def pick(i, x):
    return lax.switch(i, [lambda x: x + 1.0, lambda x: x * 2.0, lambda x: -x], x)


pick(1, np.ones(3))
print(pick.mlir)
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<?xf64>) -> tensor<?xf64>
# CHECK: stablehlo.clamp
# CHECK: stablehlo.convert %{{.*}} : (tensor<i64>) -> tensor<i32>
# CHECK: stablehlo.case
# CHECK: stablehlo.add
# CHECK: stablehlo.multiply
# CHECK: stablehlo.negate


@qjit
def count(n: int):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))


print(count.mlir)
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>) -> (tensor<i64>, tensor<f64>)
# CHECK: stablehlo.while
# CHECK: cond {
# CHECK: stablehlo.compare LT
# CHECK: } do {


@qjit(abstracted_axes=({0: "n"},))
def cumulative(xs):
    return lax.scan(lambda c, x: (c + x, c), 0.0, xs)


cumulative(np.ones(4))
print(cumulative.mlir)
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?xf64>) -> (tensor<f64>, tensor<?xf64>)
# CHECK: stablehlo.while
# CHECK: stablehlo.dynamic_update_slice
# CHECK: stablehlo.real_dynamic_slice
