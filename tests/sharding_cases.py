"""Sharding checks run in a process of their own with four CPU devices (the device count is
fixed when the process first uses XLA): ``python tests/sharding_cases.py`` prints one JSON
object, case name -> null (passed) or the failure. ``tests/test_sharding.py`` runs it."""
import numpy as np

import device_cases
import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402
from dynjax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def raises(exc, fn, *args, match=""):
    try:
        fn(*args)
    except exc as e:
        assert match in str(e), f"{type(e).__name__}: {e} does not mention {match!r}"
        return
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


@case
def device_inventory():
    devs = dynjax.devices()
    assert [d.id for d in devs] == [0, 1, 2, 3], devs
    assert dynjax.device_count() == 4 and dynjax.local_device_count() == 4
    assert dynjax.local_devices() == devs
    assert dynjax.process_index() == 0 and dynjax.process_count() == 1
    assert dynjax.default_backend() == "cpu" and all(d.platform == "cpu" for d in devs)
    raises(RuntimeError, dynjax.devices, "gpu", match="gpu")


@case
def mesh_and_specs():
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    assert dict(mesh.shape) == {"x": 2, "y": 2} and mesh.size == 4 and mesh.axis_names == ("x", "y")
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3]]
    shape = (8, 6)
    want = {  # spec -> device id -> (rows, cols) of its piece
        P("x", "y"): {0: ((0, 4), (0, 3)), 1: ((0, 4), (3, 6)), 2: ((4, 8), (0, 3)), 3: ((4, 8), (3, 6))},
        P("y", "x"): {0: ((0, 4), (0, 3)), 1: ((4, 8), (0, 3)), 2: ((0, 4), (3, 6)), 3: ((4, 8), (3, 6))},
        P(("x", "y")): {0: ((0, 2), (0, 6)), 1: ((2, 4), (0, 6)), 2: ((4, 6), (0, 6)), 3: ((6, 8), (0, 6))},
        P(None, "x"): {0: ((0, 8), (0, 3)), 1: ((0, 8), (0, 3)), 2: ((0, 8), (3, 6)), 3: ((0, 8), (3, 6))},
        P(): {d: ((0, 8), (0, 6)) for d in range(4)},
    }
    for spec, pieces in want.items():
        got = NamedSharding(mesh, spec).devices_indices_map(shape)
        got = {d.id: tuple((s.start, s.stop) for s in idx) for d, idx in got.items()}
        assert got == pieces, (spec, got)
    assert NamedSharding(mesh, P("x", "y")).shard_shape(shape) == (4, 3)
    assert NamedSharding(mesh, P()).is_fully_replicated
    assert NamedSharding(mesh, P("x")) == NamedSharding(mesh, P("x", None))
    raises(ValueError, NamedSharding, mesh, P("z"), match="'z'")
    raises(ValueError, NamedSharding, mesh, P("x", "x"), match="twice")
    raises(ValueError, dynjax.make_mesh, (4, 2), ("a", "b"), match="devices")
    raises(ValueError, Mesh, np.array(dynjax.devices()), ("a", "b"), match="axis names")
    single = SingleDeviceSharding(dynjax.devices()[2])
    assert single.is_fully_replicated and {d.id for d in single.device_set} == {2}


@case
def device_put_records_the_sharding():
    mesh = dynjax.make_mesh((4,), ("data",))
    sh = NamedSharding(mesh, P("data"))
    x = np.arange(24.0).reshape(12, 2)
    y = dynjax.device_put(x, sh)
    assert isinstance(y, np.ndarray) and y.sharding == sh and np.array_equal(y, x)
    assert [idx[0] for _, idx, _ in y.addressable_shards] == [slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 12)]
    z = y + 1
    assert type(z) is np.ndarray and np.array_equal(z, x + 1)
    x[0, 0] = 100.0
    assert y[0, 0] == 0.0   # a copy of its own
    tree = dynjax.device_put({"a": x, "b": [x, x]}, {"a": sh, "b": None})
    assert tree["a"].sharding == sh and type(tree["b"][0]) is np.ndarray
    raises(ValueError, dynjax.device_put, np.ones((10, 2)), sh, match="evenly")


