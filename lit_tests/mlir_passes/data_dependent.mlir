// RUN: not dynjax-opt --specialize='args=tensor<3xi64>' %s 2>&1 | filecheck %s
// RUN: not dynjax-opt --specialize='dims=3;args=tensor<i64' %s 2>&1 | filecheck %s --check-prefix=BADTYPE
// A size read from array data cannot be made static: the error names the ops.

func.func @main(%x: tensor<?xi64>) -> tensor<?xf64> {
  %c = stablehlo.constant dense<1.0> : tensor<f64>
  %s = stablehlo.slice %x [0:1] : (tensor<?xi64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %c, %s, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  return %b : tensor<?xf64>
}

// CHECK: dynjax-opt: error: shape refinement left dynamic shapes in: stablehlo.dynamic_broadcast_in_dim
// BADTYPE: dynjax-opt: error: unbalanced brackets
