"""Test helpers: run a function several ways and compare every result with numpy.

``check_three_ways(f, np_f, make_args, sizes, abstracted_axes=...)`` checks ``f`` against
the oracle ``np_f`` (plain numpy) on ``make_args(size)`` for every ``size``:

* ``eager``   - call ``f`` outside any trace (results must be numpy values);
* ``static``  - trace ``f`` once per size with ``make_jaxpr(f)`` and run ``eval_jaxpr``;
* ``dynamic`` - trace ``f`` ONCE (at the first size) with ``abstracted_axes`` and run that
  single jaxpr at every size; the implicit dimension values are computed here,
  independently of dynjax, from the abstracted-axes spec.

Each way is a function in ``WAYS``; a compiled way (``qjit``) plugs in with
``WAYS["compiled"] = run_compiled``. A way has the signature
``run(f, arg_sets, abstracted_axes, static_argnums) -> [flat explicit outputs per arg set]``.
Every jaxpr built is checked with ``dynjax.check_jaxpr``; outputs are compared with
``np.testing.assert_allclose(strict=True)`` (values, shape and dtype).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

import numpy as np

import dynjax


# --- the implicit dimension values, computed from the abstracted-axes spec -----------------------
def _arg_specs(abstracted_axes, nargs):
    if abstracted_axes is None:
        return [None] * nargs
    if isinstance(abstracted_axes, dict):
        return [abstracted_axes] * nargs
    specs = list(abstracted_axes)
    return specs + [None] * (nargs - len(specs))


def _named_axes(spec, ndim):
    if spec is None or ndim == 0:
        return []
    if isinstance(spec, dict):
        return sorted((int(ax) % ndim, name) for ax, name in spec.items())
    return [(i, name) for i, name in enumerate(spec) if name is not None]


def implicit_dims(args: Sequence[Any], abstracted_axes) -> List[int]:
    """One value per distinct axis name, in order of first appearance (int names are fresh)."""
    keys: List[Any] = []
    values: List[int] = []
    for arg, spec in zip(args, _arg_specs(abstracted_axes, len(args))):
        shape = np.shape(arg)
        for ax, name in _named_axes(spec, len(shape)):
            key = name if isinstance(name, str) else object()
            if key in keys:
                assert values[keys.index(key)] == shape[ax], f"axis {name!r} used with two sizes"
            else:
                keys.append(key)
                values.append(shape[ax])
    return values


# --- running a jaxpr -------------------------------------------------------------------------------
def _dynamic_args(args, static_argnums):
    return [a for i, a in enumerate(args) if i not in static_argnums]


def _flat(args):
    leaves, _ = dynjax.tree_flatten(list(args))
    return leaves


def run_jaxpr(closed, implicit, args) -> list:
    """``eval_jaxpr`` on expanded args; checks the implicit outputs against the explicit shapes
    and returns the explicit outputs."""
    jaxpr = closed.jaxpr
    expanded = list(implicit) + _flat(args)
    outs = dynjax.eval_jaxpr(jaxpr, closed.consts, *expanded)
    assert len(outs) == len(jaxpr.out_explicit)
    for out, (aval, _) in zip(outs, jaxpr.out_type):
        for actual, d in zip(np.shape(out), aval.shape):
            if isinstance(d, dynjax.InDBIdx):
                d = expanded[d.val]
            elif isinstance(d, dynjax.OutDBIdx):
                d = outs[d.val]
            assert int(d) == actual, f"output shape {np.shape(out)} disagrees with its type {aval}"
    return [o for o, e in zip(outs, jaxpr.out_explicit) if e]


def run_eager(f, arg_sets, abstracted_axes, static_argnums):
    results = []
    for args in arg_sets:
        outs, _ = dynjax.tree_flatten(f(*args))
        for o in outs:
            assert isinstance(o, (np.ndarray, np.generic)), f"eager result is a {type(o).__name__}"
        results.append(outs)
    return results


def run_static(f, arg_sets, abstracted_axes, static_argnums):
    results = []
    for args in arg_sets:
        closed = dynjax.make_jaxpr(f, static_argnums=static_argnums)(*args)
        dynjax.check_jaxpr(closed)
        results.append(run_jaxpr(closed, [], _dynamic_args(args, static_argnums)))
    return results


def run_dynamic(f, arg_sets, abstracted_axes, static_argnums):
    closed = dynjax.make_jaxpr(f, static_argnums=static_argnums,
                               abstracted_axes=abstracted_axes)(*arg_sets[0])
    dynjax.check_jaxpr(closed)
    results = []
    for args in arg_sets:
        dyn = _dynamic_args(args, static_argnums)
        implicit = implicit_dims(dyn, abstracted_axes)
        n_implicit = closed.jaxpr.in_explicit.count(False)
        assert n_implicit == len(implicit), f"jaxpr has {n_implicit} implicit inputs, expected {len(implicit)}"
        results.append(run_jaxpr(closed, implicit, dyn))
    return results


WAYS: Dict[str, Callable] = {"eager": run_eager, "static": run_static, "dynamic": run_dynamic}


# --- comparing -------------------------------------------------------------------------------------
def assert_same(actual, expected, rtol=1e-7, atol=0.0, where=""):
    """Same shape, dtype and (approximately) values as the numpy result."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != numpy's {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, strict=True, err_msg=where)


