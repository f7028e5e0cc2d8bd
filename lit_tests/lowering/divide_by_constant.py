# RUN: %PYTHON %s | filecheck %s
# Division by a literal power of two is a multiplication by its exact reciprocal (it fuses with
# its neighbours); any other scalar divisor goes through an optimization barrier, so that XLA
# cannot turn it into a multiplication by a rounded reciprocal.
import numpy as np
import dynjax
from dynjax.lowering import module_text


def f(x):
    return x / 8.0, x / -0.25, x / 3.0


print(module_text(dynjax.make_jaxpr(f)(np.ones((4,), np.float32))))

# CHECK-LABEL: func.func public @main(%arg0: tensor<4xf32>)
# CHECK:       %[[E:.*]] = stablehlo.constant dense<1.250000e-01> : tensor<f32>
# CHECK:       %[[EB:.*]] = stablehlo.broadcast_in_dim %[[E]], dims = [] : (tensor<f32>) -> tensor<4xf32>
# CHECK-NEXT:  %[[A:.*]] = stablehlo.multiply %arg0, %[[EB]] : tensor<4xf32>
# CHECK:       %[[Q:.*]] = stablehlo.constant dense<-4.000000e+00> : tensor<f32>
# CHECK:       %[[QB:.*]] = stablehlo.broadcast_in_dim %[[Q]], dims = [] : (tensor<f32>) -> tensor<4xf32>
# CHECK-NEXT:  %[[B:.*]] = stablehlo.multiply %arg0, %[[QB]] : tensor<4xf32>
# CHECK:       %[[T:.*]] = stablehlo.constant dense<3.000000e+00> : tensor<f32>
# CHECK:       %[[TB:.*]] = stablehlo.broadcast_in_dim %[[T]], dims = [] : (tensor<f32>) -> tensor<4xf32>
# CHECK-NEXT:  %[[BAR:.*]] = stablehlo.optimization_barrier %[[TB]] : tensor<4xf32>
# CHECK-NEXT:  %[[C:.*]] = stablehlo.divide %arg0, %[[BAR]] : tensor<4xf32>
# CHECK:       return %[[A]], %[[B]], %[[C]]
