"""``dynjax.lax``: primitive operations and lax-style control flow.

The functions here bind primitives directly (strict shapes and dtypes, no broadcasting
or promotion); ``dynjax.numpy`` builds numpy semantics on top of them.
"""
from .api import *  # noqa: F401,F403
from .api import abs, max, min, pow, round, slice  # noqa: F401  (shadowed builtins)
from . import primitives  # noqa: F401


def __getattr__(name):
    # Control flow lives in dynjax.control_flow; imported lazily to avoid an import cycle.
    if name in ("cond", "switch", "while_loop", "fori_loop", "scan"):
        from ..control_flow import lax_api
        return getattr(lax_api, name)
    raise AttributeError(name)
