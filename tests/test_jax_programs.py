"""Acceptance test of the JAX API: JAX-style example programs (in ``tests/jax_programs/``: an
MLP classifier with ``stax`` + ``optimizers``, a classifier from scratch, a VAE, DP-SGD with a
convolutional network, ADVI), written against ``jax``, run once on jax and once on dynjax by
swapping their imports (JAX's own ``example_libraries`` source executes under the swap too).
Synthetic MNIST-shaped data replaces the download. dynjax must print JAX's numbers (jax with
``jax_enable_x64``: dynjax's default float is float64, JAX's with x64)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import dynjax
import dynjax.numpy

import jax  # noqa: E402  (a test extra: the comparison oracle)

from jax_programs.swap import ImportSwap, load_original, load_swapped  # noqa: E402

# whole JAX example programs, 10-80 s each: the slow set (pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow

HERE = os.path.join(os.path.dirname(__file__), "jax_programs")
PROGRAMS = ["mlp_classifier", "mlp_from_scratch", "vae", "dp_sgd", "advi", "library_tour"]


@pytest.fixture(autouse=True)
def x64():
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def assert_same_numbers(got, want, path="result"):
    """Same structure; the same ints and bools; floats equal up to rounding (the programs take
    up to 60 optimizer steps, each a sum of many products whose order XLA chooses)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (path, got, want)
        for k in want:
            assert_same_numbers(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, type(want)) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_numbers(g, w, f"{path}[{i}]")
    elif isinstance(want, float):
        assert isinstance(got, float), (path, got)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=path)
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_prints_jax_numbers(name):
    path = os.path.join(HERE, name + ".py")
    want = load_original(path).main()
    swapped = load_swapped(path)
    # the swapped program really runs on dynjax: its modules are dynjax's
    for alias in ("jnp", "jax"):
        if hasattr(swapped, alias):
            assert getattr(swapped, alias).__name__.startswith("dynjax"), alias
    got = swapped.main()
    assert_same_numbers(got, want)


def test_swapped_example_libraries_run_jax_source_on_dynjax():
    """``stax`` and ``optimizers`` are JAX's own files executed with dynjax as their jax."""
    swap = ImportSwap()
    stax = swap._example_library("stax")
    optimizers = swap._example_library("optimizers")
    assert stax.__file__.endswith(os.path.join("jax", "example_libraries", "stax.py"))
    assert stax.jnp is dynjax.numpy and stax.lax is dynjax.lax and stax.random is dynjax.random
    assert optimizers.jnp is dynjax.numpy and optimizers.jax is dynjax
    # a layer's forward pass is a dynjax computation on a dynamic batch size under qjit
    init, apply = stax.serial(stax.Dense(3), stax.Relu)
    _, params = init(dynjax.random.PRNGKey(0), (-1, 4))
    f = dynjax.qjit(apply, abstracted_axes=(None, {0: "n"}))
    for n in (0, 1, 5):
        x = np.arange(4.0 * n).reshape(n, 4)
        w, b = params[0]
        np.testing.assert_allclose(f(params, x), np.maximum(x @ np.asarray(w) + np.asarray(b), 0),
                                   rtol=1e-13)
