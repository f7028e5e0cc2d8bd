"""dynamic StableHLO -> specialize -> compile -> run, checked against numpy."""

import ml_dtypes
import numpy as np
import pytest

from dynjax import runtime as rt
from mlir_passes import SpecializationError, specialize, static_type_string

ONES_PLUS = """func.func @main(%n: tensor<i64>, %x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xi64>) {
  %c = stablehlo.constant dense<1.0> : tensor<f64>
  %s = stablehlo.reshape %n : (tensor<i64>) -> tensor<1xi64>
  %ones = stablehlo.dynamic_broadcast_in_dim %c, %s, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  %y = stablehlo.add %x, %ones : tensor<?xf64>
  %io = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %y, %io : tensor<?xf64>, tensor<?xi64>
}"""

LOOP = """func.func private @square(%a: tensor<?xf64>) -> tensor<?xf64> {
  %0 = stablehlo.multiply %a, %a : tensor<?xf64>
  return %0 : tensor<?xf64>
}
func.func @main(%k: tensor<i64>, %x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>, tensor<f64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %w:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i64>, tensor<?xf64>
    cond {
      %lt = stablehlo.compare LT, %i, %k : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %i1 = stablehlo.add %i, %one : tensor<i64>
      %a1 = stablehlo.add %acc, %x : tensor<?xf64>
      stablehlo.return %i1, %a1 : tensor<i64>, tensor<?xf64>
    }
  %d = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf64>) -> tensor<i32>
  %dl = stablehlo.convert %d : (tensor<i32>) -> tensor<i64>
  %sz = stablehlo.add %dl, %one : tensor<i64>
  %shape = stablehlo.reshape %sz : (tensor<i64>) -> tensor<1xi64>
  %two = stablehlo.constant dense<2.0> : tensor<f64>
  %b = stablehlo.dynamic_broadcast_in_dim %two, %shape, dims = [] : (tensor<f64>, tensor<1xi64>) -> tensor<?xf64>
  %sq = func.call @square(%b) : (tensor<?xf64>) -> tensor<?xf64>
  %sqx = func.call @square(%x) : (tensor<?xf64>) -> tensor<?xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %sum = stablehlo.reduce(%sqx init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?xf64>, tensor<f64>) -> tensor<f64>
  %p = stablehlo.compare GT, %k, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %r = "stablehlo.if"(%p) ({
      stablehlo.return %w#1 : tensor<?xf64>
    }, {
      %neg = stablehlo.negate %w#1 : tensor<?xf64>
      stablehlo.return %neg : tensor<?xf64>
    }) : (tensor<i1>) -> tensor<?xf64>
  return %r, %sq, %sum : tensor<?xf64>, tensor<?xf64>, tensor<f64>
}"""


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100])
def test_ones_plus_iota(n):
    x = np.random.default_rng(n).standard_normal(n)
    st = specialize(ONES_PLUS, [None, static_type_string((n,), np.float64)], {0: n})
    assert "?" not in st
    exe = rt.compile(st)
    y, io = exe(x)
    np.testing.assert_array_equal(y, x + 1.0)
    np.testing.assert_array_equal(io, np.arange(n, dtype=np.int64))
    assert y.dtype == np.float64 and io.dtype == np.int64 and y.shape == (n,)


@pytest.mark.parametrize("n,k", [(0, 3), (1, 0), (1, 1), (5, 4), (33, 2)])
def test_loop_callee_if_reduce(n, k):
    x = np.linspace(-1.0, 2.0, n)
    exe = rt.compile(specialize(LOOP, [None, f"tensor<{n}xf64>"], {0: k}))
    r, sq, s = exe(x)
    acc = x * (k + 1)
    np.testing.assert_allclose(r, acc if k > 1 else -acc)
    np.testing.assert_array_equal(sq, np.full(n + 1, 4.0))
    assert s.shape == () and s.dtype == np.float64
    np.testing.assert_allclose(s, np.sum(x * x))


