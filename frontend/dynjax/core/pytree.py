"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

``tree_flatten(x)`` returns the leaves and a ``TreeDef`` that ``tree_unflatten`` uses to
rebuild the structure. Dicts are flattened in sorted key order. ``None`` is an empty
subtree (not a leaf).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

_registry: Dict[type, Tuple[Callable, Callable]] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Register ``cls``: ``flatten(x) -> (children, aux)``, ``unflatten(aux, children) -> x``."""
    _registry[cls] = (flatten, unflatten)


class TreeDef:
    """An immutable tree structure; its comparison key and hash are computed once."""
    __slots__ = ("kind", "aux", "children", "num_leaves", "_k", "_h")

    def __init__(self, kind, aux, children):
        self.kind = kind
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)
        self._k = None
        self._h = None

    def _key(self):
        k = self._k
        if k is None:
            k = self._k = (self.kind, self.aux if self.kind != "custom" else (self.aux[0], repr(self.aux[1])),
                           tuple(c._key() for c in self.children))
        return k

    def __eq__(self, other):
        return self is other or (isinstance(other, TreeDef) and self._key() == other._key())

    def __hash__(self):
        h = self._h
        if h is None:
            h = self._h = hash(self._key())
        return h

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        name = self.aux.__name__ if self.kind == "namedtuple" else self.aux[0].__name__
        return f"{name}({inner})"


LEAF = TreeDef("leaf", None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(x, is_leaf: Callable[[Any], bool] = None) -> Tuple[List[Any], TreeDef]:
    leaves: List[Any] = []

    def rec(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        if x is None:
            return TreeDef("none", None, ())
        t = type(x)
        if t in _registry:
            children, aux = _registry[t][0](x)
            return TreeDef("custom", (t, aux), tuple(rec(c) for c in children))
        if _is_namedtuple(x):
            return TreeDef("namedtuple", t, tuple(rec(c) for c in x))
        if t is tuple:
            return TreeDef("tuple", None, tuple(rec(c) for c in x))
        if t is list:
            return TreeDef("list", None, tuple(rec(c) for c in x))
        if isinstance(x, dict):
            keys = tuple(sorted(x))
            return TreeDef("dict", keys, tuple(rec(x[k]) for k in keys))
        leaves.append(x)
        return LEAF

    tree = rec(x)
    return leaves, tree


def tree_unflatten(tree: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def rec(t: TreeDef):
        if t.kind == "leaf":
            return next(it)
        if t.kind == "none":
            return None
        children = [rec(c) for c in t.children]
        if t.kind == "tuple":
            return tuple(children)
        if t.kind == "list":
            return children
        if t.kind == "dict":
            return dict(zip(t.aux, children))
        if t.kind == "namedtuple":
            return t.aux(*children)
        cls, aux = t.aux
        return _registry[cls][1](aux, children)

    out = rec(tree)
    rest = list(it)
    if rest:
        raise ValueError(f"tree_unflatten got {len(rest)} more leaves than the structure holds")
    return out


def tree_map(f: Callable, x, *rest):
    leaves, tree = tree_flatten(x)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(tree, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(x) -> List[Any]:
    return tree_flatten(x)[0]


def tree_structure(x) -> TreeDef:
    return tree_flatten(x)[1]
