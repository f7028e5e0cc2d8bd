"""qjit: tracing and compilation caches, AOT, static arguments, argument checking, IR views."""
import collections
import warnings

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import ShapeDtypeStruct, for_loop, qjit, while_loop


@pytest.mark.usefixtures("exact_tier")
def test_overview_program_compiles_and_runs():
    @qjit
    def circuit(sz: int):
        a0 = jnp.ones([sz], dtype=float)

        @for_loop(0, 10, 1)
        def loop(i, a):
            return a + a0
        return a0 + loop(a0)

    assert circuit.cache_info()["traces"] == 1          # traced ahead of time
    for n in (0, 1, 5, 17):
        np.testing.assert_array_equal(circuit(n), np.full(n, 12.0))
    info = circuit.cache_info()
    assert info["traces"] == 1 and info["lowerings"] == 1 and info["compilations"] + info["disk_cache_hits"] == 4
    assert "tensor<?xf64>" in circuit.mlir and "stablehlo.while" in circuit.mlir
    assert "func.func public @main(%arg0: tensor<i64>)" in circuit.mlir
    main = [line for line in circuit.mlir_specialized.splitlines() if "@main(" in line]
    assert main and all("?" not in line for line in main)
    assert "HloModule" in circuit.hlo


@pytest.mark.usefixtures("exact_tier")
def test_one_trace_across_sizes():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return jnp.sum(jnp.sin(x) * 2)

    for n in (3, 7, 1000, 3):
        x = np.linspace(0, 1, n)
        np.testing.assert_allclose(f(x), np.sum(np.sin(x) * 2), rtol=1e-12)
    info = f.cache_info()
    assert info["traces"] == 1 and info["lowerings"] == 1
    assert info["specializations"] == 3        # 3 distinct sizes; the repeated size is a cache hit


def test_static_shapes_retrace_per_shape():
    @qjit
    def f(x):
        return x * 2

    f(np.ones(3))
    f(np.ones(4))
    f(np.ones(3))
    assert f.cache_info()["traces"] == 2


def test_shared_axis_names_share_one_dimension():
    @qjit(abstracted_axes={0: "n"})
    def add(a, b):
        return a + b

    np.testing.assert_array_equal(add(np.arange(4.0), np.ones(4)), np.arange(4.0) + 1)
    assert add.jaxpr.jaxpr.in_explicit == (False, True, True)
    with pytest.raises(ValueError, match="abstracted axis 'n' has size 4 .* but size 5"):
        add(np.ones(4), np.ones(5))


def test_catalyst_axes_forms():
    @qjit(abstracted_axes=(("n",), ("n", "m")))
    def f(a, b):
        return b.T @ a

    a, b = np.arange(3.0), np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(f(a, b), b.T @ a)
    np.testing.assert_allclose(f(np.ones(5), np.ones((5, 4))), np.full(4, 5.0))
    assert f.cache_info()["traces"] == 1

    @qjit(abstracted_axes=({0: "n"}, {1: "n"}))
    def g(a, b):
        return a + b[0]

    np.testing.assert_allclose(g(np.ones(3), np.ones((2, 3))), np.full(3, 2.0))


def test_static_argnums_and_argnames():
    @qjit(static_argnums=1)
    def f(x, k):
        return x * k

    np.testing.assert_array_equal(f(np.ones(2), 3), [3.0, 3.0])
    np.testing.assert_array_equal(f(np.ones(2), 4), [4.0, 4.0])
    assert f.cache_info()["traces"] == 2

    @qjit(static_argnames="mode")
    def g(x, mode="double"):
        return x * 2 if mode == "double" else x + 1

    np.testing.assert_array_equal(g(np.ones(2), mode="inc"), [2.0, 2.0])
    np.testing.assert_array_equal(g(np.ones(2)), [2.0, 2.0])


@pytest.mark.usefixtures("exact_tier")
def test_integer_arguments_feed_shapes_but_not_loop_counts():
    @qjit
    def f(n: int, k: int):
        @for_loop(0, k, 1)
        def loop(i, a):
            return a + i
        return loop(jnp.zeros(n))

    for k in range(4):
        np.testing.assert_array_equal(f(3, k), np.full(3, sum(range(k)), dtype=float))
    assert f.cache_info()["specializations"] == 1   # k is a run-time value, n is baked in


