# RUN: %PYTHON %s | filecheck %s
# A float max reduction carries a NaN forward in its body (XLA:CPU's library kernels, which
# a single `maximum` body goes to, drop NaN); the max softmax shifts by may drop a NaN
# (`reduce_max[keep_nan=False]`: the softmax of a row holding a NaN is NaN anyway), so its
# body is the single `maximum` XLA runs fast.
import numpy as np
import dynjax
import dynjax.numpy as jnp
from dynjax.lowering import module_text


def f(x):
    return jnp.max(x, axis=1), dynjax.nn.softmax(x, axis=1)


jaxpr = dynjax.make_jaxpr(f, abstracted_axes={0: "n"})(np.ones((3, 4)))
print(jaxpr)
print(module_text(jaxpr))

# CHECK-LABEL: { lambda
# CHECK:       reduce_max[axes=(1,)] b
# CHECK:       custom_jvp_call[
# CHECK:       reduce_max[axes=(1,) keep_nan=False]
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x4xf64>)
# jnp.max: NaN wins in the reducer
# CHECK:       stablehlo.reduce(%arg1 init: %{{.*}}) across dimensions = [1] : (tensor<?x4xf64>, tensor<f64>) -> tensor<?xf64>
# CHECK-NEXT:  reducer(%[[ACC:.*]]: tensor<f64>, %[[X:.*]]: tensor<f64>)
# CHECK-NEXT:  %[[M:.*]] = stablehlo.maximum %[[ACC]], %[[X]] : tensor<f64>
# CHECK-NEXT:  %[[NAN:.*]] = stablehlo.compare NE, %[[ACC]], %[[ACC]], FLOAT
# CHECK-NEXT:  %[[R:.*]] = stablehlo.select %[[NAN]], %[[ACC]], %[[M]]
# CHECK-NEXT:  stablehlo.return %[[R]]
# softmax's shift: the single maximum
# CHECK:       stablehlo.reduce(%arg1 init: %{{.*}}) applies stablehlo.maximum across dimensions = [1] : (tensor<?x4xf64>, tensor<f64>) -> tensor<?xf64>
# CHECK:       stablehlo.exponential
