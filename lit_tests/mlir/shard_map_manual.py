# RUN: %PYTHON %s | filecheck %s
# A shard_map inside a sharded qjit on four CPU devices (a (2, 2) mesh) lowers its body as the
# per-device program: a Shardy manual computation over the mesh (an sdy.mesh of the module)
# whose operands enter split as their in_specs say, the body a private function on blocks
# whose collectives are StableHLO collectives over the lines of devices of their mesh axis
# (replica_groups by partition id, a channel each, global device ids), the results leaving
# as their out_specs say. XLA's partitioned program keeps them, on a device's block (f64[4,3]).
import os
os.environ["DYNJAX_NUM_CPU_DEVICES"] = "4"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
from dynjax import lax  # noqa: E402
from dynjax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

mesh = dynjax.make_mesh((2, 2), ("x", "y"))


def body(a, w):
    return (lax.psum(a @ w, "y"), lax.all_gather(a, "x", tiled=True), lax.ppermute(a, "x", [(0, 1), (1, 0)]),
            lax.psum_scatter(a, "y", scatter_dimension=0, tiled=True), lax.all_to_all(a, "y", 0, 1, tiled=True),
            a * lax.axis_index("y"))


f = dynjax.qjit(dynjax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                                 out_specs=(P("x", None), P(None, "y"), P("x", "y"), P("x", "y"), P("x", "y"),
                                            P("x", "y"))),
                in_shardings=(NamedSharding(mesh, P("x", "y")), None))
a, w = np.arange(48.0).reshape(8, 6), np.ones((6, 3))
assert np.allclose(f(a, w)[0], a @ w)
run = f._last.sharded.last_run
print(run.exe.text)
print(run.exe.partitioned_hlo())

# CHECK-DAG: sdy.mesh @[[ALL:.*]] = <["r"=4]>
# CHECK-DAG: sdy.mesh @[[GRID:.*]] = <["a0"=2, "a1"=2]>
# CHECK-DAG: sdy.mesh @[[MESH:.*]] = <["x"=2, "y"=2]>
# CHECK: func.func public @main(%[[A:.*]]: tensor<8x6xf64> {sdy.sharding = #sdy.sharding<@[[GRID]], [{"a0"}, {"a1"}]>}, %[[W:.*]]: tensor<6x3xf64> {sdy.sharding = #sdy.sharding<@[[ALL]], [{}, {}]>}
# CHECK: sdy.manual_computation(%[[A]], %[[W]]) in_shardings=[<@[[MESH]], [{"x"}, {"y"}]>, <@[[MESH]], [{"y"}, {}]>] out_shardings=[<@[[MESH]], [{"x"}, {}]>, <@[[MESH]], [{}, {"y"}]>, <@[[MESH]], [{"x"}, {"y"}]>, <@[[MESH]], [{"x"}, {"y"}]>, <@[[MESH]], [{"x"}, {"y"}]>, <@[[MESH]], [{"x"}, {"y"}]>] manual_axes={"x", "y"} (%[[BA0:.*]]: tensor<4x3xf64>, %[[BW0:.*]]: tensor<3x3xf64>)
# CHECK: func.call @shmap_body_1(%[[BA0]], %[[BW0]])
# CHECK: sdy.return
# CHECK: (tensor<8x6xf64>, tensor<6x3xf64>) -> (tensor<8x3xf64>, tensor<8x6xf64>, tensor<8x6xf64>, tensor<4x6xf64>, tensor<4x12xf64>, tensor<8x6xf64>)
# CHECK: func.func private @shmap_body_1(%[[BA:.*]]: tensor<4x3xf64>, %[[BW:.*]]: tensor<3x3xf64>)
# CHECK: %[[D:.*]] = stablehlo.dot_general %[[BA]], %[[BW]]
# CHECK: "stablehlo.all_reduce"(%[[D]]) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids}>
# CHECK: stablehlo.add
# CHECK: "stablehlo.all_gather"(%[[BA]]) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<4x3xf64>) -> tensor<8x3xf64>
# CHECK: "stablehlo.collective_permute"(%[[BA]]) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, source_target_pairs = dense<{{\[\[}}0, 2], [2, 0], [1, 3], [3, 1]]> : tensor<4x2xi64>}>
# CHECK: "stablehlo.reduce_scatter"(%[[BA]]) <{channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, replica_groups = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, scatter_dimension = 0 : i64, use_global_device_ids}>
# CHECK: (tensor<4x3xf64>) -> tensor<2x3xf64>
# CHECK: "stablehlo.all_to_all"(%[[BA]]) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64}>
# CHECK: stablehlo.constant {{.*}}dense<[0, 1, 0, 1]> : tensor<4xi32>
# CHECK: stablehlo.partition_id
# CHECK: HloModule
# CHECK-DAG: ENTRY {{.*}}(param{{.*}}: f64[4,3], param{{.*}}: f64[6,3]) -> (f64[4,3], f64[8,3], f64[4,3], f64[2,3], f64[2,6]
# CHECK-DAG: all-reduce(
# CHECK-DAG: all-gather(
# CHECK-DAG: collective-permute(
# CHECK-DAG: reduce-scatter(
# CHECK-DAG: all-to-all(
# CHECK-DAG: partition-id()