IDENT_ADD = """func.func @main(%x: tensor<{t}>, %y: tensor<{t}>) -> (tensor<{t}>, tensor<{t}>) {{
  %0 = stablehlo.{op} %x, %y : tensor<{t}>
  return %x, %0 : tensor<{t}>, tensor<{t}>
}}"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (1,), (3, 4), (5,)])
def test_dtype_round_trip(dtype, shape):
    t = static_type_string(shape, dtype)[len("tensor<"):-1]
    op = "or" if dtype == np.bool_ else "add"
    exe = rt.compile(IDENT_ADD.format(t=t, op=op))
    rng = np.random.default_rng(0)
    x = np.asarray(rng.standard_normal(shape) * 10).astype(dtype)
    y = np.asarray(rng.standard_normal(shape) * 10).astype(dtype)
    ident, s = exe(x, y)
    expect = (x | y) if dtype == np.bool_ else (x + y)
    for got, want in ((ident, x), (s, expect)):
        assert isinstance(got, np.ndarray)
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        np.testing.assert_array_equal(got, want)
    # results do not alias or depend on the inputs afterwards
    saved_ident, saved_s = x.copy(), expect.copy()
    if x.size:
        x[...] = 0
        y[...] = 0
    np.testing.assert_array_equal(ident, saved_ident)
    np.testing.assert_array_equal(s, saved_s)


def _aligned(n):
    raw = np.empty(n + 8, np.float64)
    off = (-raw.ctypes.data % 64) // 8
    return raw[off:off + n]


def test_zero_copy_input_is_not_aliased():
    exe = rt.compile(IDENT_ADD.format(t="64xf64", op="add"))
    x = _aligned(64)
    x[:] = np.arange(64.0)
    y = np.ones(64)
    ident, s = exe(x, y)
    x[:] = -5.0
    np.testing.assert_array_equal(ident, np.arange(64.0))
    np.testing.assert_array_equal(s, np.arange(64.0) + 1)
    del exe
    import gc

    gc.collect()
    np.testing.assert_array_equal(ident + 0, np.arange(64.0))  # result keeps its buffer alive


def test_argument_conversions_and_errors():
    exe = rt.compile(IDENT_ADD.format(t="3xf64", op="add"))
    x = np.arange(6.0)[::2]  # strided
    _, s = exe(x, [1, 2, 3])  # list of ints -> f64 losslessly
    np.testing.assert_array_equal(s, x + [1, 2, 3])
    with pytest.raises(TypeError, match="argument 0"):
        exe(np.arange(4.0), np.arange(3.0))
    with pytest.raises(TypeError, match="dtype float64"):
        exe(np.arange(3, dtype=np.float32), np.arange(3.0))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        exe(np.arange(3.0))
    scal = rt.compile(IDENT_ADD.format(t="f64", op="add"))
    _, s = scal(2.5, np.float64(1.0))
    assert s.shape == () and s == 3.5


def test_compile_rejects_dynamic_module():
    with pytest.raises(ValueError, match="non-static"):
        rt.compile(ONES_PLUS)


def test_specialize_errors():
    with pytest.raises(ValueError, match="bad type string"):
        specialize(ONES_PLUS, [None, "tensor<3xf6"], {0: 3})
    with pytest.raises(ValueError, match="incompatible"):
        specialize(ONES_PLUS, [None, "tensor<3xf32>"], {0: 3})
    with pytest.raises(SpecializationError, match="stablehlo.add"):
        specialize(ONES_PLUS, [None, "tensor<3xf64>"], {0: 4})


def test_bfloat16_results_come_back_as_bits_and_read_as_bfloat16():
    """A bfloat16 result is compiled bitcast to int16 (``mlir_passes.bf16_results``: jaxlib's
    own bfloat16 read tries to import jax at every call) and read back as bfloat16: the values,
    the dtype and a writable array of its own, also after a serialization round trip."""
    exe = rt.compile(IDENT_ADD.format(t="5xbf16", op="add"))
    assert exe.bits == (0, 1) and exe.out_types == ("tensor<5xbf16>", "tensor<5xbf16>")
    x = np.array([1.5, -2.0, 0.0, 3.25, 1e30], ml_dtypes.bfloat16)
    y = np.array([0.25, 2.0, -0.0, 1.0, 1e30], ml_dtypes.bfloat16)
    for e in (exe, rt.deserialize(rt.serialize(exe))):
        ident, s = e(x, y)
        for got, want in ((ident, x), (s, (x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16))):
            assert got.dtype == ml_dtypes.bfloat16 and got.shape == (5,)
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
        ident[0] = 7.0   # writable, and not the argument
        assert x[0] == 1.5


def test_serialize_roundtrip_and_hlo_text():
    exe = rt.compile(specialize(ONES_PLUS, [None, "tensor<4xf64>"], {0: 4}))
    exe2 = rt.deserialize(rt.serialize(exe))
    x = np.arange(4.0)
    for a, b in zip(exe(x), exe2(x)):
        np.testing.assert_array_equal(a, b)
    assert "HloModule" in rt.hlo_text(exe)
    with pytest.raises(ValueError):
        rt.deserialize(b"garbage")


def test_dynjax_xla_options(monkeypatch):
    """DYNJAX_XLA_OPTIONS reaches XLA's CompileOptions of dynjax's compiles (and their cache
    key); a malformed item is a ValueError naming the variable and the item."""
    from dynjax.runtime import compile_options as opts
    monkeypatch.delenv("DYNJAX_XLA_OPTIONS", raising=False)
    assert opts.xla_option_overrides() == ()
    base = opts.compile_options_id()
    monkeypatch.setenv("DYNJAX_XLA_OPTIONS",
                       "xla_cpu_use_fusion_emitters=false, xla_backend_optimization_level=2 "
                       "--xla_dump_hlo_pass_re=none")
    assert opts.xla_option_overrides() == (("xla_cpu_use_fusion_emitters", False),
                                          ("xla_backend_optimization_level", 2),
                                          ("xla_dump_hlo_pass_re", "none"))
    assert opts.compile_options().env_option_overrides == list(opts.xla_option_overrides())
    assert opts.compile_options_id() != base
    st = specialize(ONES_PLUS, [None, "tensor<3xf64>"], {0: 3})
    y, io = rt.compile(st)(np.arange(3.0))
    np.testing.assert_array_equal(y, np.arange(3.0) + 1.0)
    np.testing.assert_array_equal(io, np.arange(3))
    for bad in ("fusion=false", "xla_cpu_use_fusion_emitters", "xla_cpu_use_fusion_emitters="):
        monkeypatch.setenv("DYNJAX_XLA_OPTIONS", bad)
        with pytest.raises(ValueError, match=r"DYNJAX_XLA_OPTIONS: .*" + bad.split("=")[0]):
            rt.compile(st)


# ten steps of a := a/2 + sum(a)/1000 on 557 floats (bench.py's row 12)
DECAY = """func.func @main(%x: tensor<557xf64>) -> tensor<557xf64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %ten = stablehlo.constant dense<10> : tensor<i64>
  %w:2 = stablehlo.while(%i = %zero, %a = %x) : tensor<i64>, tensor<557xf64>
    cond {
      %lt = stablehlo.compare LT, %i, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %half = stablehlo.constant dense<0.5> : tensor<557xf64>
      %z = stablehlo.constant dense<0.0> : tensor<f64>
      %milli = stablehlo.constant dense<0.001> : tensor<f64>
      %s = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<557xf64>, tensor<f64>) -> tensor<f64>
      %sm = stablehlo.multiply %s, %milli : tensor<f64>
      %b = stablehlo.broadcast_in_dim %sm, dims = [] : (tensor<f64>) -> tensor<557xf64>
      %ah = stablehlo.multiply %a, %half : tensor<557xf64>
      %a1 = stablehlo.add %ah, %b : tensor<557xf64>
      %i1 = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %i1, %a1 : tensor<i64>, tensor<557xf64>
    }
  return %w#1 : tensor<557xf64>
}"""


def test_a_run_finishes_on_the_calling_thread():
    # The client is synchronous (runtime.xla.get_client): a program with a loop has finished
    # when the call that launched it returns. An asynchronous client would hand this one to
    # a worker thread, which the caller then waits for (~20 us more a call).
    from dynjax.runtime import xla

    exe = rt.compile(DECAY)
    x = np.linspace(0.0, 1.0, 557)
    for _ in range(5):
        outs = exe._run(xla._put_all([x], exe.in_avals)).consume_with_handlers(exe._handlers)
        assert outs[0].is_ready()
        (got,) = xla._host_outputs(exe, outs)
        want = x
        for _ in range(10):
            want = want * 0.5 + np.sum(want) * 1e-3
        np.testing.assert_allclose(got, want, rtol=1e-14)
