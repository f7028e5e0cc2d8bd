# RUN: %PYTHON %s | filecheck %s
# An abstracted axis becomes a leading tensor<i64> argument and a ? dim.
import numpy as np
import dynjax
import dynjax.numpy as jnp
from dynjax.lowering import module_text


def f(x):
    return jnp.sum(x * 2.0, axis=0), jnp.concatenate([x, x])


print(module_text(dynjax.make_jaxpr(f, abstracted_axes={0: "n"})(np.ones((3, 4)))))

# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x4xf64>) -> (tensor<i64>, tensor<4xf64>, tensor<?x4xf64>)
# the scalar 2.0 is broadcast to the operand's shape, read with get_dimension_size
# CHECK:       stablehlo.get_dimension_size %arg1, dim = 0 : (tensor<?x4xf64>) -> tensor<i32>
# CHECK:       stablehlo.dynamic_broadcast_in_dim {{.*}} -> tensor<?x4xf64>
# CHECK:       %[[M:.*]] = stablehlo.multiply %arg1, %{{.*}} : tensor<?x4xf64>
# CHECK:       stablehlo.reduce(%[[M]] init: %{{.*}}) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf64>, tensor<f64>) -> tensor<4xf64>
# CHECK:       %[[N2:.*]] = stablehlo.add %arg0, %arg0 : tensor<i64>
# CHECK:       stablehlo.concatenate %arg1, %arg1, dim = 0 : (tensor<?x4xf64>, tensor<?x4xf64>) -> tensor<?x4xf64>
# CHECK:       return %[[N2]]
