"""The primitive catalogue: each primitive with its numpy impl and abstract evaluation.

Primitives are strict: elementwise binary operations need equal shapes and dtypes
(broadcasting and type promotion happen in ``dynjax.numpy``). Operations whose result
shape may be dynamic take the dynamic sizes as trailing scalar operands and record
``None`` in the corresponding entry of their static ``shape``-like param, as in
``broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 b``.

Lowering rules live in ``dynjax.lowering``; control-flow primitives in
``dynjax.control_flow``.


The catalogue is split by family, one module each (``elementwise``, ``shapes``,
``reductions``, ``contractions``, ``slicing``, ``indexing``); this package re-exports every
primitive and helper, so ``from dynjax.lax import primitives as P; P.add_p`` works.
"""
from .elementwise import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .contractions import *  # noqa: F401,F403
from .slicing import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
