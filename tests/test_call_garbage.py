"""A call leaves no reference cycles behind: what a call held (its arguments, its results,
the intermediates of an eager run) is freed when the call and the caller are done with it,
not later by Python's garbage collector, whose passes over the whole heap (a few ms to
tens of ms in a process that imported jax or torch) would otherwise land on the calls of a
stream, and whose delay keeps large arrays alive."""
from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.execution import tiers


def _cyclic_garbage(fn) -> list:
    """What running ``fn`` left in reference cycles (names of the objects)."""
    fn()   # (first-time work: traces, compiles, caches)
    tiers.wait_for_background()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn()
        gc.collect()
        return [getattr(o, "__qualname__", type(o).__name__) for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


rng = np.random.default_rng(0)
W1 = rng.standard_normal((16, 32))
W2 = rng.standard_normal((32, 4))


def _mlp():
    return dynjax.qjit(lambda x: jnp.tanh(x @ W1) @ W2, abstracted_axes=({0: "n"},))


def test_new_sizes_served_eagerly():
    f = _mlp()
    f(rng.standard_normal((700, 16)))
    sizes = itertools.count(1)
    assert _cyclic_garbage(lambda: [f(np.ones((next(sizes), 16))) for _ in range(5)]) == []
    assert f.cache_info()["eager_runs"] >= 5


def test_new_sizes_served_by_compiled_buckets():
    f = dynjax.qjit(lambda x: jnp.sum(jnp.sin(x) ** 2), abstracted_axes=({0: "n"},))
    f(np.ones(300_000))
    sizes = itertools.count(300_001)
    assert _cyclic_garbage(lambda: [f(np.ones(next(sizes))) for _ in range(5)]) == []


@pytest.mark.parametrize("call", ["repeated array", "host tier", "pytree", "keyword", "eager op"])
def test_repeated_calls(call):
    x = rng.standard_normal((50, 16))
    if call == "repeated array":
        f = _mlp()
        run = lambda: [f(x) for _ in range(5)]   # noqa: E731
    elif call == "host tier":
        f = dynjax.qjit(lambda v: v * 2.0 + 1.0)
        run = lambda: [f(np.ones(5)) for _ in range(5)]   # noqa: E731
    elif call == "pytree":
        f = dynjax.qjit(lambda d: d["a"] * 2.0 + d["b"][0])
        run = lambda: [f({"a": np.ones(3), "b": [np.ones(3)]}) for _ in range(5)]   # noqa: E731
    elif call == "keyword":
        f = dynjax.qjit(lambda v, y=1.0: v * y)
        run = lambda: [f(np.ones(3), y=2.0) for _ in range(5)]   # noqa: E731
    else:
        run = lambda: [jnp.sum(jnp.tanh(x) * 2.0) for _ in range(5)]   # noqa: E731
    assert _cyclic_garbage(run) == []
