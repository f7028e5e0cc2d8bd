// RUN: dynjax-opt --specialize='dims=2;args=tensor<3xf64>' %s | filecheck %s
// A private dynamic callee called at two different shapes (x of size 3 and a
// fresh array of size get_dimension_size(x) + n = 5), plus shape arithmetic.

func.func private @square(%a: tensor<?xf64>) -> tensor<?xf64> {
  %0 = stablehlo.multiply %a, %a : tensor<?xf64>
  return %0 : tensor<?xf64>
}

func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c = stablehlo.constant dense<2.0> : tensor<f64>
  %d = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf64>) -> tensor<i32>
  %dl = stablehlo.convert %d : (tensor<i32>) -> tensor<i64>
  %sz = stablehlo.add %dl, %n : tensor<i64>
  %shape = stablehlo.reshape %sz : (tensor<i64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %c, %shape, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  %r1 = func.call @square(%x) : (tensor<?xf64>) -> tensor<?xf64>
  %r2 = func.call @square(%b) : (tensor<?xf64>) -> tensor<?xf64>
  return %r1, %r2 : tensor<?xf64>, tensor<?xf64>
}

// CHECK-LABEL: func.func @main(%arg0: tensor<3xf64>) -> (tensor<3xf64>, tensor<5xf64>)
// CHECK-DAG: stablehlo.multiply %arg0, %arg0 : tensor<3xf64>
// CHECK-DAG: stablehlo.broadcast_in_dim %{{.*}}, dims = [] : (tensor<f64>) -> tensor<5xf64>
// CHECK-NOT: ?x
