"""``dynjax.tree_util``: JAX's pytree API over ``core/pytree.py``.

A pytree is a nest of tuples, lists, dicts (flattened in sorted key order; an
``OrderedDict`` in insertion order), namedtuples, ``None`` (an empty subtree, not a leaf)
and registered classes; everything else is a leaf::

    from dynjax import tree_util
    leaves, treedef = tree_util.tree_flatten({"b": (1, 2), "a": None})   # [1, 2]
    tree_util.tree_map(lambda x, y: x + y, [1, 2], [10, 20])            # [11, 22]
    [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path({"w": [5]})]   # ["['w'][0]"]

Classes join with ``register_pytree_node`` / ``register_pytree_node_class`` /
``register_pytree_with_keys`` (key paths for their children) / ``register_dataclass``
(data fields are children, meta fields static) / ``register_static`` (no children).
``Partial`` is a ``functools.partial`` whose arguments are pytree leaves, so it can be
passed to and returned from ``qjit`` functions.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Iterable, List, Optional, Sequence

from .core.pytree import (DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, TreeDef, flatten_up_to,
                          tree_flatten, tree_flatten_with_path, tree_leaves, tree_map, tree_structure,
                          tree_unflatten)
from .core import pytree as _pytree

PyTreeDef = TreeDef
KeyEntry = Any
KeyPath = tuple

__all__ = ["DictKey", "FlattenedIndexKey", "GetAttrKey", "SequenceKey", "PyTreeDef", "Partial",
           "all_leaves", "keystr", "register_dataclass", "register_pytree_node",
           "register_pytree_node_class", "register_pytree_with_keys", "register_pytree_with_keys_class",
           "register_static", "tree_all", "tree_broadcast", "tree_flatten", "tree_flatten_with_path",
           "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
           "tree_structure", "tree_transpose", "tree_unflatten", "treedef_children", "treedef_is_leaf",
           "treedef_tuple", "flatten_one_level"]


# --- registration --------------------------------------------------------------------------------
def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Optional[Callable] = None) -> None:
    """Make ``nodetype`` a pytree node: ``flatten_func(x) -> (children, aux_data)`` and
    ``unflatten_func(aux_data, children) -> x``; ``aux_data`` must be hashable and
    comparable (it is part of the tree structure)."""
    _pytree.register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Optional[Callable] = None) -> None:
    """Like ``register_pytree_node`` with ``flatten_with_keys(x) -> ([(key, child), ...], aux)``,
    whose keys make the children's key paths."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    _pytree.register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``x.tree_flatten() -> (children, aux)`` and
    ``cls.tree_unflatten(aux, children)`` (a classmethod)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: ``x.tree_flatten_with_keys()`` and ``cls.tree_unflatten``."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Optional[Sequence[str]] = None,
                       meta_fields: Optional[Sequence[str]] = None, drop_fields: Sequence[str] = ()) -> type:
    """Make a class a pytree whose ``data_fields`` are children (key paths ``.name``) and whose
    ``meta_fields`` are static (part of the structure). For a dataclass both may be omitted:
    fields with ``metadata=dict(static=True)`` are meta, the others data. Rebuilt with
    ``nodetype(**fields)``. Returns ``nodetype`` (usable as a decorator)."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be given when "
                            f"either is (got data_fields={data_fields!r}, meta_fields={meta_fields!r})")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype!r} is not a dataclass, so data_fields and "
                            "meta_fields are required")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    for name, group in (("data_fields", data_fields), ("meta_fields", meta_fields)):
        if not all(isinstance(f, str) for f in group):
            raise TypeError(f"register_dataclass: {name} must be field names (str), got {group!r}")
    if set(data_fields) & set(meta_fields):
        raise ValueError("register_dataclass: data_fields and meta_fields overlap in "
                         f"{sorted(set(data_fields) & set(meta_fields))}")
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init:
            raise ValueError("register_dataclass: data_fields and meta_fields must name every dataclass "
                             f"field with init=True and only those (missing {sorted(init - given)}, "
                             f"unexpected {sorted(given - init)}; list fields to leave out in drop_fields)")

    def flatten(x):
        return [getattr(x, f) for f in data_fields], tuple(getattr(x, f) for f in meta_fields)

    def flatten_with_keys(x):
        return [(GetAttrKey(f), getattr(x, f)) for f in data_fields], tuple(getattr(x, f) for f in meta_fields)

    def unflatten(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))
    _pytree.register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Make instances of ``cls`` pytree nodes without children: static values, part of the
    structure (they must be hashable)."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


class Partial(functools.partial):
    """``functools.partial`` as a pytree: the function is static, the bound positional and
    keyword arguments are children. ``Partial(f, *args, **kw)(*more) == f(*args, *more, **kw)``."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial) and not isinstance(func, Partial):
            # keep the inner function static: fold its arguments into this one
            args = func.args + args
            kwargs = {**func.keywords, **kwargs}
            func = func.func
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))


