# RUN: %PYTHON %s | filecheck %s
# The lowered module specializes to a fully static one (what XLA compiles).
import numpy as np
import dynjax
import dynjax.numpy as jnp
from dynjax.lowering import module_text
from mlir_passes.specialize import specialize

text = module_text(dynjax.make_jaxpr(lambda x: jnp.cumsum(x) + jnp.arange(3.0).sum(),
                                     abstracted_axes={0: "n"})(np.ones(3)))
print(text)
print(specialize(text, [None, "tensor<5xf64>"], {0: 5}))

# CHECK-LABEL: func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?xf64>) -> tensor<?xf64>
# CHECK:       stablehlo.while
# CHECK:       "stablehlo.gather"
# CHECK-LABEL: func.func @main(%arg0: tensor<5xf64>) -> tensor<5xf64>
# CHECK-NOT:   ?x
# CHECK-NOT:   tensor<?
# CHECK:       return
