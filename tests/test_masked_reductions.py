"""Mask selections that only feed reductions run as masked reductions
(``execution/masked_reductions.py``): results against numpy at n in {0, 1, 5, 1000} (mixed
masks, and all-false / all-true ones), on the exact and the padded tier, eagerly, and as the
rewritten program evaluated by the numpy impls (what tier 0 runs); the rewritten program has no
``gather`` / ``scatter`` left; patterns the rewrite must leave alone keep them; ``grad`` and
``vmap`` of such programs."""
from __future__ import annotations

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax.execution.masked_reductions import rewrite_masked_reductions
from helpers import assert_same, fd_grad, implicit_dims, run_jaxpr

SIZES = (0, 1, 5, 1000)


def _floats(rng, n, *rest):
    return rng.standard_normal((n,) + rest)


def _with_nan(rng, n):
    """Floats where every non-positive element is NaN, -inf or a negative number."""
    x = rng.standard_normal(n)
    bad = np.where(x <= 0)[0]
    x[bad[::3]] = np.nan
    x[bad[1::3]] = -np.inf
    return x


def _empty_max(v):
    return np.max(v, initial=-np.inf) if v.dtype.kind == "f" else np.max(v, initial=np.iinfo(v.dtype).min)


def _mean(v):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(v) / np.float64(v.size)


def _var(v):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum((v - _mean(v)) ** 2) / np.float64(v.size)


# name, dynjax function, numpy oracle, arguments for size n (rng, n), abstracted axes, rtol
AX1 = ({0: "n"},)
AX2 = ({0: "n"}, {0: "n"})
CASES = [
    ("sum_squares", lambda x: jnp.sum(x[x > 0] ** 2), lambda x: np.sum(x[x > 0] ** 2),
     lambda r, n: (_floats(r, n),), AX1, 1e-12),
    ("max", lambda x: jnp.max(x[x < 0.5]), lambda x: _empty_max(x[x < 0.5]),
     lambda r, n: (_floats(r, n),), AX1, 0),
    ("min_of_exp", lambda x: jnp.min(jnp.exp(x[x > 0])), lambda x: np.min(np.exp(x[x > 0]), initial=np.inf),
     lambda r, n: (_floats(r, n),), AX1, 1e-15),
    ("prod", lambda x: jnp.prod(x[jnp.abs(x) < 1] * 0.5 + 1.0),
     lambda x: np.prod(x[np.abs(x) < 1] * 0.5 + 1.0), lambda r, n: (_floats(r, n),), AX1, 1e-12),
    ("mean", lambda x: jnp.mean(x[x > 0]), lambda x: _mean(x[x > 0]), lambda r, n: (_floats(r, n),), AX1, 1e-12),
    ("var", lambda x: jnp.var(x[x > 0]), lambda x: _var(x[x > 0]), lambda r, n: (_floats(r, n),), AX1, 1e-10),
    ("two_selections", lambda x, y: jnp.sum(x[y > 0] * y[y > 0] - 2.0),
     lambda x, y: np.sum(x[y > 0] * y[y > 0] - 2.0), lambda r, n: (_floats(r, n), _floats(r, n)), AX2, 1e-12),
    ("nan_unselected_log", lambda x: jnp.sum(jnp.log(x[x > 0])), lambda x: np.sum(np.log(x[x > 0])),
     lambda r, n: (_with_nan(r, n),), AX1, 1e-12),
    ("nan_unselected_max", lambda x: jnp.max(x[x > -1] * 2), lambda x: _empty_max(x[x > -1] * 2),
     lambda r, n: (_with_nan(r, n),), AX1, 0),
    ("int64", lambda x: jnp.sum(x[x % 3 == 0] * 2 + 1), lambda x: np.sum(x[x % 3 == 0] * 2 + 1),
     lambda r, n: (r.integers(-50, 50, n),), AX1, 0),
    ("int32_max", lambda x: jnp.max(x[x > 10]), lambda x: _empty_max(x[x > 10]),
     lambda r, n: (r.integers(-50, 50, n).astype(np.int32),), AX1, 0),
    ("float32", lambda x: jnp.sum(x[x > 0] ** 2), lambda x: np.sum(x[x > 0] ** 2, dtype=np.float32),
     lambda r, n: (_floats(r, n).astype(np.float32),), AX1, 1e-4),
    ("complex", lambda x: jnp.sum(x[x.real > 0] * 1j), lambda x: np.sum(x[x.real > 0] * 1j),
     lambda r, n: (_floats(r, n) + 1j * _floats(r, n),), AX1, 1e-12),
    ("bool_count", lambda x: jnp.sum(x[x > -1] > 0), lambda x: np.sum(x[x > -1] > 0),
     lambda r, n: (_floats(r, n),), AX1, 0),
    ("mask_2d", lambda x: jnp.sum(x[x > 0] ** 2), lambda x: np.sum(x[x > 0] ** 2),
     lambda r, n: (_floats(r, n, 3),), ({0: "n", 1: "k"},), 1e-12),
    ("rows_max", lambda x, y: jnp.max(x[y > 0], axis=0), lambda x, y: np.max(x[y > 0], axis=0, initial=-np.inf),
     lambda r, n: (_floats(r, n, 3), _floats(r, n)), AX2, 0),
    ("compress", lambda x, y: jnp.sum(jnp.compress(y > 0, x) ** 2), lambda x, y: np.sum(np.compress(y > 0, x) ** 2),
     lambda r, n: (_floats(r, n), _floats(r, n)), AX2, 1e-12),
    ("extract", lambda x, y: jnp.min(jnp.extract(y > 0, x)), lambda x, y: np.min(np.extract(y > 0, x), initial=np.inf),
     lambda r, n: (_floats(r, n), _floats(r, n)), AX2, 0),
]


