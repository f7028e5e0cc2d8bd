"""dynjax.tree_util and dynjax.tree against jax.tree_util: structures, key paths,
registration, Partial, reductions; pytrees of registered classes through qjit, grad, vmap."""
import collections
import dataclasses
import functools

import jax
import jax.tree_util as jtu
import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import tree_util as tu

jax.config.update("jax_enable_x64", True)

Point = collections.namedtuple("Point", "x y")

TREES = [
    1, None, (), [], {}, (1,), [1, None, 2], {"b": 1, "a": (2, 3)},
    {"x": [1, (2, 3)], "y": Point(4, None), "z": collections.OrderedDict([("q", 5), ("b", 6)])},
    [np.ones(2), {"k": np.zeros(0)}],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_like_jax(tree):
    leaves, td = tu.tree_flatten(tree)
    jleaves, jtd = jtu.tree_flatten(tree)
    assert len(leaves) == len(jleaves) and all(a is b for a, b in zip(leaves, jleaves))
    assert td.num_leaves == jtd.num_leaves and td.num_nodes == jtd.num_nodes
    assert tu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd)
    assert len(td.children()) == len(jtd.children())
    rebuilt = tu.tree_unflatten(td, leaves)
    assert type(rebuilt) is type(tree) and jtu.tree_structure(rebuilt) == jtd
    # key paths: same entries, same text
    pairs = tu.tree_leaves_with_path(tree)
    jpairs = jtu.tree_leaves_with_path(tree)
    assert [repr(p) for p, _ in pairs] == [repr(p) for p, _ in jpairs]
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in pairs] == \
        [jtu.keystr(p, simple=True, separator="/") for p, _ in jpairs]


def test_none_is_empty_and_is_leaf():
    assert tu.tree_leaves([None, 1]) == [1]
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    assert tu.tree_leaves({"a": (1, 2)}, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2)]
    assert tu.all_leaves([1, 2]) and not tu.all_leaves([[1]]) and not tu.all_leaves([None])
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)


def test_tree_map_prefix_and_errors():
    f = lambda x, y: (x, y)  # noqa: E731
    assert tu.tree_map(f, [1, 2], [{"a": 3}, 4]) == jtu.tree_map(f, [1, 2], [{"a": 3}, 4])
    assert tu.tree_map(lambda x: x + 1, {"a": 1, "b": None}) == {"a": 2, "b": None}
    d = collections.defaultdict(list, {"b": 1, "a": 2})
    out = tu.tree_map(lambda x: x * 10, d)
    assert type(out) is collections.defaultdict and out.default_factory is list and out == {"a": 20, "b": 10}
    for a, b in [([1, 2], [1]), ([1, 2], (1, 2)), ({"a": 1}, {"b": 1})]:
        with pytest.raises(ValueError):
            jtu.tree_map(lambda x, y: x, a, b)
        with pytest.raises(ValueError, match="pytree structure"):
            tu.tree_map(lambda x, y: x, a, b)
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": [1, 2]}, {"a": [10, 20]})
    assert out == jtu.tree_map_with_path(lambda p, x, y: (jtu.keystr(p), x + y), {"a": [1, 2]}, {"a": [10, 20]})


def test_reduce_all_transpose_broadcast():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [], 7) == 7
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_all([1, True, [2]]) and not tu.tree_all([1, [0]]) and tu.tree_all([])
    tree = [(1, 2), (3, 4), (5, 6)]
    out = tu.tree_transpose(tu.tree_structure([0, 0, 0]), tu.tree_structure((0, 0)), tree)
    assert out == jtu.tree_transpose(jtu.tree_structure([0, 0, 0]), jtu.tree_structure((0, 0)), tree)
    assert tu.tree_transpose(tu.tree_structure([0, 0, 0]), None, tree) == out
    with pytest.raises(TypeError):
        tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0)), [(1, 2), (3, 4)])
    assert dynjax.tree.broadcast([1, 2], [(3, 4), {"a": 5}]) == jax.tree.broadcast([1, 2], [(3, 4), {"a": 5}])
    assert tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1])]) == tu.tree_structure((1, [1]))


def test_tree_namespace():
    t = {"a": 1, "b": (2, None)}
    assert dynjax.tree.map(lambda x: x * 2, t) == jax.tree.map(lambda x: x * 2, t)
    assert dynjax.tree.leaves(t) == jax.tree.leaves(t)
    leaves, td = dynjax.tree.flatten(t)
    assert dynjax.tree.unflatten(td, leaves) == t and dynjax.tree.structure(t) == td
    assert dynjax.tree.reduce(lambda a, b: a * b, t) == 2 and dynjax.tree.all(t)
    assert [dynjax.tree_util.keystr(p) for p, _ in dynjax.tree.leaves_with_path(t)] == ["['a']", "['b'][0]"]


