"""The objects a custom rule receives in place of arrays when it asks for symbolic zeros
(``defjvp(..., symbolic_zeros=True)``, ``defvjp(..., symbolic_zeros=True)``), as in JAX's
``jax.custom_derivatives``:

* ``SymbolicZero(aval)``: the tangent (or cotangent) of a value that is not involved in the
  differentiation. Only its type is known; ``.aval``, ``.shape``, ``.dtype``, ``.ndim``...
  describe it (dims may be dynamic). A rule may return one for a zero result.
* ``CustomVJPPrimal(value, perturbed)``: what ``fwd`` receives for each argument leaf:
  the value and whether it is being differentiated.
"""
from __future__ import annotations

from typing import Any

from ..jvp import Zero

__all__ = ["SymbolicZero", "CustomVJPPrimal", "custom_vjp_primal_tree_values", "zero_from_primal",
           "to_symbolic", "from_symbolic"]


class SymbolicZero:
    """A zero (co)tangent known only by its type ``aval``. The array attributes (``shape``,
    ``dtype``, ``ndim``, ``size``...) are the aval's. It is not an array: a rule that wants
    one calls ``jnp.zeros(z.shape, z.dtype)``."""

    def __init__(self, aval):
        self.aval = aval

    def __getattr__(self, name):
        if name.startswith("__") or name == "aval":
            raise AttributeError(name)
        return getattr(self.aval, name)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"

    @property
    def size(self):
        """The number of elements (a traced value when a dim is dynamic)."""
        n = 1
        for d in self.aval.shape:
            n = n * d
        return n

    @staticmethod
    def from_primal_value(value) -> "SymbolicZero":
        """The symbolic zero tangent of ``value`` (an array, a scalar or a tracer)."""
        from ...core.trace import typeof
        return SymbolicZero(typeof(value).strip_weak_type())


def zero_from_primal(value, symbolic_zeros: bool = False):
    """The zero tangent of ``value``: a ``SymbolicZero`` if ``symbolic_zeros``, else an
    array of zeros of its type."""
    z = SymbolicZero.from_primal_value(value)
    if symbolic_zeros:
        return z
    from ..jvp import zeros_from_aval
    return zeros_from_aval(z.aval)


class CustomVJPPrimal:
    """An argument leaf given to a ``custom_vjp`` ``fwd`` rule defined with
    ``symbolic_zeros=True``: ``value`` and whether it is ``perturbed`` (differentiated).
    A leaf itself, not a pytree node."""
    __slots__ = ("value", "perturbed")

    def __init__(self, value: Any, perturbed: bool):
        self.value = value
        self.perturbed = bool(perturbed)

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def custom_vjp_primal_tree_values(tree):
    """``tree`` with each ``CustomVJPPrimal`` leaf replaced by its ``value`` (what a
    ``fwd`` rule with symbolic zeros passes on when it does not need the flags)."""
    from ...core.pytree import tree_map
    return tree_map(lambda x: x.value if isinstance(x, CustomVJPPrimal) else x, tree)


def to_symbolic(t):
    """The internal symbolic ``Zero`` as the user-facing ``SymbolicZero``; others unchanged."""
    return SymbolicZero(t.aval) if isinstance(t, Zero) else t


def from_symbolic(t):
    """A user's ``SymbolicZero`` as the internal ``Zero``; others unchanged."""
    return Zero(t.aval) if isinstance(t, SymbolicZero) else t