def _arg_sets(make, rng):
    """Mixed masks at every size; at n = 5 also data whose masks select nothing / everything
    (every argument scaled: positive, negative)."""
    sets = [make(rng, n) for n in SIZES]
    base = make(rng, 5)
    for sign in (-1, 1):
        sets.append(tuple(sign * np.abs(a.real) + (sign * 100 if a.dtype.kind in "iu" else sign * 3)
                          if a.dtype.kind != "c" else sign * (np.abs(a.real) + 3) + 1j * a.imag
                          for a in base))
    return [tuple(np.asarray(a, b.dtype) for a, b in zip(s, base)) for s in sets]


def _check(actual, expected, rtol, where):
    expected = np.asarray(expected)
    assert_same(np.asarray(actual), expected, rtol=rtol, atol=1e-12 if rtol else 0.0, where=where)


def _check_eager(fn, args, expected, rtol, name):
    """dynjax outside qjit: as JAX, max / min of an empty array (known empty there) raise."""
    try:
        got = fn(*args)
    except ValueError as e:
        expected = np.asarray(expected)
        lo, hi = (-np.inf, np.inf) if expected.dtype.kind == "f" else \
            (np.iinfo(expected.dtype).min, np.iinfo(expected.dtype).max)
        assert "zero-size array" in str(e) and np.all((expected == lo) | (expected == hi)), e
        return
    _check(got, expected, rtol, f"{name} eagerly")


def _program_jaxpr(f):
    """The program a qjit function runs (the rewritten trace)."""
    return f._entry().program.jaxpr


def _names(jaxpr):
    return {e.primitive.name for e in jaxpr.eqns}


