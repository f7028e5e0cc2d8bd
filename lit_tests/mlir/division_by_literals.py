# RUN: %PYTHON %s | filecheck %s
# Division by a literal scalar (lowering/rules.py, `_div_rule`): XLA rewrites `x / broadcast(c)`
# as `x * broadcast(1 / c)`, which rounds twice, so the divisor goes through an optimization
# barrier -- unless `c` is a power of two whose reciprocal is a normal number of the dtype:
# then both are the correctly rounded value of one real number, and the barrier (a
# materialized broadcast of the divisor) is left out. 3.0 keeps it; 8.0 and 0.25 do not;
# 2**1023 keeps it (its reciprocal is subnormal in float64), and so does 2**127 in float32.
# (XLA, not the host tier, runs them, and they equal numpy's quotients.)
import os
os.environ["DYNJAX_HOST_TIER"] = "off"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402

x64 = np.linspace(-1, 1, 6)
big64 = np.linspace(1, 8, 6) * 2.0 ** 1000   # (quotients by 2**1023 stay normal)
big32 = (np.linspace(1, 8, 6) * 2.0 ** 100).astype(np.float32)
for label, fn, x in [("three", lambda x: x / 3.0, x64), ("eight", lambda x: x / 8.0, x64),
                     ("quarter", lambda x: x / 0.25, x64), ("huge64", lambda x: x / 2.0 ** 1023, big64),
                     ("huge32", lambda x: x / np.float32(2.0 ** 127), big32),
                     ("eight32", lambda x: x / np.float32(8.0), big32)]:
    f = dynjax.qjit(fn)
    np.testing.assert_array_equal(f(x), fn(x))
    assert f.cache_info()["exact_runs"] == 1
    print("//", label)
    print(f.mlir_specialized)

# CHECK-LABEL: // three
# CHECK:       %[[B:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<6xf64>
# CHECK:       stablehlo.divide %arg0, %[[B]] : tensor<6xf64>
# CHECK-LABEL: // eight
# CHECK-NOT:   optimization_barrier
# CHECK:       stablehlo.divide %arg0, %{{.*}} : tensor<6xf64>
# CHECK-LABEL: // quarter
# CHECK-NOT:   optimization_barrier
# CHECK:       stablehlo.divide %arg0, %{{.*}} : tensor<6xf64>
# CHECK-LABEL: // huge64
# CHECK:       %[[B:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<6xf64>
# CHECK:       stablehlo.divide %arg0, %[[B]] : tensor<6xf64>
# CHECK-LABEL: // huge32
# CHECK:       %[[B:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<6xf32>
# CHECK:       stablehlo.divide %arg0, %[[B]] : tensor<6xf32>
# CHECK-LABEL: // eight32
# CHECK-NOT:   optimization_barrier
# CHECK:       stablehlo.divide %arg0, %{{.*}} : tensor<6xf32>
