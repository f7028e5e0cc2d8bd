// RUN: not dynjax-opt --specialize='dims=5;args=tensor<5xf64' %s 2>&1 | filecheck %s --check-prefix=BADTYPE
// RUN: not dynjax-opt --specialize='dims=5;args=tensor<5xfoo>' %s 2>&1 | filecheck %s --check-prefix=BADELEM
// RUN: not dynjax-opt --specialize='dims=5;args=tensor<5xf32>' %s 2>&1 | filecheck %s --check-prefix=MISMATCH
// RUN: not dynjax-opt --specialize='args=tensor<5xf64>' %s 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not dynjax-opt --specialize='dims=4;args=tensor<5xf64>' %s 2>&1 | filecheck %s --check-prefix=SHAPES

func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> tensor<?xf64> {
  %c = stablehlo.constant dense<1.0> : tensor<f64>
  %s = stablehlo.reshape %n : (tensor<i64>) -> tensor<1xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %c, %s, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  %y = stablehlo.add %x, %b : tensor<?xf64>
  return %y : tensor<?xf64>
}

// BADTYPE: dynjax-opt: error: unbalanced brackets
// BADELEM: dynjax-opt: error: bad type string 'tensor<5xfoo>' for input 1 of @main
// MISMATCH: dynjax-opt: error: type tensor<5xf32> for input 1 of @main is incompatible with the declared type tensor<?xf64>
// COUNT: dynjax-opt: error: --specialize: @main has 2 inputs (tensor<i64>, tensor<?xf64>) but 0 dims and 1 args were given
// SHAPES: dynjax-opt: error: shape refinement failed at: stablehlo.add
