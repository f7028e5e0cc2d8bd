// RUN: dynjax-opt --specialize='args=tensor<5xf64>,tensor<5xf64>;dims=5' %s | filecheck %s
// RUN: dynjax-opt --specialize='args=tensor<0xf64>,tensor<0xf64>;dims=0' %s | filecheck %s --check-prefix=EMPTY

func.func @main(%n: tensor<i64>, %x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {
  %0 = stablehlo.add %x, %y : tensor<?xf64>
  return %0 : tensor<?xf64>
}

// CHECK-LABEL: func.func @main(%arg0: tensor<5xf64>, %arg1: tensor<5xf64>) -> tensor<5xf64>
// CHECK-NEXT: %[[S:.*]] = stablehlo.add %arg0, %arg1 : tensor<5xf64>
// CHECK-NEXT: return %[[S]] : tensor<5xf64>
// CHECK-NOT: ?x

// EMPTY-LABEL: func.func @main(%arg0: tensor<0xf64>, %arg1: tensor<0xf64>) -> tensor<0xf64>
// EMPTY-NOT: ?x