def mlp_loss(params, x, y):
    w1, w2 = params
    h = jnp.tanh(x @ w1)
    return jnp.mean((h @ w2 - y) ** 2)


def mlp_loss_np(params, x, y):
    w1, w2 = params
    return np.mean((np.tanh(x @ w1) @ w2 - y) ** 2)


@case
def sharded_qjit_dynamic_batches():
    """A batch split over 4 devices, of sizes that do not divide 4 (and 0 and 1): one trace,
    numpy's values, and the per-device program gets a quarter of the padded batch."""
    mesh = dynjax.make_mesh((4,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((3, 8)), rng.standard_normal((8, 2)))

    @dynjax.qjit(abstracted_axes=({}, {0: "n"}, {0: "n"}), in_shardings=(None, rows, rows))
    def step(params, x, y):
        loss, g = dynjax.value_and_grad(mlp_loss)(params, x, y)
        return loss, g, jnp.tanh(x @ params[0]) * 2.0

    for n in (1, 8, 13, 100):
        x, y = rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
        loss, g, h = step(params, x, y)
        np.testing.assert_allclose(loss, mlp_loss_np(params, x, y), rtol=1e-12)
        eps = 1e-6
        for k in range(2):
            for idx in [(0, 0), (1, 1), (2, 1)]:
                if idx[0] >= params[k].shape[0] or idx[1] >= params[k].shape[1]:
                    continue
                p = [a.copy() for a in params]
                p[k][idx] += eps
                up = mlp_loss_np(p, x, y)
                p[k][idx] -= 2 * eps
                down = mlp_loss_np(p, x, y)
                np.testing.assert_allclose(g[k][idx], (up - down) / (2 * eps), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(h, np.tanh(x @ params[0]) * 2.0, rtol=1e-14)
        hlo = step._last.sharded.last_run.exe.partitioned_hlo()
        bound = step._last.sharded.last_run.program.in_shapes[-1][0]
        assert bound % 4 == 0 and bound >= n
        assert f"f64[{bound // 4},3]" in hlo, (n, bound, hlo[:2000])
    assert step.traces == 1, step.traces


@case
def sharded_reductions_see_only_the_logical_rows():
    mesh = dynjax.make_mesh((4,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    f = dynjax.qjit(lambda x: (x.max(axis=0), x.min(), jnp.prod(x + 1.0, axis=0), x.shape[0] * 1.0),
                    abstracted_axes=({0: "n"},), in_shardings=rows)
    for n in (1, 5, 13):
        x = -np.abs(np.random.default_rng(n).standard_normal((n, 3))) - 1.0   # padding zeros would win max
        mx, mn, pr, size = f(x)
        np.testing.assert_array_equal(mx, x.max(axis=0))
        np.testing.assert_array_equal(mn, x.min())
        np.testing.assert_allclose(pr, np.prod(x + 1.0, axis=0), rtol=1e-13)
        assert size == n


@case
def sharded_max_and_min_keep_nan():
    """A NaN in a sharded max / min reduction is NaN (the partitioned program counts NaNs
    beside the max: XLA:CPU's YNNPACK reductions would drop them), on rows of 64 and more."""
    mesh = dynjax.make_mesh((4,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    f = dynjax.qjit(lambda x: (x.max(axis=0), x.min(axis=1), x.max()),
                    abstracted_axes=({0: "n"},), in_shardings=rows)
    for n in (5, 130, 301):
        x = np.random.default_rng(n).standard_normal((n, 70))
        x[n // 2, 3] = np.nan
        x[n // 3, 5] = np.inf
        mx, mn, whole = f(x)
        np.testing.assert_array_equal(mx, x.max(axis=0))
        np.testing.assert_array_equal(mn, x.min(axis=1))
        assert np.isnan(whole)


@case
def out_shardings_and_2d_meshes():
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    a_sh = NamedSharding(mesh, P("x", None))
    b_sh = NamedSharding(mesh, P(None, "y"))
    out = NamedSharding(mesh, P("x", "y"))
    f = dynjax.qjit(lambda a, b: a @ b, abstracted_axes=({0: "n"}, {1: "m"}),
                    in_shardings=(a_sh, b_sh), out_shardings=out)
    rng = np.random.default_rng(3)
    for n, m in ((0, 2), (1, 1), (6, 3), (9, 10)):
        a, b = rng.standard_normal((n, 5)), rng.standard_normal((5, m))
        c = f(a, b)
        np.testing.assert_allclose(c, a @ b, rtol=1e-12)
        assert c.sharding == out and c.shape == (n, m)


@case
def static_dims_must_split_evenly():
    mesh = dynjax.make_mesh((4,), ("data",))
    f = dynjax.qjit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("data")))
    raises(ValueError, f, np.ones((6, 2)), match="does not divide")
    np.testing.assert_array_equal(f(np.ones((8, 2))), np.full((8, 2), 2.0))


@case
def arguments_put_with_a_sharding_run_sharded():
    mesh = dynjax.make_mesh((4,), ("data",))
    sh = NamedSharding(mesh, P("data"))
    g = dynjax.qjit(lambda x: jnp.cumsum(x) * 2)
    x = np.arange(16.0)
    got = g(dynjax.device_put(x, sh))
    np.testing.assert_allclose(got, np.cumsum(x) * 2)
    assert g._last.sharded is not None and g._last.sharded.last_run is not None
    assert np.array_equal(g(x), np.cumsum(x) * 2)   # a plain array runs on one device


@case
def shard_map_matches_jax():
    """Collectives over mesh axes inside shard_map, against jax's shard_map on its own four
    CPU devices (``check_vma=False``: jax cannot prove an all_gather's result replicated)."""
    import jax
    from jax.sharding import PartitionSpec as JP
    jax.config.update("jax_enable_x64", True)
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))

    def body(L):
        def f(blk, w):
            return (blk - L.pmean(blk, "x"), L.psum(blk.sum(), ("x", "y")),
                    L.all_gather(blk, "y", axis=1, tiled=True), L.psum(blk @ w, "y"),
                    blk * L.axis_index("y") + L.ppermute(blk, "x", [(0, 1), (1, 0)]))
        return f
    specs = dict(in_specs=(P("x", "y"), P("y", None)), out_specs=(P("x", "y"), P(), P("x", None), P("x", None),
                                                                  P("x", "y")))
    jspecs = dict(in_specs=(JP("x", "y"), JP("y", None)),
                  out_specs=(JP("x", "y"), JP(), JP("x", None), JP("x", None), JP("x", "y")))
    rng = np.random.default_rng(5)
    a, w = rng.standard_normal((8, 6)), rng.standard_normal((6, 3))
    want = jax.jit(jax.shard_map(body(jax.lax), mesh=jmesh, check_vma=False, **jspecs))(a, w)
    got = dynjax.shard_map(body(dynjax.lax), mesh=mesh, **specs)(a, w)
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(wv), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[3], a @ w, rtol=1e-12)


@case
def shard_map_in_a_sharded_qjit_with_dynamic_rows():
    """A row-split matmul with a psum over the contracted axis, in a qjit whose argument is
    laid out on the same mesh; the rows are dynamic (5 rows over the x axis are blocks of 3
    and 2: the psum over y combines blocks of one length) and one trace serves every size."""
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    mm = dynjax.shard_map(lambda x, w: dynjax.lax.psum(x @ w, "y"), mesh=mesh,
                          in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    f = dynjax.qjit(mm, abstracted_axes=({0: "n"}, {}), in_shardings=(NamedSharding(mesh, P("x", "y")), None))
    rng = np.random.default_rng(6)
    w = rng.standard_normal((6, 3))
    for n in (0, 2, 8, 14, 5):
        x = rng.standard_normal((n, 6))
        np.testing.assert_allclose(f(x, w), x @ w, rtol=1e-12, atol=1e-14)
    assert f.traces == 1


def _run_both(f, in_shardings, args, abstracted_axes):
    """``f`` (a shard_map) run eagerly (its vmap interpretation) and in a sharded qjit."""
    g = dynjax.qjit(f, abstracted_axes=abstracted_axes, in_shardings=in_shardings)
    return f(*args), g(*args), g


def _assert_per_device(g, *ops):
    """The sharded qjit's last program: a Shardy manual computation, the given collectives
    in the partitioned HLO."""
    run = g._last.sharded.last_run
    assert "sdy.manual_computation" in run.exe.text, run.exe.text[:3000]
    hlo = run.exe.partitioned_hlo()
    for op in ops:
        assert op in hlo, (op, hlo[:4000])
    return hlo


@case
def shard_map_lowers_every_collective():
    """Every collective in a per-device program on a mesh of 4: the dynamic batch rows whole
    (sizes 1, 8, 13), the columns split; values equal the vmap interpretation and numpy,
    and the partitioned program holds XLA's collectives and the per-device block shape."""
    mesh = dynjax.make_mesh((4,), ("i",))
    L = dynjax.lax

    def body(blk):
        wide = jnp.concatenate([blk, blk], axis=1)              # (n, 8): a multiple of 4
        return (L.psum(blk, "i"), L.pmax(blk, "i"), L.pmin(blk, "i"), L.pmean(blk, "i"),
                L.all_gather(blk, "i", axis=1, tiled=True), L.all_gather(blk, "i"),
                L.psum_scatter(wide, "i", scatter_dimension=1, tiled=True),
                L.all_to_all(blk, "i", 1, 1, tiled=True),
                L.ppermute(blk, "i", [(k, (k + 1) % 4) for k in range(4)]),
                L.pshuffle(blk, "i", [3, 2, 1, 0]) * L.axis_index("i"), L.axis_size("i") * blk)
    cols, whole = P(None, "i"), P()
    f = dynjax.shard_map(body, mesh=mesh, in_specs=cols, out_specs=(whole, whole, whole, whole, whole, whole, cols,
                                                                    cols, cols, cols, cols))
    rng = np.random.default_rng(11)
    for n in (1, 8, 13):
        x = rng.standard_normal((n, 16))
        eager, got, g = _run_both(f, NamedSharding(mesh, cols), (x,), ({0: "n"},))
        for e, o in zip(eager, got):
            np.testing.assert_allclose(o, e, rtol=1e-13, atol=1e-13)
        blocks = x.reshape(n, 4, 4).transpose(1, 0, 2)          # device k's block
        np.testing.assert_allclose(got[0], blocks.sum(0), rtol=1e-13)
        np.testing.assert_array_equal(got[1], blocks.max(0))
        np.testing.assert_array_equal(got[2], blocks.min(0))
        np.testing.assert_array_equal(got[4], x)
        np.testing.assert_array_equal(got[5], blocks)
        np.testing.assert_allclose(got[6], np.concatenate([blocks.sum(0)] * 2, axis=1), rtol=1e-13)
        np.testing.assert_array_equal(got[8], np.concatenate([blocks[(k - 1) % 4] for k in range(4)], axis=1))
        np.testing.assert_array_equal(got[9], np.concatenate([blocks[3 - k] * k for k in range(4)], axis=1))
    assert g.traces == 1
    hlo = _assert_per_device(g, "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                             "partition-id")
    assert "f64[16,4]" in hlo, hlo[:3000]     # a device's block: the padded rows, 4 of the 16 columns


@case
def shard_map_boolean_and_integer_collectives():
    """JAX's dtypes per device as in the vmap interpretation: psum counts booleans (int32),
    pmax / pmin of booleans are any / all, pmean of int8 is a float32, integers wrap."""
    mesh = dynjax.make_mesh((4,), ("i",))
    L = dynjax.lax

    def body(b, k):
        return (L.psum(b, "i"), L.pmax(b, "i"), L.pmin(b, "i"), L.all_gather(b, "i", axis=1, tiled=True),
                L.psum(k, "i"), L.pmean(k, "i"), L.pmax(k, "i"))
    cols, whole = P(None, "i"), P()
    f = dynjax.shard_map(body, mesh=mesh, in_specs=(cols, cols), out_specs=(whole,) * 7)
    rng = np.random.default_rng(13)
    for n in (1, 5):
        b = rng.integers(0, 2, (n, 8)).astype(bool)
        k = rng.integers(-128, 128, (n, 8)).astype(np.int8)
        eager, got, g = _run_both(f, (NamedSharding(mesh, cols),) * 2, (b, k), ({0: "n"}, {0: "n"}))
        bb, kb = b.reshape(n, 4, 2).transpose(1, 0, 2), k.reshape(n, 4, 2).transpose(1, 0, 2)
        total = kb.sum(0, dtype=np.int8)
        want = (bb.sum(0, dtype=np.int32), bb.any(0), bb.all(0), b, total,
                (total.astype(np.float32) / np.float32(4)), kb.max(0))
        for e, o, w in zip(eager, got, want):
            assert o.dtype == e.dtype == w.dtype, (o.dtype, e.dtype, w.dtype)
            np.testing.assert_array_equal(o, w)
            np.testing.assert_array_equal(e, w)
    _assert_per_device(g, "all-reduce", "all-gather")


@case
def shard_map_tuple_axes_dynamic_split_and_derivatives():
    """A (2, 2) mesh, rows split over both axes (dynamic: 8 and 16 rows), collectives over a
    tuple of axis names; jvp (a per-device program too) and grad through the shard_map."""
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    L = dynjax.lax
    rows = P(("x", "y"))

    def body(blk, w):
        h = jnp.tanh(blk @ w)
        return (L.psum(h.sum(axis=0), ("x", "y")), L.all_gather(h, ("x", "y"), tiled=True),
                h - L.pmean(h.mean(axis=0), ("x", "y")) + L.axis_index(("x", "y")),
                L.ppermute(h, "y", [(0, 1), (1, 0)]) + L.psum(h, "x"))
    f = dynjax.shard_map(body, mesh=mesh, in_specs=(rows, P()), out_specs=(P(), P(), rows, rows))
    rng = np.random.default_rng(12)
    w = rng.standard_normal((3, 2))
    for n in (8, 16):
        x = rng.standard_normal((n, 3))
        eager, got, g = _run_both(f, (NamedSharding(mesh, rows), None), (x, w), ({0: "n"}, {}))
        for e, o in zip(eager, got):
            np.testing.assert_allclose(o, e, rtol=1e-13, atol=1e-13)
        h = np.tanh(x @ w)
        np.testing.assert_allclose(got[0], h.sum(0), rtol=1e-12)
        np.testing.assert_allclose(got[1], h, rtol=1e-13)
        member = np.repeat(np.arange(4), n // 4)[:, None]
        np.testing.assert_allclose(got[2], h - h.mean(0) + member, rtol=1e-12, atol=1e-13)
    _assert_per_device(g, "all-reduce", "all-gather", "collective-permute")

    def loss(x, w):
        return (f(x, w)[0] ** 2).sum() + (f(x, w)[3] * x[:, :1]).sum()

    def loss_np(x, w):
        h = np.tanh(x @ w)
        hb = h.reshape(2, 2, -1, 2)
        swapped = hb[:, ::-1].reshape(h.shape)
        summed = np.concatenate([hb.sum(0)] * 2).reshape(h.shape)
        return (h.sum(0) ** 2).sum() + ((swapped + summed) * x[:, :1]).sum()
    sharded = (NamedSharding(mesh, rows), None)
    jv = dynjax.qjit(lambda x, w, t: dynjax.jvp(f, (x, w), (t, jnp.zeros_like(w)))[1][0],
                     abstracted_axes=({0: "n"}, {}, {0: "n"}), in_shardings=(rows_sh := sharded[0], None, rows_sh))
    gr = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes=({0: "n"}, {}), in_shardings=sharded)
    eps = 1e-6
    for n in (8, 16):
        x, t = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
        h, dh = np.tanh(x @ w), (1 - np.tanh(x @ w) ** 2) * (t @ w)
        np.testing.assert_allclose(jv(x, w, t), dh.sum(0), rtol=1e-12)
        gx, gw = gr(x, w)
        for (a, b) in [(0, 0), (n - 1, 2), (n // 2, 1)]:
            xp, xm = x.copy(), x.copy()
            xp[a, b] += eps
            xm[a, b] -= eps
            np.testing.assert_allclose(gx[a, b], (loss_np(xp, w) - loss_np(xm, w)) / (2 * eps), rtol=1e-6, atol=1e-7)
        wp, wm = w.copy(), w.copy()
        wp[1, 0] += eps
        wm[1, 0] -= eps
        np.testing.assert_allclose(gw[1, 0], (loss_np(x, wp) - loss_np(x, wm)) / (2 * eps), rtol=1e-6, atol=1e-7)
    _assert_per_device(jv, "all-reduce")
    # the gradient too: the transposes of psum and ppermute are XLA's collectives
    _assert_per_device(gr, "all-reduce", "collective-permute")
    assert jv.traces == 1 and gr.traces == 1


@case
def shard_map_tuple_axis_collectives_are_one_collective():
    """A collective over a tuple of mesh axes is ONE collective over the product groups, its
    members ordered first name major (("y", "x") too; ppermute's pairs are linear indices):
    values against jax's shard_map and the vmap interpretation; dynamic rows (8, 16)."""
    import jax
    from jax.sharding import PartitionSpec as JP
    jax.config.update("jax_enable_x64", True)
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))

    def body(L):
        def f(blk):                                      # blk: (n/2, 4)
            return (L.psum(blk, ("x", "y")), L.pmax(blk, ("y", "x")),
                    L.all_gather(blk, ("x", "y"), axis=1, tiled=True), L.all_gather(blk, ("y", "x")),
                    L.psum_scatter(blk, ("y", "x"), scatter_dimension=1, tiled=True),
                    L.psum_scatter(blk.T, ("x", "y")),
                    L.all_to_all(blk, ("x", "y"), 1, 0, tiled=True),
                    L.all_to_all(blk, ("y", "x"), 1, 1),
                    blk + L.axis_index(("y", "x")), L.pmean(blk, ("x", "y")),
                    L.ppermute(blk, ("x", "y"), [(0, 3), (3, 1), (1, 0)]), L.ppermute(blk, ("y", "x"), [(1, 2), (2, 1)]))
        return f
    rows, cols_yx, cols_xy = ("x", "y"), (None, ("y", "x")), (None, ("x", "y"))
    outs = [(), (), (), (), cols_yx, (("x", "y"),), cols_xy, ("x", "y"), ("x", "y"), (), ("x", "y"), ("x", "y")]
    f = dynjax.shard_map(body(dynjax.lax), mesh=mesh, in_specs=P(*rows), out_specs=tuple(P(*o) for o in outs))
    jf = jax.jit(jax.shard_map(body(jax.lax), mesh=jmesh, in_specs=JP(*rows), out_specs=tuple(JP(*o) for o in outs),
                               check_vma=False))
    rng = np.random.default_rng(17)
    for n in (8, 16):
        a = rng.standard_normal((n, 8))
        want = jf(a)
        eager, got, g = _run_both(f, NamedSharding(mesh, P(*rows)), (a,), ({0: "n"},))
        for k, (e, o, w) in enumerate(zip(eager, got, want)):
            assert o.shape == e.shape == w.shape, (k, o.shape, e.shape, w.shape)
            np.testing.assert_allclose(e, np.asarray(w), rtol=1e-13, atol=1e-13, err_msg=str(k))
            np.testing.assert_allclose(o, np.asarray(w), rtol=1e-13, atol=1e-13, err_msg=str(k))
        blocks = a.reshape(2, n // 2, 2, 4).transpose(0, 2, 1, 3)      # [x, y] -> block
        np.testing.assert_allclose(got[0], blocks.sum((0, 1)), rtol=1e-13)
        np.testing.assert_array_equal(got[3], blocks.transpose(1, 0, 2, 3).reshape(4, n // 2, 4))
    hlo = _assert_per_device(g, "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "partition-id",
                             "collective-permute")
    # one collective per call: no all-reduce over pairs of devices
    # one collective per call, over all four devices (ordered y-major for ("y", "x")); the
    # only collectives over pairs are XLA's all-gathers that lay out the whole results
    import re
    groups = {}
    ops = r"= [^=]*? (all-reduce|reduce-scatter|all-to-all|all-gather)\(.*?replica_groups=(\{[^ ]*\}),"
    for op, grp in re.findall(ops, hlo):
        groups.setdefault(op, set()).add(grp)
    assert groups["all-reduce"] == groups["reduce-scatter"] == groups["all-to-all"] == \
        {"{{0,1,2,3}}", "{{0,2,1,3}}"}, groups
    assert {"{{0,1,2,3}}", "{{0,2,1,3}}"} <= groups["all-gather"], groups


@case
def shard_map_grad_is_per_device():
    """grad through a shard_map in a sharded qjit: the known and linear parts and the
    transpose are per-device programs (all_gather transposes into reduce_scatter, ppermute
    into the inverse permutation, a replicated argument's cotangent is psum-ed, a replicated
    result's cotangent shared among its copies); numpy's finite differences agree."""
    mesh = dynjax.make_mesh((4,), ("d",))
    L = dynjax.lax
    f = dynjax.shard_map(lambda b, w: (L.psum(jnp.tanh(b * w).sum(), "d"),
                                       L.ppermute(b, "d", [(k, (k + 1) % 4) for k in range(4)]) * w,
                                       L.all_gather(b * w, "d", tiled=True)),
                         mesh=mesh, in_specs=(P("d"), P()), out_specs=(P(), P("d"), P()))

    def loss(x, w):
        a, b, c = f(x, w)
        return a ** 2 + (b * x).sum() + (c ** 2).sum()

    def loss_np(x, w):
        blocks = x.reshape(4, -1, 3)
        b = np.concatenate([blocks[(k - 1) % 4] for k in range(4)]) * w
        return np.tanh(x * w).sum() ** 2 + (b * x).sum() + ((x * w) ** 2).sum()
    g = dynjax.qjit(dynjax.grad(loss, argnums=(0, 1)), abstracted_axes=({0: "n"}, {}),
                    in_shardings=(NamedSharding(mesh, P("d")), None))
    rng = np.random.default_rng(15)
    w = rng.standard_normal((3,))
    eps = 1e-6
    for n in (8, 12):
        x = rng.standard_normal((n, 3))
        gx, gw = g(x, w)
        ex, ew = dynjax.grad(loss, argnums=(0, 1))(x, w)
        np.testing.assert_allclose(gx, ex, rtol=1e-12)
        np.testing.assert_allclose(gw, ew, rtol=1e-12)
        for idx in [(0, 0), (n - 1, 2), (n // 2, 1)]:
            xp, xm = x.copy(), x.copy()
            xp[idx] += eps
            xm[idx] -= eps
            np.testing.assert_allclose(gx[idx], (loss_np(xp, w) - loss_np(xm, w)) / (2 * eps), rtol=1e-6, atol=1e-7)
        wp, wm = w.copy(), w.copy()
        wp[1] += eps
        wm[1] -= eps
        np.testing.assert_allclose(gw[1], (loss_np(x, wp) - loss_np(x, wm)) / (2 * eps), rtol=1e-6, atol=1e-7)
    _assert_per_device(g, "all-reduce", "reduce-scatter", "collective-permute")
    assert g.traces == 1


@case
def shard_map_scatter_and_all_to_all_along_dynamic_rows():
    """psum_scatter and all_to_all along the dynamic rows a shard_map splits: the padded
    per-device program lays the blocks out per device; the vmap interpretation's values."""
    mesh = dynjax.make_mesh((4,), ("d",))
    L = dynjax.lax

    def body(b):
        return (L.psum_scatter(b, "d", scatter_dimension=0, tiled=True), L.all_to_all(b, "d", 0, 0, tiled=True),
                L.all_to_all(b, "d", 0, 1, tiled=True), L.all_to_all(b, "d", 1, 0, tiled=True))
    f = dynjax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=(P("d"),) * 4)
    rng = np.random.default_rng(14)
    for n in (16, 48):
        x = rng.standard_normal((n, 8))
        eager, got, g = _run_both(f, NamedSharding(mesh, P("d")), (x,), ({0: "n"},))
        for e, o in zip(eager, got):
            assert o.shape == e.shape, (o.shape, e.shape)
            np.testing.assert_allclose(o, e, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(got[0], x.reshape(4, n // 4, 8).sum(0), rtol=1e-13)
    _assert_per_device(g, "reduce-scatter", "all-to-all")


@case
def vmap_spmd_axis_name_splits_the_batch():
    """vmap(spmd_axis_name=...) inside a sharded qjit (the mesh entered with `with mesh:`):
    the batch axis of the batched program is split over the mesh axis (the per-device
    matmul has a quarter of the padded batch; the constraint inside splits its batch axis
    too); without it, or eagerly, the same values."""
    import re
    mesh = dynjax.make_mesh((4,), ("b",))
    whole = NamedSharding(mesh, P())
    rng = np.random.default_rng(13)
    w = rng.standard_normal((64, 32))

    def per_example(x, w):   # a constraint inside: replicated, but its batch axis split with spmd
        return dynjax.lax.with_sharding_constraint(jnp.tanh(x @ w), whole).sum()
    for spmd in (None, "b"):
        with mesh:
            f = dynjax.qjit(lambda x, w: dynjax.vmap(per_example, in_axes=(0, None), spmd_axis_name=spmd)(x, w),
                            abstracted_axes=({0: "n"}, {}), in_shardings=(whole, whole))
            for n in (1, 8, 13):
                x = rng.standard_normal((n, 64))
                np.testing.assert_allclose(f(x, w), np.tanh(x @ w).sum(1), rtol=1e-12)
        run = f._last.sharded.last_run
        blocks = set(re.findall(r"f64\[(\d+),32\]", run.exe.partitioned_hlo()))
        assert ("4" in blocks) == (spmd is not None), (spmd, blocks)   # 16 padded rows over 4 devices
        inner = re.findall(r'sdy.sharding_constraint %\d+ <@(\w+), \[([^]]*)\]> : tensor<16x32xf64>', run.exe.text)
        meshes = dict(re.findall(r'sdy.mesh @(\w+) = (<[^>]*>)', run.exe.text))
        assert [(meshes[m], dims) for m, dims in inner] == \
            ([('<["a0"=4]>', '{"a0"}, {}')] if spmd else [('<["r"=4]>', "{}, {}")]), (spmd, inner, meshes)
    eager = dynjax.vmap(per_example, in_axes=(0, None), spmd_axis_name="b")(x, w)
    np.testing.assert_allclose(eager, np.tanh(x @ w).sum(1), rtol=1e-12)
    with mesh:
        raises(ValueError, dynjax.vmap(per_example, in_axes=(0, None), spmd_axis_name="z"), x, w, match="'z'")


@case
def shard_map_errors():
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))
    x = np.ones((4, 4))
    raises(ValueError, dynjax.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P()), x,
           match="varies over the mesh axis 'x'")
    raises(ValueError, dynjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("z"), out_specs=P()), x,
           match="'z'")
    raises(ValueError, dynjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x")),
           np.ones((3, 4)), match="does not split")
    raises(ValueError, dynjax.shard_map(lambda b: b, in_specs=P("x"), out_specs=P("x")), x, match="mesh")
    with mesh:   # the mesh of the enclosing `with`
        out = dynjax.shard_map(lambda b: b + dynjax.lax.axis_index("x"), in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(out, x + np.array([0, 0, 1, 1])[:, None])


@case
def with_sharding_constraint_lays_out_an_intermediate():
    """The constraint reaches XLA (a sharding annotation in the partitioned program) and
    changes no value; under grad and vmap too; outside a sharded program it is the identity."""
    mesh = dynjax.make_mesh((4,), ("data",))
    rows, cols = NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None, "data"))

    def g(x):
        y = dynjax.lax.with_sharding_constraint(jnp.tanh(x) * 2.0, cols)
        return (y @ y.T).sum()
    f = dynjax.qjit(lambda x: (g(x), dynjax.grad(g)(x)), abstracted_axes=({0: "n"},), in_shardings=rows)
    rng = np.random.default_rng(8)
    for n in (3, 8):
        x = rng.standard_normal((n, 8))
        val, grad = f(x)
        t = np.tanh(x) * 2.0
        np.testing.assert_allclose(val, (t @ t.T).sum(), rtol=1e-12)
        np.testing.assert_allclose(grad, 2.0 * (1 - np.tanh(x) ** 2) * (2 * t.sum(0, keepdims=True)), rtol=1e-10)
    hlo = f._last.sharded.last_run.exe.partitioned_hlo()
    assert "f64[16,2]" in hlo or "f64[8,2]" in hlo, hlo[:3000]   # the columns split in four
    plain = dynjax.qjit(g)
    x = rng.standard_normal((5, 8))
    np.testing.assert_allclose(plain(x), g(x), rtol=1e-13)
    batched = dynjax.vmap(lambda r: dynjax.lax.with_sharding_constraint(r * 2.0, NamedSharding(mesh, P("data"))))
    np.testing.assert_array_equal(batched(np.ones((3, 8))), np.full((3, 8), 2.0))


if __name__ == "__main__":
    device_cases.main(CASES)
