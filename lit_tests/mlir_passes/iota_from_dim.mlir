// RUN: dynjax-opt --specialize='dims=7;args=tensor<7xi64>' %s | filecheck %s
// iota of length n plus an argument of the same length.

func.func @main(%n: tensor<i64>, %x: tensor<?xi64>) -> tensor<?xi64> {
  %shape = stablehlo.reshape %n : (tensor<i64>) -> tensor<1xi64>
  %io = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  %y = stablehlo.add %io, %x : tensor<?xi64>
  return %y : tensor<?xi64>
}

// CHECK-LABEL: func.func @main(%arg0: tensor<7xi64>) -> tensor<7xi64>
// CHECK: %[[IOTA:.*]] = stablehlo.iota dim = 0 : tensor<7xi64>
// CHECK: stablehlo.add %[[IOTA]], %arg0 : tensor<7xi64>
// CHECK-NOT: ?x
// CHECK-NOT: dynamic_iota
