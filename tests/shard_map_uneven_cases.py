"""``shard_map`` over a dynamic dimension its blocks do not divide, on four CPU devices: n rows
over t blocks are blocks of ceil(n / t) rows, the last ones shorter or empty (13 over 4: 4, 4,
4, 1). Each case is a function of this module; ``test_shard_map_uneven.py`` runs them all in
one four-device process. numpy, applied to each device's rows, is the oracle."""
import os
import sys
import warnings

import numpy as np

import device_cases

CASES = {}
SIZES = (0, 1, 5, 8, 13)


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def raises(exc, fn, *args, match=()):
    try:
        fn(*args)
    except exc as e:
        for m in (match,) if isinstance(match, str) else match:
            assert m in str(e), f"{type(e).__name__}: {e} does not mention {m!r}"
        return
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def blocks(x, t):
    """The rows of each of ``t`` devices: blocks of ceil(n / t) rows, the last ones shorter."""
    n = len(x)
    big = -(-n // t)
    return [x[k * big:min((k + 1) * big, n)] for k in range(t)]


def mean_rows(b):
    """numpy's mean of a block's rows (nan for an empty block, as dynjax divides 0 by 0)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return b.mean(axis=0)


def with_tiers(policy):
    """Set ``DYNJAX_TIERS`` (read at every call) and give back the old value."""
    old = os.environ.get("DYNJAX_TIERS")
    os.environ["DYNJAX_TIERS"] = policy
    return old


@case
def block_statistics_and_row_outputs_in_every_tier():
    """Per-block sums, means, maxima and lengths, psum / pmax of them, and a row-wise result
    put back over the mesh: at 0, 1, 5, 8 and 13 rows, one trace, in each execution tier."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))

    def body(x):
        count = x.shape[0]
        mean = jnp.mean(x, axis=0)
        return (lax.psum(jnp.sum(x, axis=0), "d"), lax.pmax(jnp.max(x, initial=-1.0), "d"),
                lax.psum(count, "d"), jnp.reshape(mean, (1, 2)), jnp.full((1,), count),
                x - mean + count)
    specs = (P(), P(), P(), P("d"), P("d"), P("d"))
    for policy in ("auto", "padded", "exact"):
        old = with_tiers(policy)
        try:
            f = dynjax.qjit(dynjax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=specs),
                            abstracted_axes=({0: "n"},))
            rng = np.random.default_rng(3)
            for n in SIZES:
                x = rng.standard_normal((n, 2))
                total, top, count, means, lengths, rows = f(x)
                np.testing.assert_allclose(total, x.sum(axis=0), rtol=1e-12, atol=1e-14)
                assert top == (x.max() if n else -1.0)
                assert count == n
                np.testing.assert_allclose(means, np.stack([mean_rows(b) for b in blocks(x, 4)]), rtol=1e-12)
                np.testing.assert_array_equal(lengths, [len(b) for b in blocks(x, 4)])
                want = [b - mean_rows(b) + len(b) for b in blocks(x, 4)]
                np.testing.assert_allclose(rows, np.concatenate(want) if n else np.zeros((0, 2)), rtol=1e-12)
            assert f.traces == 1, (policy, f.traces)
        finally:
            os.environ["DYNJAX_TIERS"] = old if old is not None else "auto"
    # the even sizes agree with the eager (whole-array) evaluation of the same shard_map
    mapped = dynjax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=specs)
    x = np.random.default_rng(4).standard_normal((8, 2))
    for a, b in zip(mapped(x), f(x)):
        np.testing.assert_allclose(b, a, rtol=1e-12)


