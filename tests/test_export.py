"""dynjax.export: programs exported here are loaded and called in a fresh process that never
sees their Python source (tests/export_runner.py), at sizes 0, 1, 5 and 1000, for every
control-flow kind; numpy, in this process, is the oracle. Also: the checks of ``call``'s
arguments, the blob's integrity checks, and programs that cannot be exported."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import cond, for_loop, lax, qjit, while_loop
from dynjax.export import ShapeDtypeStruct, deserialize, export, symbolic_shape

SIZES = (0, 1, 5, 1000)
HERE = os.path.dirname(os.path.abspath(__file__))
F64 = np.float64


def vec(name="n"):
    return ShapeDtypeStruct(symbolic_shape(name), F64)


# --- the programs, each with its numpy oracle and its arguments at size n ----------------------
def straight_line(x):
    return jnp.sin(x) * 2 + jnp.sum(x)


def straight_line_np(x):
    return np.sin(x) * 2 + np.sum(x)


def catalyst_for(x):
    @for_loop(0, 10, 1)
    def loop(i, a):
        return a * 0.5 + x * i
    return loop(x)


def catalyst_for_np(x):
    a = x
    for i in range(10):
        a = a * 0.5 + x * i
    return a


def catalyst_while(x):
    @while_loop(lambda a, k: k < x.shape[0] % 7 + 2)
    def loop(a, k):
        return a * 1.5 - 1.0, k + 1
    return loop(x, 0)[0]


def catalyst_while_np(x):
    a = x
    for _ in range(x.shape[0] % 7 + 2):
        a = a * 1.5 - 1.0
    return a


def catalyst_cond(x):
    @cond(jnp.sum(x) > 0.0)
    def branch():
        return x * 2.0

    @branch.otherwise
    def branch():
        return x - 1.0
    return branch()


def catalyst_cond_np(x):
    return x * 2.0 if np.sum(x) > 0 else x - 1.0


def lax_loops(x, k):
    carry, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, x)
    f = lax.fori_loop(0, 5, lambda i, a: a + i * x, x)
    s = lax.switch(k, [lambda a: a + 1.0, lambda a: a * 3.0, lambda a: -a], x)
    w = lax.while_loop(lambda a: jnp.sum(jnp.abs(a)) > 1.0, lambda a: a * 0.5, x)
    c = lax.cond(k > 0, lambda a: jnp.cumsum(a), lambda a: a[::-1], x)
    return carry, ys, f, s, w, c


def lax_loops_np(x, k):
    c, ys = 0.0, []
    for v in x:
        ys.append(c * v)
        c = c + v
    f = x.copy()
    for i in range(5):
        f = f + i * x
    s = [x + 1.0, x * 3.0, -x][int(k)]
    w = x.copy()
    while np.sum(np.abs(w)) > 1.0:
        w = w * 0.5
    return c, np.array(ys, F64), f, s, w, np.cumsum(x) if k > 0 else x[::-1]


def resizing_for(x):
    @for_loop(0, 3, 1)
    def loop(i, a):
        return jnp.concatenate([a, a * i])

    @while_loop(lambda a, b, i: i < 3, allow_array_resizing=True)
    def grow_one(a, b, i):   # a and b enter with one size and leave with two
        return a + 1.0, jnp.concatenate([b, b * 2.0]), i + 1
    a, b, _ = grow_one(x, x, 0)
    return loop(x), a, b


def resizing_for_np(x):
    a = x
    for i in range(3):
        a = np.concatenate([a, a * i])
    b = x
    for _ in range(3):
        b = np.concatenate([b, b * 2.0])
    return a, x + 3.0, b


def growing_while(x):
    @while_loop(lambda a: a.shape[0] < x.shape[0] + 7)
    def loop(a):
        return jnp.concatenate([a, jnp.ones(1) * a.shape[0]])
    return loop(x)


def growing_while_np(x):
    a = x
    while a.shape[0] < x.shape[0] + 7:
        a = np.concatenate([a, [float(a.shape[0])]])
    return a


def data_dependent(x):
    pos = x[x > 0]
    return pos * 2.0, jnp.sum(pos)


def data_dependent_np(x):
    pos = x[x > 0]
    return pos * 2.0, np.sum(pos)


def size_from_int(n):
    return jnp.arange(n) * 2.0 + jnp.ones(n)


def size_from_int_np(n):
    return np.arange(int(n)) * 2.0 + 1.0


def shared_dims(d, m):
    """A dict in, a dict out, a dim shared by two arguments, a constant array, and a
    custom_jvp call (relu: lowered away at export)."""
    weights = np.array([1.0, -2.0, 3.0])   # a constant of the program
    return {"sum": d["x"] + m @ (d["y"] * weights), "relu": dynjax.nn.relu(d["x"])}


def shared_dims_np(d, m):
    return {"relu": np.maximum(d["x"], 0), "sum": d["x"] + m @ (d["y"] * np.array([1.0, -2.0, 3.0]))}


def _vector(n, seed=0):
    return np.random.default_rng(seed + n).standard_normal(n)


# name -> (function, specs, oracle, arguments at size n)
CASES = {
    "straight_line": (straight_line, (vec(),), straight_line_np, lambda n: (_vector(n),)),
    "for_loop": (qjit(catalyst_for), (vec(),), catalyst_for_np, lambda n: (_vector(n),)),
    "while_loop": (catalyst_while, (vec(),), catalyst_while_np, lambda n: (_vector(n),)),
    "cond": (catalyst_cond, (vec(),), catalyst_cond_np, lambda n: (_vector(n),)),
    "lax_scan_fori_switch_while": (lax_loops, (vec(), ShapeDtypeStruct((), np.int64)), lax_loops_np,
                                   lambda n: (_vector(n), np.int64(n % 3))),
    "resizing_loops": (resizing_for, (vec(),), resizing_for_np, lambda n: (_vector(n),)),
    "growing_while_loop": (growing_while, (vec(),), growing_while_np, lambda n: (_vector(n),)),
    "data_dependent_size": (data_dependent, (vec(),), data_dependent_np, lambda n: (_vector(n),)),
    "size_from_int": (size_from_int, (ShapeDtypeStruct((), np.int64),), size_from_int_np,
                      lambda n: (np.int64(n),)),
    "shared_dims_pytree_custom_jvp": (
        shared_dims, ({"x": vec(), "y": ShapeDtypeStruct((3,), F64)},
                      ShapeDtypeStruct(symbolic_shape("n, 3"), F64)),
        shared_dims_np, lambda n: ({"x": _vector(n), "y": _vector(3, 7)},
                                   np.arange(3.0 * n).reshape(n, 3) / (n + 1))),
}


def _flat(tree):
    return dynjax.tree_flatten(tree)[0]


@pytest.mark.slow
def test_round_trips_in_a_fresh_process(tmp_path):
    """Every case exported here, called in one child process at every size."""
    manifest, expected = [], {}
    for name, (fun, specs, oracle, make_args) in CASES.items():
        blob = tmp_path / f"{name}.dynjax"
        blob.write_bytes(export(fun)(*specs).serialize())
        calls = []
        for n in SIZES:
            args = make_args(n)
            flat = _flat(args)
            np.savez(tmp_path / f"{name}_{n}_args.npz", **{f"a{i}": np.asarray(a) for i, a in enumerate(flat)})
            calls.append({"args": str(tmp_path / f"{name}_{n}_args.npz"), "out": str(tmp_path / f"{name}_{n}_out.npz")})
            expected[name, n] = (_flat(oracle(*args)), calls[-1]["out"])
        manifest.append({"blob": str(blob), "calls": calls})
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "export_runner.py"), str(path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for (name, n), (want, out) in expected.items():
        with np.load(out) as data:
            assert "error" not in data.files, f"{name} at size {n}: {data['error']}"
            got = [data[f"r{i}"] for i in range(len(data.files))]
        assert len(got) == len(want), (name, n)
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype, (name, n, g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{name} at size {n}")


# --- call's argument checks -------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair():
    """``f(x: f64[n,3], y: f64[n])``, exported and read back."""
    def f(x, y):
        return jnp.sum(x, axis=1) * y
    spec = symbolic_shape("n, 3")
    return deserialize(export(f)(ShapeDtypeStruct(spec, F64), ShapeDtypeStruct(spec[:1], F64)).serialize())


def test_call_checks_rank_dtype_and_shared_dims(pair):
    x, y = np.ones((4, 3)), np.arange(4.0)
    np.testing.assert_allclose(pair.call(x, y), 3 * np.arange(4.0))
    np.testing.assert_allclose(pair.call(x.astype(np.float32), y), 3 * np.arange(4.0))  # safe cast
    with pytest.raises(TypeError, match=r"argument 0 has rank 1 .* takes rank 2 \(f64\[n,3\]\)"):
        pair.call(np.ones(4), y)
    with pytest.raises(ValueError, match=r"argument 0 has shape \(4, 2\).*axis 1 must have size 3"):
        pair.call(np.ones((4, 2)), y)
    with pytest.raises(TypeError, match=r"argument 1 has dtype complex128.*does not cast safely to float64"):
        pair.call(x, y.astype(complex))
    with pytest.raises(ValueError, match=r"abstracted axis 'n' has size 4 in axis 0 of argument 0 but size 5 "
                                         r"in axis 0 of argument 1"):
        pair.call(x, np.ones(5))
    with pytest.raises(TypeError, match=r"exported for arguments of structure"):
        pair.call(x)
    assert [a.str_short() for a in pair.in_avals] == ["f64[n,3]", "f64[n]"]
    assert [a.str_short() for a in pair.out_avals] == ["f64[n]"]
    assert pair.fun_name == "f"


# --- the blob's integrity checks --------------------------------------------------------------
def test_bad_blobs_are_value_errors(pair):
    blob = pair.serialize()
    assert deserialize(blob).call(np.ones((2, 3)), np.ones(2)).tolist() == [3.0, 3.0]
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x01
    future = bytearray(blob)
    future[14:16] = struct.pack(">H", 99)
    cases = {
        "truncated": (blob[:-10], "truncated"),
        "truncated header": (blob[:20], "truncated"),
        "flipped byte": (bytes(flipped), "digest does not match"),
        "future version": (bytes(future), r"version 99\.0, but this dynjax reads versions 1\.0"),
        "garbage": (b"\x89PNG garbage" * 10, "not a dynjax exported program"),
        "empty": (b"", "not a dynjax exported program"),
    }
    for what, (data, message) in cases.items():
        with pytest.raises(ValueError, match=message):
            deserialize(data)
    with pytest.raises(TypeError, match="expected bytes"):
        deserialize("a string")


def test_malformed_body_with_a_valid_digest_is_a_value_error(pair):
    """A body that is valid JSON with a correct digest, but not a valid program."""
    import hashlib
    from dynjax.export.serialization import MAGIC, _HEADER
    blob = pair.serialize()
    start = len(MAGIC) + _HEADER.size
    body = json.loads(blob[start:-32])

    def reseal(b):
        data = json.dumps(b).encode()
        head = MAGIC + _HEADER.pack(1, 0, len(data))
        return head + data + hashlib.sha256(head + data).digest()

    broken = [dict(body, program=None), dict(body, symbols=[["x"]]), dict(body, in_tree={"set": []}),
              dict(body, dims=[]), {"fun_name": 3}]
    eqn = body["program"]["jaxpr"]["eqns"][0]
    for change in ({"p": "no_such_primitive"}, {"in": [999]}, {"params": {"axes": {"t": "lambda"}}}):
        prog = json.loads(json.dumps(body["program"]))
        prog["jaxpr"]["eqns"][0] = dict(eqn, **change)
        broken.append(dict(body, program=prog))
    wrong_type = json.loads(json.dumps(body["program"]))
    wrong_type["jaxpr"]["eqns"][0]["out"][0][1][0] = "int32"   # a result typed against its rule
    broken.append(dict(body, program=wrong_type))
    for b in broken:
        with pytest.raises(ValueError, match="malformed blob"):
            deserialize(reseal(b))


# --- what cannot be exported ------------------------------------------------------------------
def test_callbacks_cannot_be_exported():
    def host_sin(x):
        return np.sin(x)

    def with_callback(x):
        return dynjax.pure_callback(host_sin, ShapeDtypeStruct((3,), F64), x) + 1

    with pytest.raises(ValueError, match=r"calls the Python function host_sin through pure_callback "
                                         r"\(at .*test_export.py:\d+\)"):
        export(with_callback)(ShapeDtypeStruct((3,), F64))

    def with_print(x):
        dynjax.debug.print("x = {}", x)
        return x * 2
    with pytest.raises(ValueError, match="debug_callback"):
        export(with_print)(vec())


def test_custom_pytree_arguments_cannot_be_exported():
    from collections import namedtuple
    Point = namedtuple("Point", "x y")
    with pytest.raises(ValueError, match="Point node"):
        export(lambda p: p.x + p.y)(Point(vec(), vec()))


def test_exported_attributes_and_static_arguments():
    @qjit(static_argnums=1)
    def scale(x, k):
        return x * k

    exp = export(scale)(ShapeDtypeStruct((None, 2), F64), 3)
    assert repr(exp) == "Exported(scale: (f64[_0,2]) -> (f64[_0,2]))"
    assert exp.in_tree == dynjax.tree_util.tree_structure(((1,), {}))
    back = deserialize(exp.serialize())
    np.testing.assert_array_equal(back.call(np.ones((4, 2))), np.full((4, 2), 3.0))
    assert "tensor<?x2xf64>" in back.mlir_module()
    assert str(back.jaxpr) == str(exp.jaxpr)


def test_qjit_abstracted_axes_keyword_and_size_arguments():
    @qjit(abstracted_axes={0: "n"})
    def g(x):
        return jnp.sin(x) * 2
    g(np.ones(3))
    exp = export(g)(np.ones(3))   # a concrete array: its axis 0 is dynamic by g's abstracted_axes
    assert repr(exp) == "Exported(g: (f64[n]) -> (f64[n]))"
    assert exp.mlir_module() == g.mlir   # one segment: the module f.mlir prints
    np.testing.assert_allclose(deserialize(exp.serialize()).call(np.arange(7.0)), np.sin(np.arange(7.0)) * 2)

    def scaled(x, scale=1.0):
        return x * scale
    exp = deserialize(export(scaled)(ShapeDtypeStruct((None,), np.float32),
                                     scale=ShapeDtypeStruct((), np.float32)).serialize())
    out = exp.call(np.ones(2, np.float32), scale=3.0)
    assert out.dtype == np.float32 and out.tolist() == [3.0, 3.0]

    info = exp.cache_info()
    assert info["calls"] == 1 and info["exact_runs"] + info["padded_runs"] + info["eager_runs"] == 1

    exp = deserialize(export(lambda n: jnp.ones(n) * 2)(ShapeDtypeStruct((), np.int64)).serialize())
    assert exp.call(3).tolist() == [2.0, 2.0, 2.0] and exp.call(0).shape == (0,)
    with pytest.raises(ValueError, match=r"argument 0 is used as a size but is negative \(-1\)"):
        exp.call(-1)
    with pytest.raises(TypeError, match="float64 does not cast safely to int64"):
        exp.call(2.5)


def test_export_keywords():
    exp = export(jnp.sin, platforms=("cpu",))(vec())
    assert exp.platforms == ("cpu",)
    with pytest.raises(ValueError, match="CPU client only"):
        export(jnp.sin, platforms=("cuda",))
    with pytest.raises(ValueError, match="cannot be disabled"):
        export(jnp.sin, disabled_checks=("shape_assertions",))
    with pytest.raises(TypeError, match="expected a function"):
        export(3)


def test_symbolic_shape_parsing():
    n, three = symbolic_shape("(n, 3)")
    assert (str(n), three) == ("n", 3) and symbolic_shape("") == () and symbolic_shape("n,") == (n,)
    with pytest.raises(ValueError, match=r"'2\*n' is neither a size nor a dimension name"):
        symbolic_shape("2*n, 3")
    with pytest.raises(TypeError, match="expected a string"):
        symbolic_shape(3)


def test_dimension_numbers_and_result_namedtuples():
    """Params that are dynjax's namedtuples (a convolution's dimension numbers) and results
    that are (``jnp.linalg.qr``'s ``QRResult``) round-trip."""
    def conv(x, k):
        return lax.conv_general_dilated(x, k, (1,), "SAME", dimension_numbers=("NHC", "HIO", "NHC"))
    exp = deserialize(export(conv)(ShapeDtypeStruct((1, None, 2), F64), ShapeDtypeStruct((3, 2, 4), F64)).serialize())
    x, k = np.arange(10.0).reshape(1, 5, 2), np.ones((3, 2, 4))
    padded = np.pad(x[0].sum(axis=1), 1)
    want = np.stack([padded[i:i + 3].sum() for i in range(5)])
    np.testing.assert_allclose(exp.call(x, k)[0], np.repeat(want[:, None], 4, axis=1))

    exp = deserialize(export(jnp.linalg.qr)(ShapeDtypeStruct((None, 3), F64)).serialize())
    a = np.random.default_rng(0).standard_normal((6, 3))
    q, r = exp.call(a)
    assert type(exp.call(a)).__name__ == "QRResult"
    np.testing.assert_allclose(q @ r, a, atol=1e-12)


def test_custom_rules_and_checkpoint_are_lowered_away_in_nested_programs():
    """A custom_jvp function (relu) inside a loop body and a checkpoint: the exported program
    holds their equations, not the calls (whose Python rules cannot be shipped)."""
    @dynjax.checkpoint
    def softplus_sum(a):
        return jnp.sum(dynjax.nn.softplus(a))

    def f(x):
        @for_loop(0, 3, 1)
        def loop(i, a):
            return dynjax.nn.relu(a - 1.0) + softplus_sum(a)
        return loop(x)

    exp = deserialize(export(f)(vec()).serialize())
    text = str(exp.jaxpr)
    assert "for_loop" in text and "custom_jvp_call" not in text and "checkpoint" not in text
    x = np.linspace(-2.0, 3.0, 6)
    a = x
    for _ in range(3):
        a = np.maximum(a - 1.0, 0) + np.sum(np.logaddexp(a, 0))
    np.testing.assert_allclose(exp.call(x), a, rtol=1e-12)


def test_user_primitive_with_a_function_param_cannot_be_exported():
    from dynjax import extend as ext
    apply_p = ext.Primitive("export_test_apply")

    @ext.def_impl(apply_p)
    def _impl(x, *, fn):
        return fn(x)

    @ext.def_abstract_eval(apply_p)
    def _abstract(x, *, fn):
        return ext.make_aval(x.aval.shape, x.aval.dtype)

    def f(x):
        return apply_p.bind(x, fn=np.tanh) * 2
    with pytest.raises(ValueError, match=r"export of f: the primitive export_test_apply \(at .*test_export.py:\d+\) "
                                         r"holds the Python function tanh \(param fn\)"):
        export(f)(ShapeDtypeStruct((3,), F64))
