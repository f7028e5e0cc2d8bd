// RUN: dynjax-opt --specialize='dims=5' %s | filecheck %s
// A 1-d array of ones whose size is the leading dimension input.

func.func @main(%n: tensor<i64>) -> tensor<?xf64> {
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %shape = stablehlo.reshape %n : (tensor<i64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  return %b : tensor<?xf64>
}

// CHECK-LABEL: func.func @main() -> tensor<5xf64>
// CHECK-NOT: dynamic_broadcast_in_dim
// CHECK: stablehlo.broadcast_in_dim %{{.*}}, dims = [] : (tensor<f64>) -> tensor<5xf64>
// CHECK-NOT: ?x
