"""dynjax quick start: trace, print the jaxpr and the MLIR, compile and run.

Run with:  python examples/quickstart.py
"""
import numpy as np

import dynjax
import dynjax.numpy as jnp
from dynjax import cond, for_loop, qjit, while_loop


# 1. The seed's overview program: a dynamically sized array and a loop capturing it.
@qjit
def circuit(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1)
    def loop(i, a):
        return a + a0

    a2 = loop(a0)
    return a0 + a2


print("== circuit.jaxpr ==")
print(circuit.jaxpr)
print("== circuit.mlir ==")
print(circuit.mlir)
print("circuit(5) =", circuit(5))
print("circuit(2) =", circuit(2))


# 2. The seed's implicit-result example.
def f(sz):
    return jnp.ones((sz + 1,), dtype=float)


print("== make_jaxpr(f)(3) ==")
print(dynjax.make_jaxpr(f)(3))


# 3. One trace for every length: abstracted axes.
@qjit(abstracted_axes={0: "n"})
def total(x):
    return jnp.sum(jnp.sin(x) * 2)


for n in (1, 10, 1000):
    print(f"total(arange({n})) =", total(np.arange(n, dtype=float)),
          " numpy:", np.sum(np.sin(np.arange(n, dtype=float)) * 2))
print("== total.jaxpr (traced once, for every n) ==")
print(total.jaxpr)
print("cache:", total.cache_info())


# 4. An array that grows until it is large enough (its size changes every iteration).
@qjit(abstracted_axes=({0: "n"}, None))
def grow(x, limit):
    @while_loop(lambda a: a.shape[0] < limit)
    def loop(a):
        return jnp.concatenate([a, a])
    return loop(x)


print("grow([1, 2], 7) =", grow(np.array([1.0, 2.0]), 7))
print("== grow.jaxpr ==")
print(grow.jaxpr)


# 5. Branches whose results have different sizes.
@qjit
def pick(p: int, n: int):
    @cond(p > 0)
    def branch():
        return jnp.arange(n)

    @branch.otherwise
    def other():
        return jnp.arange(2 * n)
    return branch()


print("pick(1, 3) =", pick(1, 3), " pick(0, 3) =", pick(0, 3))
