# RUN: %PYTHON %s | filecheck %s
# dynjax.numpy.linalg lowers to typed-FFI custom calls of jaxlib's LAPACK kernels. With dynamic
# dims the result shapes travel as extra operands (indices_of_shape_operands), which
# specialization folds away, leaving a static custom call.
import numpy as np

import dynjax.numpy as jnp
from dynjax import qjit


@qjit(abstracted_axes={0: "n", 1: "n"})
def chol(a):
    return jnp.linalg.cholesky(a)


chol(np.eye(3))
print(chol.mlir)
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x?xf64>) -> tensor<?x?xf64>
# CHECK: %[[SHAPE:.*]] = stablehlo.concatenate
# CHECK: %[[INFO_SHAPE:.*]] = stablehlo.constant dense<> : tensor<0xi64>
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi(%arg1, %[[SHAPE]], %[[INFO_SHAPE]])
# CHECK-SAME: api_version = 4 : i32
# CHECK-SAME: backend_config = {uplo = 76 : ui8}
# CHECK-SAME: indices_of_shape_operands = dense<[1, 2]> : tensor<2xi64>
# CHECK-SAME: operand_layouts = [dense<[0, 1]> : tensor<2xindex>
# CHECK-SAME: (tensor<?x?xf64>, tensor<2xi64>, tensor<0xi64>) -> (tensor<?x?xf64>, tensor<i32>)
# CHECK: stablehlo.select

print(chol.mlir_specialized)
# CHECK-LABEL: func.func @main(%arg0: tensor<3x3xf64>) -> tensor<3x3xf64>
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi(%arg0)
# CHECK-NOT: indices_of_shape_operands
# CHECK-SAME: (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<i32>)


@qjit(abstracted_axes=({0: "n", 1: "n"}, {0: "n", 1: "k"}))
def solve(a, b):
    return jnp.linalg.solve(a, b)


solve(np.eye(2, dtype=np.complex64), np.ones((2, 1), np.complex64))
print(solve.mlir)
# CHECK-LABEL: func.func public @main
# CHECK: stablehlo.custom_call @lapack_cgeqrf_ffi
# CHECK: stablehlo.custom_call @lapack_cunmqr_ffi
# CHECK-SAME: backend_config = {left = true, transpose = true}
# CHECK: stablehlo.custom_call @lapack_ctrsm_ffi
# CHECK-SAME: backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}


@qjit(abstracted_axes={0: "m", 1: "n"})
def svd(a):
    return jnp.linalg.svd(a, full_matrices=False)


svd(np.ones((3, 2), np.float32))
print(svd.mlir)
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<?x?xf32>)
# CHECK: %[[K:.*]] = stablehlo.minimum %arg0, %arg1 : tensor<i64>
# CHECK: stablehlo.custom_call @lapack_sgesdd_ffi
# CHECK-SAME: backend_config = {mode = 83 : ui8}
# CHECK-SAME: -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<i32>)


@qjit(abstracted_axes={0: "n", 1: "n"})
def eig(a):
    return jnp.linalg.eig(a)


eig(np.eye(3))
print(eig.mlir)
# A real operand: the eigenvalues come back as two real results (wr, wi) made complex; the
# vectors are complex (jaxlib unpacks LAPACK's conjugate pairs). 'N' (78): no left vectors.
# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x?xf64>) -> (tensor<?xcomplex<f64>>, tensor<?x?xcomplex<f64>>)
# CHECK: stablehlo.custom_call @lapack_dgeev_ffi(%arg1
# CHECK-SAME: backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}
# CHECK-SAME: -> (tensor<?xf64>, tensor<?xf64>, tensor<?x?xcomplex<f64>>, tensor<?x?xcomplex<f64>>, tensor<i32>)
# CHECK: stablehlo.complex

print(eig.mlir_specialized)
# CHECK-LABEL: func.func @main(%arg0: tensor<3x3xf64>) -> (tensor<3xcomplex<f64>>, tensor<3x3xcomplex<f64>>)
# CHECK: stablehlo.custom_call @lapack_dgeev_ffi(%arg0)
# CHECK-NOT: indices_of_shape_operands
# CHECK-SAME: (tensor<3x3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>, tensor<i32>)
