"""vmap against jax.vmap at static shapes (where the optional jax extra is installed)."""
import numpy as np
import pytest

import dynjax
import dynjax.numpy as dnp
from dynjax import lax as dlax

import jax  # noqa: E402  (a test extra: the comparison oracle)
jax.config.update("jax_enable_x64", True)
import jax.numpy as jjnp  # noqa: E402
from jax import lax as jlax  # noqa: E402


def programs(np_, lax_):
    return {
        "matmul_tanh": (lambda x, w: np_.tanh(x @ w), (0, None)),
        "reductions": (lambda x, w: np_.sum(x * w) + np_.max(x) - np_.mean(np_.cumsum(x)), (0, 0)),
        "sort": (lambda x, w: np_.sort(x * w[0]), (0, 0)),
        "dynamic_slice": (lambda x, w: lax_.dynamic_slice(x, (np_.argmax(w) % 2,), (2,)), (0, 0)),
        "concat_pad": (lambda x, w: np_.concatenate([np_.pad(x, 1), w]), (0, None)),
        "cond": (lambda x, w: lax_.cond(np_.sum(x) > 0, lambda a: a * w, lambda a: a - w, x), (0, 0)),
        "while": (lambda x, w: lax_.while_loop(lambda s: s[1] < np_.sum(np_.abs(x)) * 3, lambda s: (s[0] * 0.5 + w, s[1] + 1.0),
                                               (x, 0.0)), (0, None)),
        "scan": (lambda x, w: lax_.scan(lambda c, v: (c * 0.5 + v, c * v), 0.0, x * w), (0, 0)),
        "fori": (lambda x, w: lax_.fori_loop(0, 3, lambda i, c: np_.sin(c) * w, x), (1, None)),
        "grad": (lambda x, w: (jax if np_ is jjnp else dynjax).grad(lambda v: np_.sum(np_.sin(v) * w))(x), (0, 0)),
    }


DJ, JX = programs(dnp, dlax), programs(jjnp, jlax)


@pytest.mark.parametrize("name", sorted(DJ))
def test_matches_jax_vmap(name):
    rng = np.random.default_rng(5)
    f_dj, axes = DJ[name]
    f_jx, _ = JX[name]
    x = rng.normal(size=(4, 5))
    shared = {"matmul_tanh": (5, 5), "fori": (4,)}.get(name, (5,))   # a member of x is x[i] or x[:, i]
    w = rng.normal(size=(4, 5)) if axes[1] == 0 else rng.normal(size=shared)
    got = dynjax.vmap(f_dj, in_axes=axes)(x, w)
    want = jax.vmap(f_jx, in_axes=axes)(x, w)
    for g, e in zip(dynjax.tree_flatten(got)[0], jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12, atol=1e-13)
