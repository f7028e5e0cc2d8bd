# RUN: %PYTHON %s | filecheck %s
# Padded attention without masks on the score matrix (execution/padding_softmax.py): for
# every n in the bucket of 5 (n <= 16), `softmax(q @ k.T / 8) @ v` appends a contraction
# term (ones beside q; beside the keys -0.0 on the logical positions and -inf on the
# padding: a 16-element select), so that the scores' padding is -inf; the row max and sum
# then read the scores and the exponentials as they are, and an empty key axis is selected
# back to 0. The keys' and the values' padding is not masked at all: they are inputs, which
# the host pads with zeros (`padding.Context.zero_padded`). The same program on keys computed
# in it (`2 * k`) masks their padding first (a 4 x 16 select).
import os
os.environ["DYNJAX_TIERS"] = "padded"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402

f = dynjax.qjit(lambda q, k, v: dynjax.nn.softmax(q @ k.T / 8.0, axis=1) @ v,
                abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
x = np.linspace(-1, 1, 20).reshape(5, 4)
out = f(x, x, x)
s = x @ x.T / 8.0
e = np.exp(s - s.max(axis=1, keepdims=True))
assert np.allclose(out, (e / e.sum(axis=1, keepdims=True)) @ x, rtol=1e-13)
print(f.mlir_specialized)
g = dynjax.qjit(lambda q, k, v: dynjax.nn.softmax(q @ (2.0 * k).T / 8.0, axis=1) @ v,
                abstracted_axes=({0: "n"}, {0: "n"}, {0: "n"}))
g(x, x, x)
print(g.mlir_specialized)

# CHECK:     func.func public @main(%arg0: tensor<i64>, %arg1: tensor<16x4xf64>, %arg2: tensor<16x4xf64>, %arg3: tensor<16x4xf64>, %[[EMPTY:arg[0-9]+]]: tensor<i1>) -> tensor<16x4xf64>
# CHECK-NOT: tensor<16x16xi1>
# CHECK-NOT: tensor<4x16xi1>
# CHECK:     %[[KT:.*]] = stablehlo.transpose %arg2
# CHECK:     %[[CST:.*]] = stablehlo.constant dense<-0.000000e+00>
# CHECK:     %[[CST2:.*]] = stablehlo.constant dense<0xFFF0000000000000>
# CHECK:     %[[BIAS:.*]] = stablehlo.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<16xi1>, tensor<16xf64>
# CHECK:     %[[ROW:.*]] = stablehlo.broadcast_in_dim %[[BIAS]], dims = [1] : (tensor<16xf64>) -> tensor<1x16xf64>
# CHECK:     %[[K5:.*]] = stablehlo.concatenate %[[KT]], %[[ROW]], dim = 0 : (tensor<4x16xf64>, tensor<1x16xf64>) -> tensor<5x16xf64>
# CHECK:     %[[Q5:.*]] = stablehlo.concatenate %arg1, %{{.*}}, dim = 1 : (tensor<16x4xf64>, tensor<16x1xf64>) -> tensor<16x5xf64>
# CHECK:     %[[S:.*]] = stablehlo.dot_general %[[Q5]], %[[K5]], contracting_dims = [1] x [0]
# CHECK:     %[[SCALED:.*]] = stablehlo.divide %[[S]], %{{.*}} : tensor<16x16xf64>
# CHECK:     stablehlo.reduce(%[[SCALED]] init: %{{.*}}) applies stablehlo.maximum across dimensions = [1]
# CHECK:     %[[E:.*]] = stablehlo.exponential %{{.*}} : tensor<16x16xf64>
# CHECK:     stablehlo.reduce(%[[E]] init: %{{.*}}) applies stablehlo.add across dimensions = [1]
# CHECK-NOT: tensor<16x4xi1>
# CHECK:     %[[OUT:.*]] = stablehlo.dot_general %{{.*}}, %arg3, contracting_dims = [1] x [0]
# CHECK:     %[[Z:.*]] = stablehlo.broadcast_in_dim %[[EMPTY]], dims = [] : (tensor<i1>) -> tensor<16x4xi1>
# CHECK:     stablehlo.select %[[Z]], %{{.*}}, %[[OUT]] : tensor<16x4xi1>, tensor<16x4xf64>
# CHECK:     func.func public @main(
# CHECK-NOT: tensor<16x16xi1>
# CHECK:     stablehlo.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x16xi1>, tensor<4x16xf64>
# CHECK:     stablehlo.concatenate
