# RUN: %PYTHON %s | filecheck %s
# A for_loop appending `a[0] + i` at each step, from one element (bench.py's row 13). The
# carried size starts at 1 and the body never makes it smaller, so by induction it is at
# least 1 at every iteration (execution/padding_control_flow.py, _invariant_lows): `a[:1]`
# is one element wide, with no `min(size, 1)` in the capacity check of the condition and no
# comparison selecting whether the appended slice is empty in the body.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import for_loop

f = dynjax.qjit(lambda n: for_loop(0, n, 1, allow_array_resizing=True)(
    lambda i, a: jnp.concatenate([a, a[:1] + i]))(jnp.ones(1)))
want = np.ones(1)
for i in range(1000):
    want = np.concatenate([want, want[:1] + i])
np.testing.assert_array_equal(f(1000), want)
print(f.mlir_specialized)

# CHECK: stablehlo.while
# CHECK: cond {
# CHECK-NOT: stablehlo.minimum
# CHECK: stablehlo.compare LE
# CHECK: } do {
# CHECK-NOT: stablehlo.compare
# CHECK: stablehlo.dynamic_update_slice
# CHECK: stablehlo.return {{.*}} : tensor<i64>, tensor<i64>, tensor<1024xf64>
