"""How a ``qjit`` object binds its arguments (issue 20, items 13-15): defaults that are not
passed stay Python defaults (baked in like static arguments, as in ``jax.jit``), keyword
arguments named in ``static_argnames`` are static wherever they sit, and a ``qjit`` object
decorates methods like a function does (descriptor protocol)."""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import qjit


def scaled(x, mode="mul", k=1):
    return x * k if mode == "mul" else x - k


def test_an_unpassed_default_before_a_static_keyword_is_not_traced():
    f = qjit(scaled, static_argnames="k")
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, k=2), x * 2)
    np.testing.assert_array_equal(f(x, k=3), x * 3)
    np.testing.assert_array_equal(f(x, k=3), x * 3)
    assert f.cache_info()["traces"] == 2          # one per value of the static k


def test_static_keywords_and_positionals_mix():
    f = qjit(scaled, static_argnames=("mode", "k"))
    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x, "sub", k=3), x - 3)
    np.testing.assert_array_equal(f(x, mode="sub"), x - 1)
    np.testing.assert_array_equal(f(x, k=5, mode="mul"), x * 5)
    np.testing.assert_array_equal(f(x), x)


def test_a_traced_keyword_after_an_unpassed_default():
    def g(x, mode="mul", y=None):
        return x * y if mode == "mul" else x + y
    f = qjit(g)
    x, y = np.arange(3.0), np.array([2.0, 3.0, 4.0])
    np.testing.assert_array_equal(f(x, y=y), x * y)
    np.testing.assert_array_equal(f(x, y=2 * y), x * 2 * y)
    assert f.cache_info()["traces"] == 1          # y is a traced keyword argument


def test_an_array_default_is_the_functions_own_value():
    def g(x, w=np.array([1.0, -2.0])):
        return x * w
    np.testing.assert_array_equal(qjit(g)(np.array([3.0, 4.0])), [3.0, -8.0])
    np.testing.assert_array_equal(qjit(g)(np.array([3.0, 4.0]), np.array([1.0, 1.0])), [3.0, 4.0])


def test_keyword_only_static_argument():
    def g(x, *, k, mode="mul"):
        return x * k if mode == "mul" else x
    np.testing.assert_array_equal(qjit(g, static_argnames="k")(np.ones(2), k=5), [5.0, 5.0])
    np.testing.assert_array_equal(qjit(g)(np.ones(2), k=5), [5.0, 5.0])


def test_an_unhashable_static_keyword_is_named():
    with pytest.raises(TypeError, match="static argument k of type list is not hashable"):
        qjit(scaled, static_argnames="k")(np.ones(2), k=[1])


class Scaler:
    def __init__(self, s):
        self.s = s

    def __hash__(self):
        return hash(self.s)

    def __eq__(self, other):
        return isinstance(other, Scaler) and other.s == self.s

    @functools.partial(qjit, static_argnums=0)
    def apply(self, x):
        return jnp.sin(x) * self.s


class Affine:
    def __init__(self, a, b):
        self.a, self.b = a, b

    @qjit
    def __call__(self, x):
        return self.a * x + self.b


dynjax.register_pytree_node(Affine, lambda p: ((p.a, p.b), None), lambda aux, ch: Affine(*ch))


def test_qjit_decorates_a_method_with_static_self():
    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(Scaler(3.0).apply(x), np.sin(x) * 3.0)
    np.testing.assert_allclose(Scaler(-1.0).apply(x), -np.sin(x))
    np.testing.assert_allclose(Scaler.apply(Scaler(2.0), x), np.sin(x) * 2.0)
    assert isinstance(Scaler.__dict__["apply"], dynjax.qjit(lambda x: x).__class__)
    assert Scaler(3.0).apply.jaxpr is not None      # introspection through the bound method


def test_qjit_decorates_a_method_of_a_pytree_class():
    x = np.arange(3.0)
    np.testing.assert_array_equal(Affine(np.float64(2.0), np.float64(1.0))(x), 2 * x + 1)
    np.testing.assert_array_equal(Affine(np.float64(-1.0), np.float64(0.5))(x), -x + 0.5)


def test_traceback_filter_recognises_the_package_not_a_folder_named_dynjax(tmp_path):
    """A clone sits in a folder named dynjax: a user's file there is still the user's."""
    folder = tmp_path / "dynjax" / "tests"
    folder.mkdir(parents=True)
    script = folder / "user_code.py"
    script.write_text(
        "import numpy as np, traceback, dynjax.numpy as jnp\n"
        "from dynjax import qjit\n"
        "def bad(x):\n"
        "    return x + jnp.ones(3)   # the user's line\n"
        "try:\n"
        "    qjit(bad, abstracted_axes={0: 'n'})(np.ones(2))\n"
        "except TypeError as e:\n"
        "    print(traceback.extract_tb(e.__traceback__)[-1].line)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("# the user's line")