class Box:
    def __init__(self, a, b, tag):
        self.a, self.b, self.tag = a, b, tag


tu.register_pytree_node(Box, lambda x: ((x.a, x.b), x.tag), lambda tag, ch: Box(*ch, tag))


@tu.register_pytree_node_class
class Pair:
    def __init__(self, u, v):
        self.u, self.v = u, v

    def tree_flatten(self):
        return (self.u, self.v), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Keyed:
    def __init__(self, w, b):
        self.w, self.b = w, b


tu.register_pytree_with_keys(Keyed, lambda x: (((tu.GetAttrKey("w"), x.w), (tu.GetAttrKey("b"), x.b)), None),
                             lambda aux, ch: Keyed(*ch))


@functools.partial(tu.register_dataclass, data_fields=["w", "b"], meta_fields=["act"])
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    act: str = "tanh"


@tu.register_dataclass
@dataclasses.dataclass
class Scaled:
    x: object
    scale: float = dataclasses.field(default=2.0, metadata=dict(static=True))


def test_registered_classes():
    b = tu.tree_map(lambda x: x * 2, Box(1, 2, "t"))
    assert (b.a, b.b, b.tag) == (2, 4, "t")
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Box(1, 2, "t"))] == \
        ["[<flat index 0>]", "[<flat index 1>]"]
    assert tu.tree_structure(Box(1, 2, "t")) != tu.tree_structure(Box(1, 2, "u"))
    p = tu.tree_map(lambda x: -x, Pair(1, 2))
    assert (p.u, p.v) == (-1, -2)
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Keyed(1, 2))] == [".w", ".b"]
    layer = Layer(np.ones(2), 3.0, "relu")
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(layer)] == [".w", ".b"]
    out = tu.tree_map(lambda x: x + 1, layer)
    assert isinstance(out, Layer) and out.act == "relu" and out.b == 4.0
    assert tu.tree_leaves(Scaled(5.0, 3.0)) == [5.0]
    assert tu.tree_structure(Scaled(1.0, 3.0)) != tu.tree_structure(Scaled(1.0, 2.0))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda x: ((), None), lambda a, c: Box(0, 0, 0))
    with pytest.raises(ValueError):
        tu.register_pytree_node(list, lambda x: ((), None), lambda a, c: [])

    @dataclasses.dataclass
    class Bad:
        a: int
        b: int
    with pytest.raises(ValueError, match="missing"):
        tu.register_dataclass(Bad, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError):
        tu.register_dataclass(Bad, data_fields=["a"])
    with pytest.raises(TypeError):
        tu.register_dataclass(Box)


def test_partial():
    p = tu.Partial(lambda a, b, c=1: a * b + c, 2.0, c=3.0)
    jp = jtu.Partial(lambda a, b, c=1: a * b + c, 2.0, c=3.0)
    assert p(5.0) == jp(5.0) == 13.0
    assert tu.tree_leaves(p) == jtu.tree_leaves(jp) == [2.0, 3.0]
    q = tu.tree_map(lambda x: x * 10, p)
    assert isinstance(q, tu.Partial) and q(1.0) == 50.0


def test_pytrees_through_transforms():
    """Registered classes as arguments and results of qjit (static and dynamic sizes),
    grad and vmap."""
    @dynjax.qjit(abstracted_axes=({0: "n"},))
    def step(layer, scale):
        return Layer(layer.w * scale.x * scale.scale, jnp.sum(layer.w) + layer.b, layer.act)

    for n in (0, 1, 4):
        w = np.arange(n, dtype=float)
        out = step(Layer(w, 1.5, "relu"), Scaled(2.0, 3.0))
        assert isinstance(out, Layer) and out.act == "relu"
        np.testing.assert_allclose(out.w, w * 6.0)
        np.testing.assert_allclose(out.b, w.sum() + 1.5)

    def loss(layer):
        return jnp.sum(jnp.tanh(layer.w) * layer.b)
    layer = Layer(np.array([0.1, -0.4, 0.7]), 2.0)
    g = dynjax.grad(loss)(layer)
    jg = jax.grad(lambda l: jax.numpy.sum(jax.numpy.tanh(l["w"]) * l["b"]))({"w": layer.w, "b": layer.b})
    assert isinstance(g, Layer)
    np.testing.assert_allclose(g.w, jg["w"], rtol=1e-12)
    np.testing.assert_allclose(g.b, jg["b"], rtol=1e-12)

    p = tu.Partial(lambda a, x: a * x, np.float64(3.0))
    out = dynjax.qjit(lambda f, x: f(x))(p, np.ones(2))
    np.testing.assert_allclose(out, np.full(2, 3.0))
    v = dynjax.vmap(lambda pr: pr.u * pr.v)(Pair(np.arange(3.0), np.ones(3) * 2))
    np.testing.assert_allclose(v, np.arange(3.0) * 2)
