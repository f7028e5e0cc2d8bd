# RUN: %PYTHON %s | filecheck %s
# A shard_map over 13 rows on 4 devices (blocks of 4, 4, 4, 1 rows) in a sharded qjit: the
# padded program lays the rows out per device (16 padded rows, 4 per device) and passes the
# vector of the 4 block lengths into the manual computation split over "d", so each device
# reads its own length (a tensor<1xi64>), masks its rows beyond it before the sum, and the
# psum of its length is an all_reduce of that value.
import os
os.environ["DYNJAX_NUM_CPU_DEVICES"] = "4"

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
from dynjax import lax  # noqa: E402
from dynjax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

mesh = dynjax.make_mesh((4,), ("d",))
f = dynjax.qjit(dynjax.shard_map(lambda b: lax.psum(b.sum(axis=0), "d") / lax.psum(b.shape[0], "d"), mesh=mesh,
                                 in_specs=P("d"), out_specs=P()),
                abstracted_axes=({0: "n"},), in_shardings=NamedSharding(mesh, P("d")))
x = np.arange(26.0).reshape(13, 2)
assert np.allclose(f(x), x.mean(axis=0))
print(f._last.sharded.last_run.exe.text)

# CHECK: func.func public @main(
# CHECK-SAME: tensor<16x2xf64>
# CHECK: %[[LENGTHS:.*]] = stablehlo.maximum {{.*}} : tensor<4xi64>
# CHECK: sdy.manual_computation(%{{.*}}, %{{.*}}, %[[LENGTHS]]) in_shardings=[<@[[M:[a-z_0-9]+]], []>, <@[[M]], [{"d"}, {}]>, <@[[M]], [{"d"}]>]
# CHECK-SAME: manual_axes={"d"} (%{{.*}}: tensor<i64>, %{{.*}}: tensor<4x2xf64>, %{{.*}}: tensor<1xi64>)
# CHECK: } : (tensor<i64>, tensor<16x2xf64>, tensor<4xi64>) -> tensor<2xf64>
# CHECK: func.func private @shmap_body{{.*}}(%arg0: tensor<i64>, %arg1: tensor<4x2xf64>, %arg2: tensor<1xi64>)
# CHECK: %[[OWN:.*]] = stablehlo.reshape %arg2 : (tensor<1xi64>) -> tensor<i64>
# CHECK: %[[OWNS:.*]] = stablehlo.broadcast_in_dim %[[OWN]], dims = [] : (tensor<i64>) -> tensor<4x2xi64>
# CHECK: stablehlo.compare LT, %{{.*}}, %[[OWNS]]
# CHECK: stablehlo.reduce
# CHECK: "stablehlo.all_reduce"
# CHECK: "stablehlo.all_reduce"(%[[OWN]])
