# RUN: %PYTHON %s | filecheck %s
# A while loop doubling 3 elements 10 times, its carried size changing every iteration
# (allow_array_resizing). The first call grows the loop's capacities fourfold (32, 128, 512,
# 2048, 8192) until the run completes; the loop ends at 3072 elements, so the run of these
# inputs at their exact sizes (the array not padded: tensor<3xf64>) and at the capacity they
# need (3072) is compiled ahead, and serves the repeated calls (execution/padded_runs.py,
# CapacityProgram._completed). Besides the result, the module returns only the loop's final
# counters, packed in one vector (each output of a run costs the host as much as another):
# the host computes the result's length and the loop's report (stopped early, the size the
# next iteration would need) from them (execution/host_prologue.py, the epilogue), with no
# scalar arithmetic after the loop.
import os
os.environ["DYNJAX_COMPILE_AHEAD"] = "1"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402
from dynjax import lax  # noqa: E402
from dynjax.execution import tiers  # noqa: E402

f = dynjax.qjit(lambda x: lax.while_loop(
    lambda c: c[1] < 10, lambda c: (jnp.concatenate([c[0], c[0] * 0.5]), c[1] + 1), (x, 0),
    allow_array_resizing=True)[0], abstracted_axes={0: "n"})
x = np.arange(3.0)
want = x
for _ in range(10):
    want = np.concatenate([want, want * 0.5])
np.testing.assert_array_equal(f(x), want)
tiers.wait_for_background()
np.testing.assert_array_equal(f(x), want)
print(f.mlir_specialized)

# CHECK: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<3xf64>) -> (tensor<3072xf64>, tensor<2xi64>)
# CHECK: stablehlo.pad %arg1, %{{.*}}, low = [0], high = [3069]
# CHECK: stablehlo.while
# CHECK: stablehlo.constant dense<3072> : tensor<i64>
# CHECK: stablehlo.compare LE
# CHECK-NOT: stablehlo.concatenate
# CHECK: stablehlo.return {{.*}} : tensor<i64>, tensor<3072xf64>, tensor<i64>
# CHECK-NOT: stablehlo.{{compare|minimum|add|select|convert}}
# CHECK: stablehlo.concatenate {{.*}} -> tensor<2xi64>
# CHECK-NEXT: return %{{[0-9]+}}#1, %{{[0-9]+}} : tensor<3072xf64>, tensor<2xi64>
