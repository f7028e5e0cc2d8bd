// RUN: dynjax-opt --specialize='dims=3;args=tensor<4xf64>' %s | filecheck %s
// A while loop carrying a tensor<?xf64> whose shape does not change: n times acc += x.

func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> tensor<?xf64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %w:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i64>, tensor<?xf64>
    cond {
      %lt = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %i1 = stablehlo.add %i, %one : tensor<i64>
      %a1 = stablehlo.add %acc, %x : tensor<?xf64>
      stablehlo.return %i1, %a1 : tensor<i64>, tensor<?xf64>
    }
  return %w#1 : tensor<?xf64>
}

// CHECK-LABEL: func.func @main(%arg0: tensor<4xf64>) -> tensor<4xf64>
// CHECK: stablehlo.while(%{{.*}} = %{{.*}}, %{{.*}} = %arg0) : tensor<i64>, tensor<4xf64>
// CHECK: stablehlo.compare LT, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK: stablehlo.add %{{.*}}, %arg0 : tensor<4xf64>
// CHECK-NOT: ?x
