# RUN: %PYTHON %s | filecheck %s
# jnp.ones((sz + 1,)) from an integer argument: the size is a dim value, the array is tensor<?xf64>.
import dynjax
import dynjax.numpy as jnp
from dynjax.lowering import module_text

print(module_text(dynjax.make_jaxpr(lambda sz: jnp.ones((sz + 1,)))(3)))

# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>) -> (tensor<i64>, tensor<?xf64>)
# CHECK:       %[[ONE:.*]] = stablehlo.constant dense<1> : tensor<i64>
# CHECK:       %[[N:.*]] = stablehlo.add %arg0, %[[ONE]] : tensor<i64>
# CHECK:       %[[SHAPE:.*]] = stablehlo.reshape %[[N]] : (tensor<i64>) -> tensor<1xi64>
# CHECK:       %[[B:.*]] = stablehlo.dynamic_broadcast_in_dim %{{.*}}, %[[SHAPE]], dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
# CHECK:       return %[[N]], %[[B]] : tensor<i64>, tensor<?xf64>
