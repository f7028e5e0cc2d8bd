"""Errors raised through grad / vmap / jvp / vjp / jacfwd / ... end their traceback at the
user's line (dynjax's frames filtered out; ``DYNJAX_TRACEBACK_FILTERING=off`` keeps them),
and trace errors of functions traced at decoration start with the user's file and line."""
import os
import re
import traceback

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import ShapeDtypeStruct, grad, jacfwd, jacrev, jvp, qjit, value_and_grad, vjp, vmap

HERE = os.path.abspath(__file__)
PACKAGE = os.path.dirname(os.path.abspath(dynjax.__file__)) + os.sep
SHAPES = re.escape("shapes float64[3] and float64[4] cannot be broadcast together: the shapes must match")


def mismatched(x):
    return jnp.sum(x + jnp.ones(4))   # the user's failing line


MISMATCHED_LINE = mismatched.__code__.co_firstlineno + 1

TRANSFORMS = {
    "grad": lambda x: grad(mismatched)(x),
    "value_and_grad": lambda x: value_and_grad(mismatched)(x),
    "vmap": lambda x: vmap(mismatched)(np.stack([x, x])),
    "jvp": lambda x: jvp(mismatched, (x,), (x,)),
    "vjp": lambda x: vjp(mismatched, x),
    "jacfwd": lambda x: jacfwd(mismatched)(x),
    "jacrev": lambda x: jacrev(mismatched)(x),
    "grad of vmap": lambda x: grad(lambda y: jnp.sum(vmap(mismatched)(y[None])))(x),
    "qjit": lambda x: qjit(mismatched)(x),
}


def _frames(e):
    return traceback.extract_tb(e.__traceback__)


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_error_in_the_users_function_ends_at_its_line(name):
    # (jacfwd evaluates eagerly: numpy's own broadcasting error, a ValueError)
    error, message = (ValueError, "broadcast") if name == "jacfwd" else (TypeError, SHAPES)
    with pytest.raises(error, match=message) as info:
        TRANSFORMS[name](np.ones(3))
    last = _frames(info.value)[-1]
    assert (last.filename, last.lineno, last.name) == (HERE, MISMATCHED_LINE, "mismatched")
    # of dynjax's frames, at most the one that re-raised the error is left
    inside = [f for f in _frames(info.value) if f.filename.startswith(PACKAGE)]
    assert len(inside) <= 1


BAD_CALLS = {
    "grad argnums": (lambda: grad(mismatched, argnums=5)(np.ones(3)), TypeError,
                     "argnums=5 requires at least 6 positional arguments"),
    "vmap in_axes": (lambda: vmap(mismatched, in_axes=3)(np.ones(3)), ValueError,
                     "vmap was requested to map its argument along axis 3"),
    "jvp tangents": (lambda: jvp(mismatched, (np.ones(3),), (np.ones(2),)), ValueError, "tangent"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_argument_ends_at_the_users_call(name):
    call, error, message = BAD_CALLS[name]
    with pytest.raises(error, match=message) as info:
        call()
    last = _frames(info.value)[-1]
    assert last.filename == HERE and last.name == "<lambda>"
    assert last.line.startswith(f'"{name}": (lambda: ')


def test_filtering_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("DYNJAX_TRACEBACK_FILTERING", "off")
    with pytest.raises(TypeError, match=SHAPES) as info:
        grad(mismatched)(np.ones(3))
    frames = _frames(info.value)
    assert frames[-1].filename.startswith(PACKAGE)   # raised inside dynjax, and shown so
    assert sum(f.filename.startswith(PACKAGE) for f in frames) > 5
    assert any((f.filename, f.lineno) == (HERE, MISMATCHED_LINE) for f in frames)


def test_decoration_time_trace_error_starts_with_the_users_line():
    with pytest.raises(TypeError) as info:
        @qjit
        def annotated(x: ShapeDtypeStruct((None,), np.float64)):
            return x + jnp.ones(4)   # the failing line
    failing = test_decoration_time_trace_error_starts_with_the_users_line.__code__.co_firstlineno + 4
    message = str(info.value)
    assert message.startswith(f"{HERE}:{failing} (in annotated, tracing annotated at its decoration, "
                              "from its annotations): shapes float64[")
    assert "cannot be broadcast together" in message
    last = _frames(info.value)[-1]
    assert (last.filename, last.lineno, last.name) == (HERE, failing, "annotated")
