# RUN: %PYTHON %s | filecheck %s
# iota / reshape / slices with dynamic sizes use the dynamic_* ops fed by shape tensors.
import numpy as np
import dynjax
from dynjax import lax
from dynjax.lowering import module_text


def f(n, x, i):
    a = lax.iota(np.int64, n)
    b = lax.reshape(x, (x.shape[0] * 2,))
    c = lax.dynamic_slice(x, (i, 0), (n, 1))
    return a, b, c


print(module_text(dynjax.make_jaxpr(f, abstracted_axes=(None, {0: "m"}))(3, np.ones((4, 2)), 0)))

# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<?x2xf64>, %arg3: tensor<i64>)
# CHECK:       stablehlo.dynamic_iota %{{.*}}, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
# CHECK:       stablehlo.dynamic_reshape %arg2, %{{.*}} : (tensor<?x2xf64>, tensor<1xi64>) -> tensor<?xf64>
# the start is a run-time value: dynamic_gather (sizes as an operand) rather than real_dynamic_slice
# CHECK:       stablehlo.concatenate {{.*}} -> tensor<2xi64>
# CHECK:       "stablehlo.dynamic_gather"(%arg2, {{.*}}) {{.*}} : (tensor<?x2xf64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x1xf64>
