# RUN: %PYTHON %s | filecheck %s
# The seed's overview program lowered: the size is a leading tensor<i64> argument, arrays
# are tensor<?xf64>, the loop is a stablehlo.while carrying its counter and its state (the
# bound and the step are used from above; the constant step gives a condition of one
# comparison, with no select on the step's sign). The exact-size
# tier is asked for, so that mlir_specialized shows the specialization to sz = 5.
import os
os.environ["DYNJAX_TIERS"] = "exact"

from dynjax import for_loop, qjit  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402


@qjit
def circuit(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0

    a2 = loop(a0)
    return a0 + a2


print(circuit.mlir)
# CHECK: func.func public @main(%[[SZ:.*]]: tensor<i64>) -> tensor<?xf64>
# CHECK: %[[SHAPE:.*]] = stablehlo.reshape %[[SZ]] : (tensor<i64>) -> tensor<1xi64>
# CHECK: %[[A0:.*]] = stablehlo.dynamic_broadcast_in_dim %{{.*}}, %[[SHAPE]], dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
# CHECK: stablehlo.while
# CHECK-SAME: (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : tensor<i64>, tensor<?xf64>
# CHECK: cond {
# CHECK-NEXT: stablehlo.compare LT
# CHECK-NEXT: stablehlo.return
# CHECK: } do {
# CHECK: stablehlo.add %{{.*}}, %{{.*}} : tensor<?xf64>
# CHECK: stablehlo.return
# CHECK: stablehlo.add %[[A0]], %{{.*}} : tensor<?xf64>
# CHECK: return %{{.*}} : tensor<?xf64>

print(circuit(5))
# CHECK: [12. 12. 12. 12. 12.]
print(circuit.mlir_specialized)
# CHECK: func.func {{.*}}@main() -> tensor<5xf64>