def test_aot_annotations():
    @qjit
    def f(x: ShapeDtypeStruct((None, 3), float), s: float):
        return x.sum(axis=1) * s

    assert f.cache_info()["traces"] == 1
    np.testing.assert_allclose(f(np.ones((4, 3)), 2.0), np.full(4, 6.0))
    np.testing.assert_allclose(f(np.ones((2, 3), dtype=np.int32), 1.0), np.full(2, 3.0))  # safe cast
    assert f.cache_info()["traces"] == 1
    with pytest.raises(TypeError, match="rank 1"):
        f(np.ones(3), 1.0)
    with pytest.raises(TypeError, match="cannot be cast safely"):
        f(np.ones((2, 3), dtype=complex), 1.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        np.testing.assert_allclose(f(np.ones((2, 5)), 1.0), np.full(2, 5.0))
    assert any("contradicts its annotation" in str(x.message) for x in w)
    assert f.cache_info()["traces"] == 2


def test_argument_errors_name_the_argument():
    @qjit(abstracted_axes=(("n",),))
    def f(x):
        return x + 1

    with pytest.raises(ValueError, match="argument 0: abstracted_axes names 1 axes but the argument has rank 0"):
        f(np.float64(1.0))
    with pytest.raises(TypeError, match="argument 0"):
        f("hello")
    with pytest.raises(TypeError, match="argument 0"):
        f(np.ones(3, dtype=np.longdouble))

    @qjit
    def g(n: int):
        return jnp.ones(n + 1)

    with pytest.raises(ValueError, match="negative"):
        g(-3)

    @qjit
    def h(n: int):
        return jnp.zeros((2, n))

    with pytest.raises(ValueError, match="argument 0 .* negative"):
        h(-1)


def test_pytrees_in_and_out():
    Point = collections.namedtuple("Point", "x y")

    @qjit(abstracted_axes=({0: "n"},))
    def f(p):
        return {"sum": p.x + p.y, "parts": (p.x, None, [p.y * 2])}

    out = f(Point(np.arange(3.0), np.ones(3)))
    np.testing.assert_array_equal(out["sum"], np.arange(3.0) + 1)
    assert out["parts"][1] is None
    np.testing.assert_array_equal(out["parts"][2][0], np.full(3, 2.0))


def test_nested_qjit_is_inlined():
    @qjit
    def inner(x):
        return x * 3

    @qjit(abstracted_axes={0: "n"})
    def outer(x):
        return inner(x) + 1

    np.testing.assert_array_equal(outer(np.ones(4)), np.full(4, 4.0))
    assert [e.primitive.name for e in outer.jaxpr.eqns] == ["mul", "add"]
    assert inner.cache_info()["traces"] == 0


@pytest.mark.parametrize("policy", ["auto", "exact"])
def test_growing_loop(policy, monkeypatch):
    """A while_loop whose carried array doubles: one capacity program (auto), or driven from
    the host, one executable per carried shape (exact)."""
    monkeypatch.setenv("DYNJAX_TIERS", policy)

    @qjit(abstracted_axes=({0: "n"}, None))
    def grow(x, limit):
        @while_loop(lambda a: a.shape[0] < limit)
        def loop(a):
            return jnp.concatenate([a, a * 2])
        return loop(x)

    def ref(x, limit):
        while x.shape[0] < limit:
            x = np.concatenate([x, x * 2])
        return x

    for n, limit in [(1, 1), (1, 2), (3, 10), (2, 33), (0, 0)]:
        x = np.arange(1.0, n + 1)
        np.testing.assert_array_equal(grow(x, limit), ref(x, limit))
    info = grow.cache_info()
    assert info["traces"] == 1 and "stablehlo.while" in grow.mlir
    if policy == "exact":
        assert info["host_steps"] >= 4 and info["padded_runs"] == 0
    else:
        assert info["host_steps"] == 0 and info["padded_runs"] == 5


def test_data_dependent_size():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        k = jnp.sum(x > 0)
        return jnp.arange(k) * 2

    for x in (np.array([1.0, -1.0, 2.0]), np.array([-1.0]), np.ones(6)):
        np.testing.assert_array_equal(f(x), np.arange(np.sum(x > 0)) * 2)


def test_results_are_numpy_and_independent_of_inputs():
    @qjit(abstracted_axes={0: "n"})
    def f(x):
        return x + 0.0

    x = np.arange(4.0)
    y = f(x)
    x[:] = -1
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, np.arange(4.0))


def test_resizing_loop_that_keeps_sizes_is_one_program():
    @qjit
    def f(sz: int):
        a0 = jnp.ones([sz])

        @for_loop(0, 10, 1, allow_array_resizing=True)
        def loop(i, a):
            return a * 2
        b = loop(a0)
        return b + jnp.ones(b.shape[0])

    np.testing.assert_array_equal(f(3), np.full(3, 1025.0))
    assert f.cache_info()["host_steps"] == 0 and f.cache_info()["compilations"] + f.cache_info()["disk_cache_hits"] == 1