@pytest.mark.parametrize("tier", ["exact", "padded"])
@pytest.mark.parametrize("name,fn,np_fn,make,axes,rtol", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, fn, np_fn, make, axes, rtol, tier, monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", tier)
    rng = np.random.default_rng(7)
    sets = _arg_sets(make, rng)
    f = dynjax.qjit(fn, abstracted_axes=axes)
    for args in sets:
        expected = np_fn(*args)
        _check(f(*args), expected, rtol, f"{name} ({tier}) at shapes {[a.shape for a in args]}")
        if tier == "exact":
            _check_eager(fn, args, expected, rtol, name)
    assert f.cache_info()["traces"] == 1
    program = _program_jaxpr(f)
    assert not _names(program) & {"gather", "scatter"}, program
    if tier == "exact":
        # the rewritten program evaluated by the numpy impls (tier 0), from one trace at every size
        closed = rewrite_masked_reductions(dynjax.make_jaxpr(fn, abstracted_axes=axes)(*sets[0]))
        dynjax.check_jaxpr(closed)
        for args in sets:
            out, = run_jaxpr(closed, implicit_dims(args, axes), args)
            _check(out, np_fn(*args), rtol, f"{name}: rewritten program, evaluated eagerly")


def test_rewritten_program_keeps_the_count():
    """mean needs the number of selected elements: it stays computed, as a value, not a size."""
    closed = rewrite_masked_reductions(dynjax.make_jaxpr(lambda x: jnp.mean(x[x > 0]), abstracted_axes=AX1)(np.ones(3)))
    names = _names(closed.jaxpr)
    assert "cumsum" not in names and "gather" not in names and "select_n" in names
    assert all(not isinstance(d, dynjax.core.jaxpr.Var) or d is closed.jaxpr.invars[0]
               for e in closed.jaxpr.eqns for v in e.outvars for d in v.aval.shape)


def _selection_and_sum(x):
    s = x[x > 0]
    return s, jnp.sum(s ** 2)


LEFT_ALONE = [
    ("returned", _selection_and_sum, lambda x: (x[x > 0], np.sum(x[x > 0] ** 2))),
    ("cumulative", lambda x: jnp.sum(jnp.cumsum(x[x > 0])), lambda x: np.sum(np.cumsum(x[x > 0]))),
    ("sorted", lambda x: jnp.max(jnp.sort(x[x > 0]) * (jnp.arange(jnp.sum(x > 0)) + 1.0)),
     lambda x: np.max(np.sort(x[x > 0]) * (np.arange(np.sum(x > 0)) + 1.0), initial=-np.inf)),
]


@pytest.mark.parametrize("name,fn,np_fn", LEFT_ALONE, ids=[c[0] for c in LEFT_ALONE])
def test_other_uses_keep_the_compaction(name, fn, np_fn):
    """A selection returned to the user or used by anything but an elementwise chain keeps its
    scatter and gather (the rewrite changes nothing), and the results stay right."""
    rng = np.random.default_rng(3)
    f = dynjax.qjit(fn, abstracted_axes=AX1)
    for n in SIZES:
        x = rng.standard_normal(n)
        got, want = dynjax.tree_flatten(f(x))[0], dynjax.tree_flatten(np_fn(x))[0]
        for g, w in zip(got, want):
            _check(g, w, 1e-12, f"{name} at n={n}")
    closed = f.jaxpr
    assert rewrite_masked_reductions(closed) is closed
    assert {"gather", "scatter"} <= _names(_program_jaxpr(f))


def _sum_squares_positive(x):
    return jnp.sum(x[x > 0] ** 2)


def test_grad():
    rng = np.random.default_rng(11)
    f = dynjax.qjit(_sum_squares_positive, abstracted_axes=AX1)
    g_outer = dynjax.grad(f)
    g_inner = dynjax.qjit(dynjax.grad(_sum_squares_positive), abstracted_axes=AX1)
    for n in (1, 5, 1000):
        x = rng.standard_normal(n)
        expected = 2 * x * (x > 0)
        _check(g_outer(x), expected, 1e-12, f"grad(qjit(f)) at n={n}")
        _check(g_inner(x), expected, 1e-12, f"qjit(grad(f)) at n={n}")
    x = rng.standard_normal(5)
    _check(g_inner(x), fd_grad(lambda v: np.sum(v[v > 0] ** 2), x), 1e-6, "finite differences")


def test_vmap_and_nested_loop():
    """Under vmap (the mask unbatched) the rewrite applies to the batched program; a selection
    inside a loop body is left to the general path. Both right."""
    rng = np.random.default_rng(5)
    x, scale = rng.standard_normal(6), rng.standard_normal(4)
    f = dynjax.qjit(dynjax.vmap(lambda s, v: s * _sum_squares_positive(v), in_axes=(0, None)),
                    abstracted_axes=({}, {0: "n"}))
    _check(f(scale, x), scale * np.sum(x[x > 0] ** 2), 1e-12, "vmap")
    assert "gather" not in _names(_program_jaxpr(f))

    def looped(x):
        def body(i, acc):
            y = x * (i + 1.0) - 1.0
            return acc + jnp.sum(y[y > 0] ** 2)
        return dynjax.lax.fori_loop(0, 3, body, 0.0)

    g = dynjax.qjit(looped, abstracted_axes=AX1)
    for n in (0, 5):
        v = rng.standard_normal(n)
        want = sum(np.sum(((v * (i + 1.0) - 1.0)[(v * (i + 1.0) - 1.0) > 0]) ** 2) for i in range(3))
        _check(g(v), want, 1e-12, f"loop at n={n}")


@pytest.mark.parametrize("policy", ["auto", "exact"])
def test_runs_as_the_where_form(policy, monkeypatch):
    """The rewritten program is planned as the `where` form is: one segment, no host step,
    the same executables (one per distinct size with the exact tier; with the automatic one,
    the first size exact and the others by bucket, as for any program without sizes from data)."""
    monkeypatch.setenv("DYNJAX_TIERS", policy)
    masked = dynjax.qjit(_sum_squares_positive, abstracted_axes=AX1)
    where = dynjax.qjit(lambda x: jnp.sum(jnp.where(x > 0, x, 0.0) ** 2), abstracted_axes=AX1)
    rng = np.random.default_rng(2)
    sizes = [50, 0, 1, 17, 50, 300]
    for n in sizes:
        x = rng.standard_normal(n)
        _check(masked(x), where(x), 1e-12, f"n={n}")
    from dynjax.execution import tiers
    tiers.wait_for_background()
    a, b = masked.cache_info(), where.cache_info()
    assert a["host_steps"] == 0 and len(masked._entry().program.steps) == 1
    for key in ("traces", "specializations", "host_steps"):
        assert a[key] == b[key], (key, a, b)

    def executables(info):   # compiled, or loaded from the disk cache (an earlier run's)
        return info["compilations"] + info["padded_compilations"] + info["disk_cache_hits"]
    assert executables(a) == executables(b), (a, b)
    if policy == "exact":
        assert a["specializations"] == len(set(sizes)) and a["exact_runs"] == len(sizes), a
