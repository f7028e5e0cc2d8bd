# RUN: %PYTHON %s | filecheck %s
# A mask selection whose values only feed reductions over the selected axis runs as a masked
# reduction (execution/masked_reductions.py): the chain runs on the whole array and the
# elements the mask leaves out become the reduction's identity just before it. The positions
# (cumsum, scatter) and the gather are gone, and so is the data-dependent size.
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax.execution.masked_reductions import rewrite_masked_reductions

traced = dynjax.make_jaxpr(lambda x: jnp.sum(x[x > 0] ** 2), abstracted_axes={0: "n"})(np.ones(5))
print(rewrite_masked_reductions(traced))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[M:[a-z]+]]:bool[[[N]]] = gt [[X]] 0.0
# CHECK-NEXT: [[P:[a-z]+]]:f64[[[N]]] = integer_pow[y=2] [[X]]
# CHECK-NEXT: [[Z:[a-z]+]]:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] -0.0 [[N]]
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[N]]] = select_n [[M]] [[Z]] [[P]]
# CHECK-NEXT: [[R:[a-z]+]]:f64[] = reduce_sum[axes=(0,)] [[S]]
# CHECK-NEXT: in ([[R]],) }

# max of two selections by the same mask, a NaN-safe chain: the select comes after the product
traced = dynjax.make_jaxpr(lambda x, y: jnp.max(x[y > 0] * y[y > 0]),
                           abstracted_axes=({0: "n"}, {0: "n"}))(np.ones(5), np.ones(5))
print(rewrite_masked_reductions(traced))
# CHECK: { lambda ; [[N:[a-z]+]]:i64[] [[X:[a-z]+]]:f64[[[N]]] [[Y:[a-z]+]]:f64[[[N]]]. let
# CHECK-NEXT: [[M:[a-z]+]]:bool[[[N]]] = gt [[Y]] 0.0
# CHECK-NEXT: [[P:[a-z]+]]:f64[[[N]]] = mul [[X]] [[Y]]
# CHECK-NEXT: [[Z:[a-z]+]]:f64[[[N]]] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] -inf [[N]]
# CHECK-NEXT: [[S:[a-z]+]]:f64[[[N]]] = select_n [[M]] [[Z]] [[P]]
# CHECK-NEXT: reduce_max[axes=(0,)] [[S]]
# CHECK-NOT: gather

# f.jaxpr stays the trace (what transformations see); f.mlir is the program that runs: no
# scatter or gather, one static-shape-friendly select before the reduce
f = dynjax.qjit(lambda x: jnp.sum(x[x > 0] ** 2), abstracted_axes={0: "n"})
print(f(np.array([1.0, -2.0, 3.0])))
# CHECK: 10.0
print(f.jaxpr)
# CHECK: scatter[axes=(0,) kind='set']
# CHECK: gather[axes=(0,)]
print(f.mlir)
# CHECK: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?xf64>) -> tensor<f64>
# CHECK-NOT: stablehlo.scatter
# CHECK-NOT: stablehlo.gather
# CHECK: stablehlo.select
# CHECK-NOT: stablehlo.scatter
# CHECK-NOT: stablehlo.gather
# CHECK: stablehlo.reduce

# a selection returned to the user keeps its compaction: the program is the trace
g = dynjax.qjit(lambda x: (x[x > 0], jnp.sum(x[x > 0] ** 2)), abstracted_axes={0: "n"})
print(g(np.array([1.0, -2.0, 3.0])))
# CHECK: (array([1., 3.]), array(10.))
print(g.mlir)
# CHECK: "stablehlo.scatter"
# CHECK: "stablehlo.gather"