@case
def matmul_of_blocks_with_a_replicated_weight():
    """Row blocks times a replicated weight: the rows put back, and the psum of the blocks'
    column sums; the padded executables are reused across the sizes of a bucket."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))

    def body(x, w):
        y = jnp.tanh(x @ w)
        return y, lax.psum(y.sum(axis=0), "d")
    f = dynjax.qjit(dynjax.shard_map(body, mesh=mesh, in_specs=(P("d"), P()), out_specs=(P("d"), P())),
                    abstracted_axes=({0: "n"}, {}))
    rng = np.random.default_rng(5)
    w = rng.standard_normal((3, 4))
    for n in SIZES + (3, 7):
        x = rng.standard_normal((n, 3))
        rows, cols = f(x, w)
        np.testing.assert_allclose(rows, np.tanh(x @ w), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(cols, np.tanh(x @ w).sum(axis=0), rtol=1e-12, atol=1e-13)
    info = f.cache_info()
    assert info["traces"] == 1 and info["compilations"] + info["padded_compilations"] <= 3, info


@case
def two_by_two_mesh_over_both_axes_and_over_one():
    """A (2, 2) mesh: rows over both axes (P(("x", "y")), 4 blocks) and over x only (2
    blocks, copied along y): a psum over y of a block split over x combines blocks of one
    length, so it works at every size."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((2, 2), ("x", "y"))

    def both(a, w):
        return a @ w, lax.psum(jnp.sum(a @ w, axis=0), ("x", "y")), lax.psum(a.shape[0], ("x", "y"))

    def over_x(a, w):
        return lax.psum(a @ w, "y"), lax.pmean(jnp.mean(a, axis=0), "x"), jnp.full((1,), a.shape[0])
    f = dynjax.qjit(dynjax.shard_map(both, mesh=mesh, in_specs=(P(("x", "y")), P()),
                                     out_specs=(P(("x", "y")), P(), P())), abstracted_axes=({0: "n"}, {}))
    g = dynjax.qjit(dynjax.shard_map(over_x, mesh=mesh, in_specs=(P("x"), P()),
                                     out_specs=(P("x"), P(), P("x"))), abstracted_axes=({0: "n"}, {}))
    rng = np.random.default_rng(6)
    w = rng.standard_normal((3, 2))
    for n in SIZES:
        a = rng.standard_normal((n, 3))
        rows, total, count = f(a, w)
        np.testing.assert_allclose(rows, a @ w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(total, (a @ w).sum(axis=0), rtol=1e-12, atol=1e-13)
        assert count == n
        doubled, mean, lengths = g(a, w)
        np.testing.assert_allclose(doubled, 2 * (a @ w), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(mean, np.mean([mean_rows(b) for b in blocks(a, 2)], axis=0), rtol=1e-12)
        np.testing.assert_array_equal(lengths, [len(b) for b in blocks(a, 2)])
    assert f.traces == 1 and g.traces == 1


@case
def grad_of_a_data_parallel_loss():
    """grad of sum(tanh(x @ w) ** 2), each device's part psum'ed: by w (the usual data
    parallel step) and by the split rows, at 1, 8 and 13 rows, against the derivative by
    hand and a central difference; one trace. And the pmean of the devices' means."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))
    loss = dynjax.shard_map(lambda w, x: lax.psum(jnp.sum(jnp.tanh(x @ w) ** 2), "d"), mesh=mesh,
                            in_specs=(P(), P("d")), out_specs=P())
    by_w = dynjax.qjit(dynjax.value_and_grad(loss), abstracted_axes=({}, {0: "n"}))
    by_x = dynjax.qjit(dynjax.grad(loss, argnums=1), abstracted_axes=({}, {0: "n"}))
    w = np.array([0.3, -0.2, 0.5])
    rng = np.random.default_rng(7)

    def loss_np(w, x):
        return np.sum(np.tanh(x @ w) ** 2)
    for n in (1, 8, 13):
        x = rng.standard_normal((n, 3))
        t = np.tanh(x @ w)
        value, gw = by_w(w, x)
        np.testing.assert_allclose(value, loss_np(w, x), rtol=1e-12)
        np.testing.assert_allclose(gw, x.T @ (2 * t * (1 - t ** 2)), rtol=1e-12)
        eps = 1e-6
        fd = [(loss_np(w + eps * e, x) - loss_np(w - eps * e, x)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(by_x(w, x), np.outer(2 * t * (1 - t ** 2), w), rtol=1e-12)
    assert by_w.traces == 1 and by_x.traces == 1
    # the mean of each device's mean (every device weighs alike, whatever its length)
    mean_loss = dynjax.shard_map(lambda w, x: lax.pmean(jnp.mean(jnp.tanh(x @ w) ** 2), "d"), mesh=mesh,
                                 in_specs=(P(), P("d")), out_specs=P())
    by_w = dynjax.qjit(dynjax.value_and_grad(mean_loss), abstracted_axes=({}, {0: "n"}))
    for n in (8, 13):
        x = rng.standard_normal((n, 3))
        value, gw = by_w(w, x)
        parts = blocks(x, 4)
        np.testing.assert_allclose(value, np.mean([np.mean(np.tanh(b @ w) ** 2) for b in parts]), rtol=1e-12)
        want = np.mean([b.T @ (2 * np.tanh(b @ w) * (1 - np.tanh(b @ w) ** 2)) / len(b) for b in parts], axis=0)
        np.testing.assert_allclose(gw, want, rtol=1e-12)


@case
def in_a_sharded_qjit():
    """shard_map inside a qjit whose argument is laid out over the mesh (in_shardings): the
    per-device program, at 13 rows too."""
    import dynjax
    from dynjax import lax
    from dynjax.sharding import NamedSharding, PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))

    def centre(block):
        total = lax.psum(block.sum(axis=0), "d")
        count = lax.psum(block.shape[0], "d")
        return block - total / count
    f = dynjax.qjit(dynjax.shard_map(centre, mesh=mesh, in_specs=P("d"), out_specs=P("d")),
                    abstracted_axes=({0: "n"},), in_shardings=NamedSharding(mesh, P("d")))
    for n in (13, 1, 8, 5):
        x = np.arange(float(n)).reshape(n, 1) ** 2
        np.testing.assert_allclose(f(x), x - x.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert f.traces == 1
    assert "all-reduce" in f._last.sharded.last_run.exe.partitioned_hlo()


@case
def a_first_compile_builds_nothing_at_small_sizes_its_blocks_refuse():
    """A program's first compile also builds its host program at small sizes cut from the
    call's (``Segment._build_host_ahead``): where those split unevenly and the program
    refuses that (a psum of the blocks themselves), the call is served all the same."""
    import dynjax
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))
    total = dynjax.qjit(dynjax.shard_map(lambda block: lax.psum(block, "d"), mesh=mesh, in_specs=P("d"),
                                         out_specs=P()), abstracted_axes=({0: "n"},))
    before = os.environ.get("DYNJAX_HOST_TIER")
    os.environ["DYNJAX_HOST_TIER"] = "auto"   # (the suite turns the host tier off)
    try:
        for n in (4000, 8, 12):
            x = np.arange(float(n))
            np.testing.assert_array_equal(total(x), x.reshape(4, -1).sum(axis=0))
        raises(ValueError, total, np.arange(13.0), match="psum")
    finally:
        os.environ.pop("DYNJAX_HOST_TIER") if before is None else os.environ.update(DYNJAX_HOST_TIER=before)


@case
def what_needs_blocks_of_one_length_is_a_value_error():
    """A collective of the block itself, a result sized by the block length but not put back
    over the mesh, a block length returned unsplit, or a body that cannot run padded: fine at
    8 rows, a ValueError naming the collective / result / reason and the user's line at 13.
    A static length stays JAX's error."""
    import dynjax
    import dynjax.numpy as jnp
    from dynjax import lax
    from dynjax.sharding import PartitionSpec as P
    mesh = dynjax.make_mesh((4,), ("d",))

    def mapped(fn, out_specs):
        return dynjax.qjit(dynjax.shard_map(fn, mesh=mesh, in_specs=P("d"), out_specs=out_specs),
                           abstracted_axes=({0: "n"},))
    summed = mapped(lambda x: lax.psum(x, "d"), P())                 # this line is named
    line = sys._getframe().f_lineno - 1
    np.testing.assert_array_equal(summed(np.arange(8.0)), [12.0, 16.0])
    raises(ValueError, summed, np.arange(13.0), match=("psum", f"shard_map_uneven_cases.py:{line}", "4, 4, 4, 1"))
    gathered = mapped(lambda x: lax.all_gather(x, "d", tiled=True), P())
    np.testing.assert_array_equal(gathered(np.arange(8.0)), np.arange(8.0))
    raises(ValueError, gathered, np.arange(13.0), match="all_gather")
    sized = mapped(lambda x: jnp.zeros(x.shape[0]), P())
    np.testing.assert_array_equal(sized(np.arange(8.0)), np.zeros(2))
    raises(ValueError, sized, np.arange(13.0), match="result 0")
    length = mapped(lambda x: x.shape[0], P())
    assert length(np.arange(8.0)) == 2
    raises(ValueError, length, np.arange(13.0), match="result 0")
    # a body the padding rules cannot pad (an fft) runs only blocks of one length
    spectra = mapped(lambda x: lax.psum(jnp.abs(jnp.fft.fft(x)).sum(), "d"), P())
    np.testing.assert_allclose(spectra(np.ones(8)), 8.0)
    raises(ValueError, spectra, np.ones(13), match=("run padded", "fft"))
    static = dynjax.qjit(dynjax.shard_map(lambda x: lax.psum(x.sum(), "d"), mesh=mesh, in_specs=P("d"),
                                          out_specs=P()))
    raises(ValueError, static, np.arange(13.0), match="does not split into 4 blocks")
    # the whole-array program (vmap of a shard_map) cuts blocks of one length
    batched = dynjax.qjit(dynjax.vmap(dynjax.shard_map(lambda x: lax.psum(x.sum(), "d"), mesh=mesh,
                                                       in_specs=P("d"), out_specs=P())), abstracted_axes=({1: "n"},))
    np.testing.assert_array_equal(batched(np.ones((2, 8))), [8.0, 8.0])
    raises(ValueError, batched, np.ones((2, 13)), match="whole-array program of a shard_map")


if __name__ == "__main__":
    device_cases.main(CASES)
