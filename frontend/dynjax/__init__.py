"""dynjax: trace numerical Python with dynamically-shaped arrays, compile it through XLA.

Pipeline: trace (``core``) -> jaxpr (``core.jaxpr``) -> lower (``lowering``) ->
specialize (``mlir_passes``) -> compile and run (``runtime``). See doc/architecture.md.
"""
import os as _os

# jaxlib's XLA client logs INFO lines on start-up; keep user output clean unless asked for.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from .core.avals import (DBIdx, DShapedArray, InDBIdx, OutDBIdx, ShapedArray,  # noqa: F401
                         bool_, float32, float64, int32, int64)
from .core.interpret import eval_jaxpr  # noqa: F401
from .core.jaxpr import ClosedJaxpr, Jaxpr, JaxprTypeError, check_jaxpr  # noqa: F401
from .core.pytree import (register_pytree_node, tree_flatten, tree_map,  # noqa: F401
                          tree_unflatten)
from .tracing import ShapeDtypeStruct, make_jaxpr  # noqa: F401
from . import lax, numpy  # noqa: F401

__version__ = "0.1.0"


from .control_flow.catalyst_api import cond, for_loop, while_loop  # noqa: E402,F401
from .control_flow.catalyst_api import switch  # noqa: E402,F401  (Catalyst's @switch(i); lax.switch is JAX's)
from .qjit import QJIT, qjit  # noqa: E402,F401  (the function shadows the submodule name)
from .execution.summary import explain  # noqa: E402,F401  (dynjax.explain(f): what f traced and compiled)
from .transforms.jvp import jvp  # noqa: E402,F401
from .transforms.api import (float0, grad, hessian, jacfwd, jacobian, jacrev, linearize,  # noqa: E402,F401
                             value_and_grad, vjp)
from .transforms.custom import closure_convert, custom_gradient, custom_jvp, custom_vjp  # noqa: E402,F401
from .transforms.linear_transpose import linear_transpose  # noqa: E402,F401
from . import custom_batching  # noqa: E402,F401  (custom_vmap, sequential_vmap)
from . import ad_checkpoint, checkpoint_policies  # noqa: E402,F401  (checkpoint / remat and its policies)
from .ad_checkpoint import checkpoint, remat  # noqa: E402,F401
from .transforms.batching import vmap  # noqa: E402,F401
from . import debug, extend  # noqa: E402,F401
from .cost_model import cost_analysis  # noqa: E402,F401
from . import tree, tree_util  # noqa: E402,F401
from .top_level import (block_until_ready, device_get, device_put, eval_shape, jit,  # noqa: E402,F401
                        typeof)
from .callbacks import pure_callback  # noqa: E402,F401
from . import nn, scipy  # noqa: E402,F401  (dynjax.nn activations; dynjax.scipy special / stats / linalg)
from . import random  # noqa: E402,F401  (dynjax.random: threefry2x32 keys and samplers)
from .parallel import (default_backend, device_count, devices, local_device_count,  # noqa: E402,F401
                       local_devices, make_mesh, process_count, process_index)
from . import sharding  # noqa: E402,F401  (dynjax.sharding: Mesh, PartitionSpec, NamedSharding, ...)
from .parallel.sharding import PartitionSpec as P  # noqa: E402,F401
from .parallel.shard_map import shard_map  # noqa: E402,F401
from .parallel.constraints import with_sharding_constraint  # noqa: E402,F401
from . import distributed  # noqa: E402,F401  (dynjax.distributed: initialize / shutdown)
from . import export  # noqa: E402,F401  (dynjax.export: serialize / deserialize traced programs)
