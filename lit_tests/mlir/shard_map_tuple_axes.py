# RUN: %PYTHON %s | filecheck %s
# A collective over a tuple of mesh axes is ONE StableHLO collective: its replica groups are
# the devices that differ only in those axes, ordered first name major. On a (2, 2) mesh
# ("x", "y") of partitions [[0, 1], [2, 3]]: ("x", "y") is the group [0, 1, 2, 3], ("y", "x")
# the group [0, 2, 1, 3]; axis_index over ("y", "x") is the linear index y * 2 + x, and a
# ppermute's pairs over it are linear indices (1 -> 2 is partition 2 -> partition 1).
import os
os.environ["DYNJAX_NUM_CPU_DEVICES"] = "4"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
from dynjax import lax  # noqa: E402
from dynjax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

mesh = dynjax.make_mesh((2, 2), ("x", "y"))
xy, yx = ("x", "y"), ("y", "x")


def body(a):
    return (lax.psum(a, xy), lax.pmax(a, yx), lax.all_gather(a, yx, axis=1, tiled=True),
            lax.psum_scatter(a, xy, scatter_dimension=1, tiled=True), lax.all_to_all(a, yx, 1, 0, tiled=True),
            a + lax.axis_index(yx), lax.ppermute(a, yx, [(1, 2), (2, 1)]))


f = dynjax.qjit(dynjax.shard_map(body, mesh=mesh, in_specs=P(xy),
                                 out_specs=(P(), P(), P(), P(None, xy), P(None, yx), P(xy), P(xy))),
                in_shardings=(NamedSharding(mesh, P(xy)),))
a = np.arange(32.0).reshape(8, 4)
assert np.allclose(f(a)[0], a.reshape(4, 2, 4).sum(0))
print(f._last.sharded.last_run.exe.text)

# CHECK: func.func private @shmap_body_1(%[[A:.*]]: tensor<2x4xf64>)
# CHECK: "stablehlo.all_reduce"(%[[A]]) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}>
# CHECK: stablehlo.add
# CHECK: "stablehlo.all_reduce"(%[[A]]) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<{{\[\[}}0, 2, 1, 3]]> : tensor<1x4xi64>, use_global_device_ids}>
# CHECK: stablehlo.max
# CHECK: "stablehlo.all_gather"(%[[A]]) <{all_gather_dim = 1 : i64, {{.*}}replica_groups = dense<{{\[\[}}0, 2, 1, 3]]> : tensor<1x4xi64>, use_global_device_ids}> {{.*}}: (tensor<2x4xf64>) -> tensor<2x16xf64>
# CHECK: "stablehlo.reduce_scatter"(%[[A]]) <{{.*}}replica_groups = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}>
# CHECK: (tensor<2x4xf64>) -> tensor<2x1xf64>
# CHECK: "stablehlo.all_to_all"(%[[A]]) <{{.*}}concat_dimension = 0 : i64, replica_groups = dense<{{\[\[}}0, 2, 1, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 1 : i64}>
# CHECK-SAME: (tensor<2x4xf64>) -> tensor<8x1xf64>
# CHECK: stablehlo.constant {{.*}}dense<[0, 2, 1, 3]> : tensor<4xi32>
# CHECK: stablehlo.partition_id
# CHECK: "stablehlo.collective_permute"(%[[A]]) <{{.*}}source_target_pairs = dense<{{\[\[}}2, 1], [1, 2]]> : tensor<2x2xi64>}>
# CHECK-NOT: stablehlo.all_reduce
# CHECK-NOT: stablehlo.all_gather
# CHECK: return
