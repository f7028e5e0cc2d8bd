"""Program transformations: automatic differentiation (see doc/autodiff.md).

* ``jvp.py`` - forward mode: the ``JVPTrace`` interpreter and the jvp rule of every primitive;
* ``partial_eval.py`` - linearize: split the jvp of a function into known and linear parts;
* ``transpose.py`` - reverse mode: transpose a linear jaxpr (``backward_pass``) and the
  transpose rules;
* ``control_flow.py`` - the jvp, partial-evaluation and transpose rules of the loops and
  conditionals;
* ``api.py`` - the user-level functions (``grad``, ``vjp``, ``jacrev`` ...), exported from
  ``dynjax``.
"""
from . import control_flow  # noqa: F401  (registers the control-flow rules)
from .jvp import JVPTrace, JVPTracer, Zero, instantiate, zeros_from_aval  # noqa: F401