def check_three_ways(f: Callable, np_f: Callable, make_args: Callable, sizes: Sequence,
                     abstracted_axes=None, static_argnums=(), ways=None, rtol=1e-7, atol=0.0):
    """Check ``f(*make_args(s))`` against ``np_f(*make_args(s))`` for every size ``s``, every way."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)
    arg_sets = [tuple(make_args(s)) for s in sizes]
    expected = []
    for args in arg_sets:
        leaves, _ = dynjax.tree_flatten(np_f(*args))
        expected.append(leaves)
    for name in (ways or WAYS):
        results = WAYS[name](f, arg_sets, abstracted_axes, static_argnums)
        for size, got, want in zip(sizes, results, expected):
            assert len(got) == len(want), f"{name} at size {size}: {len(got)} outputs, numpy gives {len(want)}"
            for k, (g, w) in enumerate(zip(got, want)):
                assert_same(g, w, rtol, atol, where=f"way={name} size={size} output={k}")


def jaxpr_text(f, *args, **kw) -> str:
    """The printed jaxpr of ``f`` (checked with ``check_jaxpr``)."""
    closed = dynjax.make_jaxpr(f, **kw)(*args)
    dynjax.check_jaxpr(closed)
    return str(closed)


# Where dynjax's promotion (JAX's lattice) and numpy's differ among the dtypes these helpers'
# users mix: an integer with a float stays that float (numpy widens to float64). Written out
# by hand from the lattice's definition, not computed by dynjax.
LATTICE_NOT_NUMPY = {
    frozenset({np.dtype(np.float32), np.dtype(np.int64)}): np.dtype(np.float32),
    frozenset({np.dtype(np.float32), np.dtype(np.int32)}): np.dtype(np.float32),
    frozenset({np.dtype(np.float32), np.dtype(np.uint32)}): np.dtype(np.float32),
    frozenset({np.dtype(np.float32), np.dtype(np.uint64)}): np.dtype(np.float32),
    frozenset({np.dtype(np.float16), np.dtype(np.int16)}): np.dtype(np.float16),
    frozenset({np.dtype(np.float16), np.dtype(np.int32)}): np.dtype(np.float16),
    frozenset({np.dtype(np.float16), np.dtype(np.int64)}): np.dtype(np.float16),
}


def numpy_with_lattice(np_f: Callable, *dtypes) -> Callable:
    """``np_f`` whose float results are cast to dynjax's promoted dtype where the two operand
    dtypes are a pair on which JAX's lattice and numpy disagree."""
    want = LATTICE_NOT_NUMPY.get(frozenset(np.dtype(d) for d in dtypes))
    if want is None:
        return np_f

    def f(*args):
        out = np_f(*args)
        if isinstance(out, (np.ndarray, np.generic)) and out.dtype.kind == "f":
            return np.asarray(out).astype(want)
        return out
    return f


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of a scalar function of one array (the gradient oracle)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


#: XLA's defaults for the options the suite changes (conftest.py): for the tests of rounding,
#: as ``DYNJAX_XLA_OPTIONS`` (the ``xla_defaults`` fixture) or jax's ``compiler_options``
XLA_DEFAULT_OPTIONS = {"xla_cpu_use_fusion_emitters": True, "xla_backend_optimization_level": 2}


def examples(n: int) -> int:
    """A property test's example count: ``n`` at the default hypothesis profile, scaled by the
    active profile's ``max_examples`` / 100 (``HYPOTHESIS_PROFILE=quick``: a quarter,
    ``thorough``: ten times; see conftest.py)."""
    from hypothesis import settings
    return max(1, round(n * settings.default.max_examples / 100))


def in_threads(work: Callable[[Any], None], args: Sequence[Any]) -> None:
    """Run ``work(a)`` for every ``a`` of ``args``, each on a thread of its own, all at once;
    re-raise the first failure once every thread has ended."""
    import threading
    errors = []

    def run(a):
        try:
            work(a)
        except BaseException as e:   # reported below, on the test's thread
            errors.append(e)
    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]

