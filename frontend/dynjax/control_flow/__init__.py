"""Control flow with dynamic shapes: primitives, the loop expansion strategy, binders,
and the two user APIs (Catalyst-style decorators and lax-style functions)."""
from . import primitives  # noqa: F401  (registers the rules)
