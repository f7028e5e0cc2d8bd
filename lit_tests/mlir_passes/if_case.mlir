// RUN: dynjax-opt --specialize='dims=2;args=tensor<2x3xf64>' %s | filecheck %s
// stablehlo.if / stablehlo.case with dynamic region types, and a dynamic_reshape
// whose shape is computed from get_dimension_size.

func.func @main(%n: tensor<i64>, %m: tensor<?x?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r0 = stablehlo.get_dimension_size %m, dim = 0 : (tensor<?x?xf64>) -> tensor<i32>
  %r1 = stablehlo.get_dimension_size %m, dim = 1 : (tensor<?x?xf64>) -> tensor<i32>
  %rr = stablehlo.multiply %r0, %r1 : tensor<i32>
  %rs = stablehlo.reshape %rr : (tensor<i32>) -> tensor<1xi32>
  %x = stablehlo.dynamic_reshape %m, %rs : (tensor<?x?xf64>, tensor<1xi32>) -> tensor<?xf64>
  %p = stablehlo.compare GT, %n, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %if = "stablehlo.if"(%p) ({
      stablehlo.return %x : tensor<?xf64>
    }, {
      %neg = stablehlo.negate %x : tensor<?xf64>
      stablehlo.return %neg : tensor<?xf64>
    }) : (tensor<i1>) -> tensor<?xf64>
  %idx = stablehlo.convert %n : (tensor<i64>) -> tensor<i32>
  %cs = "stablehlo.case"(%idx) ({
      stablehlo.return %x : tensor<?xf64>
    }, {
      %neg = stablehlo.negate %x : tensor<?xf64>
      stablehlo.return %neg : tensor<?xf64>
    }) : (tensor<i32>) -> tensor<?xf64>
  return %if, %cs : tensor<?xf64>, tensor<?xf64>
}

// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf64>) -> (tensor<6xf64>, tensor<6xf64>)
// CHECK: stablehlo.reshape %arg0 : (tensor<2x3xf64>) -> tensor<6xf64>
// CHECK: "stablehlo.if"
// CHECK: }) : (tensor<i1>) -> tensor<6xf64>
// CHECK: "stablehlo.case"
// CHECK: }) : (tensor<i32>) -> tensor<6xf64>
// CHECK-NOT: ?x