# --- key paths -----------------------------------------------------------------------------------
def _key_text(k) -> str:
    return str(k._value()) if isinstance(k, _pytree._KeyEntry) else str(k)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``"['a'][0].b"``; with ``simple=True`` the bare keys joined by
    ``separator`` (``"a/0/b"`` for ``separator="/"``)."""
    if not isinstance(keys, tuple):
        raise TypeError(f"keystr: expected a key path (a tuple of keys), got {type(keys).__name__}")
    return separator.join(_key_text(k) if simple else str(k) for k in keys)


def tree_leaves_with_path(tree, is_leaf: Optional[Callable] = None, is_leaf_takes_path: bool = False):
    """``[(key path, leaf), ...]``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable, tree, *rest, is_leaf: Optional[Callable] = None,
                       is_leaf_takes_path: bool = False):
    """``f(path, leaf, *matching subtrees of rest)`` over the leaves of ``tree``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [flatten_up_to(treedef, r) for r in rest]
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


# --- reductions and structure ------------------------------------------------------------------------
class _NoInit:
    def __repr__(self):
        return "<no initializer>"


_NO_INIT = _NoInit()


def tree_reduce(function: Callable, tree, initializer: Any = _NO_INIT, is_leaf: Optional[Callable] = None):
    """``functools.reduce(function, leaves[, initializer])`` over the tree's leaves (a
    ``TypeError`` for an empty tree without an initializer)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf: Optional[Callable] = None) -> bool:
    """Whether every leaf is truthy (``True`` for an empty tree)."""
    return all(tree_leaves(tree, is_leaf))


def tree_broadcast(prefix_tree, full_tree, is_leaf: Optional[Callable] = None):
    """``prefix_tree`` with each leaf repeated over the matching subtree of ``full_tree``."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = flatten_up_to(prefix_def, full_tree)
    return prefix_def.unflatten([tree_map(lambda _, v=v: v, s, is_leaf=is_leaf)
                                 for v, s in zip(prefix_leaves, subtrees)])


def tree_transpose(outer_treedef: TreeDef, inner_treedef: Optional[TreeDef], pytree_to_transpose):
    """Turn an ``outer`` tree of ``inner`` trees into an ``inner`` tree of ``outer`` trees
    (``inner_treedef=None``: the structure of the first inner tree)."""
    subtrees = flatten_up_to(outer_treedef, pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(subtrees[0]) if subtrees else tree_structure(None)
    expected = outer_treedef.num_leaves * inner_treedef.num_leaves
    if len(tree_leaves(pytree_to_transpose)) != expected:
        raise TypeError(f"tree_transpose: tree structure mismatch: expected {outer_treedef!r} of "
                        f"{inner_treedef!r} ({expected} leaves)")
    try:
        flat = [flatten_up_to(inner_treedef, s) for s in subtrees]
    except ValueError as e:
        raise TypeError(f"tree_transpose: tree structure mismatch: {e}") from None
    cols = [outer_treedef.unflatten([row[j] for row in flat]) for j in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(cols)


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether the structure is a single node (a leaf, or ``None``)."""
    return treedef.num_nodes == 1


def treedef_children(treedef: TreeDef) -> List[TreeDef]:
    return list(treedef.children)


def treedef_tuple(treedefs: Iterable[TreeDef]) -> TreeDef:
    """The structure of a tuple of trees with the given structures."""
    return TreeDef("tuple", None, tuple(treedefs))


def all_leaves(iterable: Iterable[Any], is_leaf: Optional[Callable] = None) -> bool:
    """Whether every element of ``iterable`` is a leaf (``None`` is not)."""
    return all(tree_structure(x, is_leaf).kind == "leaf" for x in iterable)


def flatten_one_level(tree):
    """``(children, aux_data)`` of a pytree node (a ``ValueError`` for a leaf)."""
    if tree is None:
        return [], None
    node = _pytree.node_children_with_keys(tree, type(tree))
    if node is None:
        raise ValueError(f"flatten_one_level: {type(tree).__name__} is a leaf, not a pytree node")
    pairs, kind, aux = node
    return [c for _, c in pairs], aux