def test_lists_named_by_abstracted_axes_are_arrays():
    """A list of numbers whose abstracted_axes entry names axes is an array: one trace for
    every length (and for nested lists, every shape); other lists stay pytrees."""
    f = qjit(lambda x, y: jnp.sum(x * x) + y, abstracted_axes=({0: "n"}, None))
    for xs in ([1.0, 2.0], [3.0, -1.0, 0.5], [], [2.5]):
        assert f(xs, 1.0) == sum(v * v for v in xs) + 1.0
    assert f.cache_info()["traces"] == 1
    g = qjit(lambda m: m.T @ m, abstracted_axes={0: "n", 1: "k"})
    for rows in ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0, 3.0]], ((0.5,), (1.5,), (2.0,))):
        want = np.array(rows).T @ np.array(rows)
        np.testing.assert_array_equal(g(rows), want)
    assert g.cache_info()["traces"] == 1
    assert "b:f64[a]" in str(dynjax.make_jaxpr(lambda x: jnp.sum(x), abstracted_axes={0: "n"})([1.0, 2.0]))
    # without abstracted axes, or with a list of arrays, a list is a pytree (JAX's rule)
    h = qjit(lambda p: p[0] + 2 * p[1])
    assert h([1.0, 3.0]) == 7.0 and h((1.0, 3.0)) == 7.0
    k = qjit(lambda p: p[0] - p[1], abstracted_axes={0: "n"})
    np.testing.assert_array_equal(k([np.arange(3.0), np.ones(3)]), np.arange(3.0) - 1)
    with pytest.raises(ValueError, match="argument 0 is a list .* rows have different lengths"):
        g([[1.0, 2.0], [3.0]])


def test_new_sizes_of_positional_arrays_find_their_trace_by_shape_class():
    # dtype, rank and the sizes abstracted_axes does not name pick the trace; the named
    # sizes do not (each call's results checked against numpy)
    f = qjit(lambda x, y: x / 3 + y.sum(), abstracted_axes=({0: "n"}, None))
    calls = [((3, 2), np.float64, 4), ((5, 2), np.float64, 4), ((5, 2), np.float32, 4),
             ((7, 2), np.float32, 4), ((7, 3), np.float64, 4), ((2, 2), np.float64, 5), ((9, 2), np.float64, 4)]
    for shape, dtype, m in calls:
        x = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
        y = np.linspace(0, 1, m).astype(dtype)
        got, want = f(x, y), x / 3 + y.sum()
        assert got.dtype == want.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype is np.float32 else 1e-14)
    # traces: f64 (n, 2) + (4,); f32 (n, 2) + (4,); f64 (n, 3) + (4,); f64 (n, 2) + (5,)
    assert f.cache_info()["traces"] == 4


def test_the_dispatch_table_runs_a_call_only_outside_a_trace_of_its_own_thread():
    # The fast path skips the thread-local trace stack while no thread traces
    # (core.trace.STAGING); a call made while tracing, on that thread, is inlined into the
    # trace, and a call on another thread meanwhile runs.
    import threading

    g = qjit(lambda x: x * 2.0 + 1.0)
    x = np.arange(3.0)
    np.testing.assert_array_equal(g(x), x * 2.0 + 1.0)   # its plan is in the table now
    runs = lambda: sum(g.cache_info()[k] for k in ("exact_runs", "padded_runs", "eager_runs", "host_runs"))  # noqa: E731
    before = runs()
    inside, release, seen = threading.Event(), threading.Event(), []

    @qjit
    def f(y):
        z = g(x)   # concrete arguments, inside f's trace: inlined, not run
        seen.append(type(z).__name__)
        inside.set()
        release.wait(10)
        return y + z

    tracer = threading.Thread(target=lambda: seen.append(f(np.ones(3))))
    tracer.start()
    try:
        assert inside.wait(10)
        assert runs() == before   # f's call of g was traced
        out = g(x)                 # this thread traces nothing: the call runs
        assert type(out) is np.ndarray and runs() == before + 1
        np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    finally:
        release.set()
        tracer.join(10)
    assert seen[0] != "ndarray"
    np.testing.assert_array_equal(seen[1], 1.0 + x * 2.0 + 1.0)
    np.testing.assert_array_equal(g(x), x * 2.0 + 1.0)
    assert runs() == before + 2
