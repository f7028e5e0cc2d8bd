"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

``tree_flatten(x)`` returns the leaves and a ``TreeDef`` that ``tree_unflatten`` uses to
rebuild the structure. Dicts are flattened in sorted key order (an ``OrderedDict`` in its
own order; a ``defaultdict`` keeps its factory). ``None`` is an empty subtree (not a leaf).

``tree_flatten_with_path`` also gives each leaf's key path: a tuple of key entries
(``SequenceKey`` for tuples and lists, ``DictKey`` for dicts, ``GetAttrKey`` for namedtuple
fields and dataclass attributes, ``FlattenedIndexKey`` for classes registered without
keys). The public API over this module is ``dynjax.tree_util``.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, List, Optional, Tuple

_registry: Dict[type, Tuple[Callable, Callable]] = {}
#: classes registered with ``flatten_with_keys(x) -> ([(key, child), ...], aux)``
_keys_registry: Dict[type, Callable] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable,
                         flatten_with_keys: Optional[Callable] = None) -> None:
    """Register ``cls``: ``flatten(x) -> (children, aux)``, ``unflatten(aux, children) -> x``;
    ``flatten_with_keys(x) -> ([(key, child), ...], aux)`` names the children's key paths.
    A class registers once (a ``ValueError`` for a second registration or a built-in node)."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node: expected a class, got {cls!r}")
    if cls in _registry or cls in _BUILTIN_NODES:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {cls}.")
    _registry[cls] = (flatten, unflatten)
    if flatten_with_keys is not None:
        _keys_registry[cls] = flatten_with_keys


_BUILTIN_NODES = (tuple, list, dict, type(None), collections.OrderedDict, collections.defaultdict)

# _no_cycle: a nested function that calls itself holds a reference to itself (through its
# closure cell): a reference cycle, which outlives the call until the garbage collector finds
# it, with whatever the closure holds (the leaves: a call's arguments or results). The
# recursive helpers below drop that reference when they are done, so that what they held is
# freed at once and a stream of calls leaves the collector nothing to do.


class TreeDef:
    """An immutable tree structure; its comparison key and hash are computed once."""
    __slots__ = ("kind", "aux", "children", "num_leaves", "_k", "_h")

    def __init__(self, kind, aux, children):
        self.kind = kind
        self.aux = aux
        self.children = _Children(children)
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
        if self.kind in ("ordereddict", "defaultdict"):
            keys = self.aux if self.kind == "ordereddict" else self.aux[1]
            return f"{self.kind}(" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(keys, self.children)) + ")"
        name = self.aux.__name__ if self.kind == "namedtuple" else self.aux[0].__name__
        return f"{name}({inner})"


    # --- JAX's PyTreeDef methods ---------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        """The number of nodes, leaves and ``None`` included."""
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> List[Any]:
        """The subtrees of ``tree`` at this structure's leaves (``tree`` must have this
        structure as a prefix: a ``ValueError`` naming the first mismatch otherwise)."""
        return flatten_up_to(self, tree)


class _Children(tuple):
    """A node's child structures: a tuple that JAX's ``treedef.children()`` may also call."""
    __slots__ = ()

    def __call__(self) -> List[TreeDef]:
        return list(self)


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
            kind, keys, aux = _dict_node(x)
            return TreeDef(kind, aux, tuple(rec(x[k]) for k in keys))
        leaves.append(x)
        return LEAF

    try:
        tree = rec(x)
    finally:
        rec = None   # (see _no_cycle)
    return leaves, tree


def _dict_node(x):
    """(kind, keys in flattening order, aux) of a dict node."""
    if isinstance(x, collections.OrderedDict):
        keys = tuple(x)
        return "ordereddict", keys, keys
    keys = tuple(sorted(x))
    if isinstance(x, collections.defaultdict):
        return "defaultdict", keys, (x.default_factory, keys)
    return "dict", keys, keys


def _rebuild(t: TreeDef, children: List[Any]):
    """The node of structure ``t`` holding ``children``."""
    if t.kind == "tuple":
        return tuple(children)
    if t.kind == "list":
        return list(children)
    if t.kind == "dict":
        return dict(zip(t.aux, children))
    if t.kind == "ordereddict":
        return collections.OrderedDict(zip(t.aux, children))
    if t.kind == "defaultdict":
        return collections.defaultdict(t.aux[0], zip(t.aux[1], children))
    if t.kind == "namedtuple":
        return t.aux(*children)
    cls, aux = t.aux
    return _registry[cls][1](aux, children)


def tree_unflatten(tree: TreeDef, leaves) -> Any:
    if not isinstance(tree, TreeDef):
        raise TypeError(f"tree_unflatten: expected a tree structure (TreeDef), got {type(tree).__name__}")
    it = iter(leaves)

    def rec(t: TreeDef):
        if t.kind == "leaf":
            try:
                return next(it)
            except StopIteration:
                raise ValueError(f"tree_unflatten: too few leaves for the structure {tree!r} "
                                 f"({tree.num_leaves} expected)") from None
        if t.kind == "none":
            return None
        return _rebuild(t, [rec(c) for c in t.children])

    try:
        out = rec(tree)
    finally:
        rec = None   # (see _no_cycle)
    rest = list(it)
    if rest:
        raise ValueError(f"tree_unflatten got {len(rest)} more leaves than the structure holds")
    return out


# --- key paths -----------------------------------------------------------------------------------
class _KeyEntry:
    """A key path entry: compared and hashed by its type and value."""
    __slots__ = ()
    _field = ""

    def __init__(self, value):
        object.__setattr__(self, self._field, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _value(self):
        return getattr(self, self._field)

    def __eq__(self, other):
        return type(self) is type(other) and self._value() == other._value()

    def __hash__(self):
        return hash((type(self).__name__, self._value()))

    def __repr__(self):
        return f"{type(self).__name__}({self._field}={self._value()!r})"


class SequenceKey(_KeyEntry):
    """The index of a tuple or list element: ``[0]``."""
    __slots__ = ("idx",)
    _field = "idx"

    def __str__(self):
        return f"[{self.idx!r}]"


class DictKey(_KeyEntry):
    """The key of a dict entry: ``['a']``."""
    __slots__ = ("key",)
    _field = "key"

    def __str__(self):
        return f"[{self.key!r}]"


class GetAttrKey(_KeyEntry):
    """An attribute (a namedtuple field, a dataclass field): ``.name``."""
    __slots__ = ("name",)
    _field = "name"

    def __str__(self):
        return f".{self.name}"


class FlattenedIndexKey(_KeyEntry):
    """The position of a child of a class registered without keys: ``[<flat index 0>]``."""
    __slots__ = ("key",)
    _field = "key"

    def __str__(self):
        return f"[<flat index {self.key}>]"


def node_children_with_keys(x, t: type):
    """``([(key, child), ...], kind, aux)`` for a pytree node ``x`` of type ``t``, or None for
    a leaf."""
    if t in _registry:
        with_keys = _keys_registry.get(t)
        if with_keys is not None:
            pairs, aux = with_keys(x)
            pairs = list(pairs)
        else:
            children, aux = _registry[t][0](x)
            pairs = [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
        return pairs, "custom", (t, aux)
    if _is_namedtuple(x):
        return [(GetAttrKey(f), c) for f, c in zip(t._fields, x)], "namedtuple", t
    if t is tuple or t is list:
        return [(SequenceKey(i), c) for i, c in enumerate(x)], t.__name__, None
    if isinstance(x, dict):
        kind, keys, aux = _dict_node(x)
        return [(DictKey(k), x[k]) for k in keys], kind, aux
    return None


def tree_flatten_with_path(x, is_leaf: Callable = None, is_leaf_takes_path: bool = False):
    """``([(key path, leaf), ...], TreeDef)``: each leaf with the keys leading to it."""
    out: List[Tuple[tuple, Any]] = []

    def rec(x, path):
        if is_leaf is not None and (is_leaf(path, x) if is_leaf_takes_path else is_leaf(x)):
            out.append((path, x))
            return LEAF
        if x is None:
            return TreeDef("none", None, ())
        node = node_children_with_keys(x, type(x))
        if node is None:
            out.append((path, x))
            return LEAF
        pairs, kind, aux = node
        return TreeDef(kind, aux, tuple(rec(c, path + (k,)) for k, c in pairs))

    try:
        tree = rec(x, ())
    finally:
        rec = None   # (see _no_cycle)
    return out, tree


def _node_type_name(t: TreeDef) -> str:
    if t.kind == "namedtuple":
        return t.aux.__name__
    if t.kind == "custom":
        return t.aux[0].__name__
    return {"ordereddict": "OrderedDict", "none": "None"}.get(t.kind, t.kind)


def flatten_up_to(tree: TreeDef, full) -> List[Any]:
    """The subtrees of ``full`` at the leaves of ``tree``, which must be a prefix of its
    structure (a ``ValueError`` naming the key path of the first mismatch)."""
    out: List[Any] = []

    def rec(t: TreeDef, x, path):
        if t.kind == "leaf":
            out.append(x)
            return
        where = "".join(map(str, path)) or "the root"
        if t.kind == "none":
            if x is not None:
                raise ValueError(f"pytree structure error at {where}: expected None, got "
                                 f"{type(x).__name__}")
            return
        node = node_children_with_keys(x, type(x)) if x is not None else None
        if node is None or node[1] != t.kind or (t.kind in ("namedtuple",) and node[2] is not t.aux) or (
                t.kind == "custom" and node[2][0] is not t.aux[0]):
            raise ValueError(f"pytree structure error at {where}: expected a {_node_type_name(t)} node, "
                             f"got {type(x).__name__}")
        pairs, _, aux = node
        if len(pairs) != len(t.children):
            raise ValueError(f"pytree structure error at {where}: a {_node_type_name(t)} with "
                             f"{len(t.children)} children, got {len(pairs)}")
        if t.kind in ("dict", "ordereddict") and aux != t.aux or t.kind == "defaultdict" and aux[1] != t.aux[1]:
            raise ValueError(f"pytree structure error at {where}: dict keys {list(_keys_of(t))} "
                             f"differ from {[k.key for k, _ in pairs]}")
        if t.kind == "custom" and repr(aux[1]) != repr(t.aux[1]):
            raise ValueError(f"pytree structure error at {where}: {_node_type_name(t)} nodes with "
                             f"different auxiliary data ({t.aux[1]!r} and {aux[1]!r})")
        for c, (k, child) in zip(t.children, pairs):
            rec(c, child, path + (k,))

    try:
        rec(tree, full, ())
    finally:
        rec = None   # (see _no_cycle)
    return out


def _keys_of(t: TreeDef):
    return t.aux[1] if t.kind == "defaultdict" else t.aux


def tree_map(f: Callable, x, *rest, is_leaf: Callable = None):
    """``f`` applied to the leaves of ``x`` and the matching subtrees of each of ``rest``
    (each must have ``x``'s structure, or ``x``'s structure as a prefix)."""
    leaves, tree = tree_flatten(x, is_leaf)
    others = [flatten_up_to(tree, r) for r in rest]
    return tree_unflatten(tree, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(x, is_leaf: Callable = None) -> List[Any]:
    return tree_flatten(x, is_leaf)[0]


def tree_structure(x, is_leaf: Callable = None) -> TreeDef:
    return tree_flatten(x, is_leaf)[1]
