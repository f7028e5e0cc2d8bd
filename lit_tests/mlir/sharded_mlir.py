# RUN: %PYTHON %s | filecheck %s
# A sharded qjit over four CPU devices with a dynamic batch: the padded program (13 rows padded
# to 16, a multiple of the 4 pieces) is annotated for XLA's Shardy partitioner (rows split
# over the devices: a mesh of 4 for that layout; the weights replicated) and the module says it runs on 4 partitions; the
# partitioned program XLA made takes a quarter of the rows on each device.
import os
os.environ["DYNJAX_NUM_CPU_DEVICES"] = "4"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402
from dynjax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

mesh = dynjax.make_mesh((4,), ("batch",))
rows = NamedSharding(mesh, P("batch"))
f = dynjax.qjit(lambda x, w: jnp.tanh(x @ w).sum(axis=0), abstracted_axes=({0: "n"}, {}),
                in_shardings=(rows, None))
x, w = np.ones((13, 3)), np.ones((3, 2))
assert np.allclose(f(x, w), 13 * np.tanh(3.0))
run = f._last.sharded.last_run
print(run.exe.text)
print(run.exe.partitioned_hlo())

# CHECK: module attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32}
# CHECK-DAG: sdy.mesh @[[ROWS:.*]] = <["a0"=4]>
# CHECK-DAG: sdy.mesh @[[ALL:.*]] = <["r"=4]>
# CHECK: func.func public @main(%arg0: tensor<i64> {sdy.sharding = #sdy.sharding<@[[ALL]], []>}, %arg1: tensor<16x3xf64> {sdy.sharding = #sdy.sharding<@[[ROWS]], [{"a0"}, {}]>}, %arg2: tensor<3x2xf64> {sdy.sharding = #sdy.sharding<@[[ALL]], [{}, {}]>}
# CHECK: stablehlo.dot_general
# CHECK: HloModule
# CHECK: ENTRY
# CHECK-SAME: f64[4,3]
# CHECK: all-reduce
