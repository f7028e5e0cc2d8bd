# RUN: %PYTHON %s | filecheck %s
# The exact tier: `x[1:] - x[:-1]` and `x[2:5, 3:]` over a dynamic axis, specialized to n = 6.
# Refinement leaves single-window gathers at constant starts; they become stablehlo.slice
# (mlir_passes/slices.py), as jax emits for static shapes, with no gather and no leftover
# start-index constants.
import os
os.environ["DYNJAX_TIERS"] = "exact"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402

f = dynjax.qjit(lambda x: (x[1:] - x[:-1], x[2:5, 3:]), abstracted_axes={0: "n"})
x = np.arange(24.0).reshape(6, 4)
d, w = f(x)
assert np.array_equal(d, x[1:] - x[:-1]) and np.array_equal(w, x[2:5, 3:])
print(f.mlir_specialized)

# CHECK-LABEL: func.func @main(%arg0: tensor<6x4xf64>)
# CHECK-NOT: gather
# CHECK-NOT: tensor<2xi64>
# CHECK-DAG: stablehlo.slice %arg0 [1:6, 0:4] : (tensor<6x4xf64>) -> tensor<5x4xf64>
# CHECK-DAG: stablehlo.slice %arg0 [0:5, 0:4] : (tensor<6x4xf64>) -> tensor<5x4xf64>
# CHECK-DAG: stablehlo.slice %arg0 [2:5, 3:4] : (tensor<6x4xf64>) -> tensor<3x1xf64>
# CHECK: return
