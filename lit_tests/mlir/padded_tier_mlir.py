# RUN: %PYTHON %s | filecheck %s
# The padded tier: `sum(x[1:] * 2)` for every n in the bucket of 5 (n <= 16) is one static
# module. The logical size is an i64 argument, the array a 16-element buffer; the slice x[1:]
# is a dynamic_slice of a fixed 15 elements from a start clamped with the logical sizes (at
# most 1 = 16 - 15, so XLA never moves it), and the sum first replaces the elements past the
# logical length n - 1 by -0.0. The start and the length are integer arithmetic on n, done on
# the host before the call (execution/host_prologue.py): two more i64 arguments.
import os
os.environ["DYNJAX_TIERS"] = "padded"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402

f = dynjax.qjit(lambda x: jnp.sum(x[1:] * 2.0), abstracted_axes={0: "n"})
assert f(np.arange(5.0)) == 20.0 and f(np.arange(9.0)) == 72.0
assert f.cache_info()["padded_compilations"] + f.cache_info()["disk_cache_hits"] == 1
print(f.mlir_specialized)

# CHECK: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<16xf64>, %[[START:arg[0-9]+]]: tensor<i64>, %[[LEN:arg[0-9]+]]: tensor<i64>) -> tensor<f64>
# CHECK-NOT: stablehlo.maximum
# CHECK: stablehlo.dynamic_slice %arg1, %[[START]], sizes = [15] : (tensor<16xf64>, tensor<i64>) -> tensor<15xf64>
# CHECK: %[[IOTA:.*]] = stablehlo.iota dim = 0 : tensor<15xi64>
# CHECK: %[[N:.*]] = stablehlo.broadcast_in_dim %[[LEN]], dims = [] : (tensor<i64>) -> tensor<15xi64>
# CHECK: %[[KEEP:.*]] = stablehlo.compare LT, %[[IOTA]], %[[N]], SIGNED
# CHECK: %[[MASKED:.*]] = stablehlo.select %[[KEEP]], %{{.*}}, %{{.*}} : tensor<15xi1>, tensor<15xf64>
# CHECK: stablehlo.reduce(%[[MASKED]] init: %{{.*}}) applies stablehlo.add across dimensions = [0]
