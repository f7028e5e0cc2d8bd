# RUN: %PYTHON %s | filecheck %s
# The module an exported program carries (read back from its bytes): `?` dims, and one
# leading tensor<i64> argument per named dimension (n shared by x and y, m of its own).
import numpy as np
import dynjax.numpy as jnp
from dynjax.export import ShapeDtypeStruct, deserialize, export, symbolic_shape


def f(x, y, z):
    return x * y[:, None], jnp.concatenate([z, z])


n, m = symbolic_shape("n, m")
exp = export(f)(ShapeDtypeStruct((n, 3), np.float64), ShapeDtypeStruct((n,), np.float64),
                ShapeDtypeStruct((m,), np.float32))
back = deserialize(exp.serialize())
print(back)
print(back.mlir_module())

# CHECK:       Exported(f: (f64[n,3], f64[n], f32[m]) -> (f64[n,3], f32[2*m]))
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<?x3xf64>, %arg3: tensor<?xf64>, %arg4: tensor<?xf32>)
# CHECK-SAME:  -> (tensor<i64>, tensor<?x3xf64>, tensor<?xf32>)
# CHECK:       stablehlo.multiply {{.*}} : tensor<?x3xf64>
# the size 2*m of the second result is an implicit (leading) result
# CHECK:       %[[M2:.*]] = stablehlo.add %arg1, %arg1 : tensor<i64>
# CHECK:       stablehlo.concatenate %arg4, %arg4, dim = 0 : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
# CHECK:       return %[[M2]]
