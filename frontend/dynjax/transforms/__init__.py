"""Program transformations: automatic differentiation (doc/autodiff.md) and vmap.

* ``jvp/`` - forward mode: the ``JVPTrace`` interpreter and the jvp rule of every primitive;
* ``partial_eval.py`` - linearize: split the jvp of a function into known and linear parts;
* ``transpose.py`` - reverse mode: transpose a linear jaxpr (``backward_pass``) and the
  transpose rules;
* ``control_flow.py`` - the jvp, partial-evaluation and transpose rules of the loops and
  conditionals;
* ``batching/`` - ``vmap``: the ``BatchTrace`` and every batching rule;
* ``custom.py`` / ``custom_batching.py`` - ``custom_jvp`` / ``custom_vjp``: their call
  primitives and rules, and the batching rules that keep the custom rules under ``vmap``;
* ``api.py`` - the user-level functions (``grad``, ``vjp``, ``jacrev`` ...), exported from
  ``dynjax``.
"""
from . import batching, control_flow, custom_batching, custom_vmap, linear_solve_rules  # noqa: F401  (register their rules)
from .jvp import JVPTrace, JVPTracer, Zero, instantiate, zeros_from_aval  # noqa: F401
