# RUN: %PYTHON %s | filecheck %s
# x[x > 0]: the number of kept elements is computed from the data (reduce_sum of the mask)
# and becomes the dim of the result, an implicit output (OutDBIdx) of the program. The
# positions of the True elements are scattered into an array of that length, then gathered.
import numpy as np

import dynjax


def positive(x):
    return x[x > 0]


closed = dynjax.make_jaxpr(positive, abstracted_axes={0: "n"})(np.ones(5))
print(closed)
print(closed.out_type)
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[M:[a-z]+]]:bool[[[N]]] = gt [[X]] 0.0
# CHECK-NEXT: [[I:[a-z]+]]:i64[[[N]]] = convert_element_type[new_dtype=int64 weak_type=False] [[M]]
# CHECK-NEXT: [[K:[a-z]+]]:i64[] = reduce_sum[axes=(0,)] [[I]]
# CHECK: [[Z:[a-z]+]]:i64[[[K]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0 [[K]]
# CHECK-NEXT: [[P:[a-z]+]]:i64[[[K]]] = scatter[axes=(0,) kind='set'] [[Z]]
# CHECK: [[R:[a-z]+]]:f64[[[K]]] = gather[axes=(0,)] [[X]]
# CHECK-NEXT: in ([[K]], [[R]]) }
# CHECK: ((ShapedArray(i64[]), False), (DShapedArray(f64[OutDBIdx(0)]), True))

f = dynjax.qjit(lambda x: x[x > 0].sum(), abstracted_axes={0: "n"})
print(f(np.array([1.0, -2.0, 3.0])))
# CHECK: 4.0
print(f.cache_info()["traces"])
# CHECK-NEXT: 1

# A program that returns the selection keeps the count a run-time value: the scatter of
# positions and the gather read arrays of dynamic length (the executable is specialized once
# the host knows it). (A selection that only feeds a reduction, as in f, runs as a masked
# reduction instead: masked_reductions.py.)
g = dynjax.qjit(lambda x: x[x > 0] * 2.0, abstracted_axes={0: "n"})
print(g(np.array([1.0, -2.0, 3.0])))
# CHECK: [2. 6.]
print(g.mlir)
# CHECK: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?xf64>) -> (tensor<i64>, tensor<?xf64>)
# CHECK: %[[K:.*]] = stablehlo.reduce(%{{.*}} init: %{{.*}}) applies stablehlo.add across dimensions = [0] : (tensor<?xi64>, tensor<i64>) -> tensor<i64>
# CHECK: "stablehlo.scatter"
# CHECK: }) : (tensor<?xi64>, tensor<?x1xi64>, tensor<?xi64>) -> tensor<?xi64>
# CHECK: "stablehlo.gather"
# CHECK-SAME: (tensor<?xf64>, tensor<?x1xi64>) -> tensor<?xf64>
