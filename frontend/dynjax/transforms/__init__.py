"""Program transformations that run as interpreters on the trace stack.

* ``jvp`` (``transforms/jvp.py``): forward-mode automatic differentiation. ``JVPTrace``
  carries a (primal, tangent) pair per value and applies ``core.primitive.jvp_rules``.

The user-level function is ``dynjax.jvp``. See doc/transformations.md.
"""
# ``jvp`` (the function) is exported from ``dynjax`` itself; it is not re-exported here, so
# ``dynjax.transforms.jvp`` stays the module.
from .jvp import JVPTrace, JVPTracer, Zero, instantiate, zeros_from_aval  # noqa: F401
