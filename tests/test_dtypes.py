"""Every dtype through every layer: printing, promotion (against a written table), creation,
arithmetic eager and compiled against numpy, transfers both ways, astype, refusals.

The promotion table below is written out by hand from JAX's type promotion lattice; where
it differs from numpy (integers never widen a float: i64 + f32 is f32; bf16 + f16 is f32)
the difference is deliberate and documented in doc/user_guide.md.
"""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dynjax
import dynjax.numpy as jnp
from dynjax import make_jaxpr, qjit
from helpers import examples

NAMES = ["bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "bf16", "f16", "f32", "f64",
         "c64", "c128"]
DT = {"bool": np.dtype(bool), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
      "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64), "i8": np.dtype(np.int8),
      "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
      "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32),
      "f64": np.dtype(np.float64), "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128)}
ALL = [DT[n] for n in NAMES]

# row dtype with column dtype, columns in NAMES order
PROMOTION = """
bool  bool u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128
u8    u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128
u16   u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128
u32   u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128
u64   u64  u64  u64  u64  u64  f64  f64  f64  f64  bf16 f16  f32  f64  c64  c128
i8    i8   i16  i32  i64  f64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128
i16   i16  i16  i32  i64  f64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128
i32   i32  i32  i32  i64  f64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128
i64   i64  i64  i64  i64  f64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128
bf16  bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128
f16   f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128
f32   f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128
f64   f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128
c64   c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128
c128  c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
"""
TABLE = {}
for _line in PROMOTION.strip().splitlines():
    _row, *_cells = _line.split()
    for _col, _cell in zip(NAMES, _cells):
        TABLE[_row, _col] = _cell

# a Python scalar (weakly typed) with an array of each dtype
WEAK = {  # dtype: (with int, with float, with complex)
    "bool": ("i64", "f64", "c128"), "bf16": ("bf16", "bf16", "c64"), "f16": ("f16", "f16", "c64"),
    "f32": ("f32", "f32", "c64"), "f64": ("f64", "f64", "c128"), "c64": ("c64", "c64", "c64"),
    "c128": ("c128", "c128", "c128"),
    **{n: (n, "f64", "c128") for n in ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"]},
}


def test_the_table_is_symmetric():
    assert all(TABLE[a, b] == TABLE[b, a] for a in NAMES for b in NAMES)


@pytest.mark.parametrize("a", NAMES)
def test_promotion_table(a):
    for b in NAMES:
        assert jnp.promote_types(DT[a], DT[b]) == DT[TABLE[a, b]], (a, b)
    # and what an actual traced operation produces
    row = make_jaxpr(lambda *xs: [xs[0] + x for x in xs[1:]])(
        np.zeros(2, DT[a]), *[np.zeros(2, DT[b]) for b in NAMES])
    got = [v.aval.dtype for v in row.jaxpr.outvars]
    assert got == [DT[TABLE[a, b]] for b in NAMES]


@pytest.mark.parametrize("a", NAMES)
def test_weak_python_scalars(a):
    want = [DT[n] for n in WEAK[a]]
    got = [jnp.result_type(np.zeros(1, DT[a]), s) for s in (2, 2.5, 1j)]
    assert got == want
    jx = make_jaxpr(lambda x: (x * 2, x * 2.5, x * 1j))(np.ones(3, DT[a]))
    assert [v.aval.dtype for v in jx.jaxpr.outvars] == want


@pytest.mark.parametrize("name", NAMES[1:])
def test_a_requested_dtype_never_changes(name):
    dt = DT[name]
    assert qjit(lambda: jnp.zeros(3, dt))().dtype == dt
    assert jnp.zeros(3, dt).dtype == dt
    assert qjit(lambda n: jnp.ones(n, dt), static_argnums=())(4).dtype == dt
    jx = make_jaxpr(lambda: jnp.zeros(3, dt))()
    assert f":{name}[3]" in str(jx), str(jx)   # printed as JAX prints it


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_through_qjit(name):
    dt = DT[name]
    f = qjit(lambda x, s: (x, x[::-1], s), abstracted_axes=({0: "n"}, None))
    for n in (0, 1, 5):
        x = np.arange(n).astype(dt)
        s = np.arange(1).astype(dt)[0]
        a, b, c = f(x, s)
        assert a.dtype == dt and b.dtype == dt and c.dtype == dt
        np.testing.assert_array_equal(a.astype(np.float64) if name == "bf16" else a,
                                      x.astype(np.float64) if name == "bf16" else x)
        np.testing.assert_array_equal(np.ascontiguousarray(b).view(np.uint8),
                                      np.ascontiguousarray(x[::-1]).view(np.uint8))
        assert not np.shares_memory(a, x)
    big = np.arange(3).astype(dt.newbyteorder(">")) if dt.itemsize > 1 and name != "bf16" else None
    if big is not None:
        np.testing.assert_array_equal(f(big, s)[0], np.arange(3).astype(dt))


def _values(dt, n, seed):
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = np.array([info.min, info.max, 0, 1], dtype=dt)
        body = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        return np.concatenate([edge, body])[:n] if n >= 4 else body
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5]
    base = np.concatenate([specials, rng.normal(size=n) * 10])[:n]
    if dt.kind == "c":   # finite parts: XLA's complex special values differ (C99 Annex G)
        base = np.nan_to_num(base, nan=0.5, posinf=2.0, neginf=-3.0)
        return (base + 1j * base[::-1]).astype(dt)
    return base.astype(dt)


def _same(got, want, dt):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    out = want.dtype
    tol = {2: 1e-2}.get(out.itemsize if out.kind != "c" else out.itemsize // 2, 1e-6)
    np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128), rtol=tol, atol=tol,
                               equal_nan=True)


BINARY = {"add": (jnp.add, np.add), "subtract": (jnp.subtract, np.subtract),
          "multiply": (jnp.multiply, np.multiply), "equal": (jnp.equal, np.equal),
          "maximum": (jnp.maximum, np.maximum), "less": (jnp.less, np.less)}


@pytest.mark.parametrize("op", sorted(BINARY))
@given(seed=st.integers(0, 10_000), name=st.sampled_from(NAMES))
@settings(max_examples=examples(12), deadline=None)
def test_binary_same_dtype_against_numpy(op, seed, name):
    dt = DT[name]
    f, np_f = BINARY[op]
    if (op == "subtract" and name == "bool") or (op in ("maximum", "less") and dt.kind == "c"):
        with pytest.raises(TypeError, match=f"{op if op != 'subtract' else 'sub'}|{dt.name}|bool|complex"):
            make_jaxpr(f)(np.ones(2, dt), np.ones(2, dt))
        return
    compiled = qjit(f, abstracted_axes={0: "n"})
    for n in (0, 1, 7):
        x, y = _values(dt, n, seed), _values(dt, n, seed + 1)
        with np.errstate(all="ignore"):
            want = np_f(x.astype(np.float32) if name == "bf16" else x,
                        y.astype(np.float32) if name == "bf16" else y)
        if name == "bf16" and want.dtype.kind == "f":
            want = want.astype(dt)
        eager, comp = f(x, y), compiled(x, y)
        _same(eager, want, dt)
        _same(comp, want, dt)


UNARY = {"negative": (jnp.negative, np.negative), "abs": (jnp.abs, np.abs), "sqrt": (jnp.sqrt, np.sqrt),
         "exp": (jnp.exp, np.exp), "sin": (jnp.sin, np.sin), "sum": (jnp.sum, np.sum)}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("name", ["i8", "u8", "i32", "f16", "f32", "f64", "c64", "c128"])
def test_unary_against_numpy(op, name):
    dt = DT[name]
    f, np_f = UNARY[op]
    compiled = qjit(f, abstracted_axes={0: "n"})
    for n in (0, 1, 6):
        x = _values(dt, n, 5)
        if op in ("sqrt", "exp", "sin") and dt.kind in "iu":
            want = np_f(x.astype(np.float64))   # integers are computed in float64 (JAX's rule)
        elif op == "sum" and dt.kind in "iu":
            want = np.sum(x)                     # numpy accumulates small ints in 64 bits
        else:
            with np.errstate(all="ignore"):
                want = np_f(x)
        want = np.asarray(want)
        with np.errstate(all="ignore"):
            _same(np.asarray(f(x)), want, dt)
            _same(np.asarray(compiled(x)), want, dt)


@pytest.mark.parametrize("src", NAMES)
def test_astype_every_pair(src):
    x = _values(DT[src], 6, 11)
    for dst in NAMES:
        dt = DT[dst]
        got = qjit(lambda v: v.astype(dt), abstracted_axes={0: "n"})(x)
        eager = jnp.astype(x, dt)
        assert got.dtype == dt and eager.dtype == dt
        _bits_equal(got, eager)   # eager and compiled agree bit for bit (any NaN equals any NaN)
        finite_in_range = np.ones(x.shape, bool)
        if DT[src].kind in "fcV" and dt.kind in "biu":
            re = np.real(x).astype(np.float64)
            finite_in_range = np.isfinite(re) if dt.kind == "b" else (
                np.isfinite(re) & (re >= np.iinfo(dt).min) & (re <= np.iinfo(dt).max))
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = x.astype(dt) if not (DT[src].kind == "c" and dt.kind == "b") else (x != 0)
        if dt.kind in "fcV":
            np.testing.assert_allclose(got[finite_in_range].astype(np.complex128),
                                       want[finite_in_range].astype(np.complex128), rtol=0, atol=0,
                                       equal_nan=True)
        else:
            np.testing.assert_array_equal(got[finite_in_range], want[finite_in_range])


def _bits_equal(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind in "fcV":
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        na, nb = np.isnan(a.astype(wide)), np.isnan(b.astype(wide))
        np.testing.assert_array_equal(na, nb)
        a, b = a[~na], b[~nb]
    np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


REFUSED = [  # (what, dtype): each a TypeError naming the operation and the dtype
    (lambda x: x < x, "c64"), (lambda x: jnp.maximum(x, x), "c128"), (lambda x: jnp.histogram(x), "c64"),
    (lambda x: jnp.max(x), "c128"), (lambda x: jnp.argmax(x), "c64"), (lambda x: jnp.floor(x), "c64"),
    (lambda x: x & x, "f32"), (lambda x: ~x, "f64"), (lambda x: x - x, "bool"),
    (lambda x: x % x, "c128"), (lambda x: x // x, "c64"), (lambda x: dynjax.lax.atan2(x, x), "c128"),
]


@pytest.mark.parametrize("fn,name", REFUSED)
def test_refused_operation_dtype_pairs(fn, name):
    with pytest.raises(TypeError) as e:
        make_jaxpr(fn)(np.ones(3, DT[name]))
    msg = str(e.value)
    assert DT[name].name in msg or name in msg, msg


@pytest.mark.parametrize("dtype", [np.longdouble, "U3", object, "datetime64[s]"])
def test_unsupported_dtypes_are_refused_not_converted(dtype):
    with pytest.raises(TypeError, match="not supported|not understood"):
        jnp.zeros(3, dtype)
    with pytest.raises(TypeError):
        qjit(lambda x: x)(np.zeros(3, dtype))


def test_complex_functions():
    z = np.array([1 + 2j, -3.5 + 0.5j, 0j, 2 - 1j])
    f = qjit(lambda z: (jnp.real(z), jnp.imag(z), jnp.conj(z), jnp.angle(z), jnp.abs(z), jnp.exp(z),
                        jnp.log(z + 1), jnp.sqrt(z), z @ z), abstracted_axes={0: "n"})
    for zz in (z, z.astype(np.complex64)):
        want = (zz.real, zz.imag, np.conj(zz), np.angle(zz), np.abs(zz), np.exp(zz), np.log(zz + 1),
                np.sqrt(zz), zz @ zz)
        for got, w in zip(f(zz), want):
            assert got.dtype == w.dtype
            np.testing.assert_allclose(got, w, rtol=1e-5)
    assert qjit(lambda s: jnp.ones(s, complex))((3, 4)).dtype == np.complex128


def test_shapes_given_as_arrays():
    assert jnp.ones(np.array([2, 1, 3])).shape == (2, 1, 3)
    assert jnp.zeros((np.int32(2), np.int64(3))).shape == (2, 3)
    f = qjit(lambda s: jnp.ones(s) * 2)
    np.testing.assert_array_equal(f(np.array([2, 3])), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(f(np.array([4, 1])), np.full((4, 1), 2.0))
    g = qjit(lambda x, s: x.reshape(s), abstracted_axes=({0: "n"}, None))
    np.testing.assert_array_equal(g(np.arange(6.0), np.array([2, 3])), np.arange(6.0).reshape(2, 3))


def test_shaped_array_annotations_compile_ahead_of_time():
    @qjit
    def f(x: dynjax.ShapedArray([1, 3, 1], float)):
        return x.sum() * 2
    assert f.cache_info()["traces"] == 1 and "f64[1,3,1]" in str(f.jaxpr)
    assert float(f(np.ones((1, 3, 1)))) == 6.0
    assert f.cache_info()["traces"] == 1


# --- every dynjax.numpy function x every dtype ----------------------------------------------------
# How to call each public function on an array ``x`` (and ``y``) of one dtype; numpy is the
# oracle: where numpy refuses the dtype (TypeError), dynjax must refuse it too.
CALLS = {
    **{n: (lambda f: lambda x, y: f(x)) for n in [
        "abs", "absolute", "all", "amax", "amin", "angle", "any", "arccos", "arcsin", "arctan", "argmax",
        "argmin", "argsort", "array", "asarray", "cbrt", "ceil", "conj", "conjugate", "cos", "cosh", "cumsum",
        "diff", "empty_like", "exp", "expm1", "flip", "floor", "imag", "invert", "isfinite", "log", "log1p",
        "logical_not", "max", "mean", "min", "negative", "ones_like", "prod", "ravel", "real", "rint", "sign",
        "sin", "sinh", "sort", "sqrt", "square", "sum", "tan", "tanh", "zeros_like",
        "transpose", "iscomplexobj", "isrealobj", "ndim", "shape", "size",
        "isnan", "isinf", "log2", "log10", "exp2", "deg2rad", "rad2deg", "var", "std", "count_nonzero",
        "nansum", "nanmean", "nanmax", "nanmin", "atleast_1d", "atleast_2d", "atleast_3d",
        "cumprod", "nancumsum", "nancumprod", "ptp", "around", "round", "bitwise_not", "bitwise_invert",
        "sinc", "signbit", "median", "nanmedian", "average", "cumulative_sum", "cumulative_prod"]},
    **{n: (lambda f, n=n: lambda x, y: f(x, 30 if "percentile" in n else 0.3)) for n in [
        "quantile", "nanquantile", "percentile", "nanpercentile"]},
    # explicit limits: numpy computes bfloat16 in float32, whose default limits are not bf16's
    "nan_to_num": lambda f: lambda x, y: f(x, nan=2.0, posinf=100.0, neginf=-100.0),
    **{n: (lambda f: lambda x, y: f(x, y)) for n in [
        "add", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "divide", "dot", "equal",
        "floor_divide", "greater", "greater_equal", "inner", "less", "less_equal", "logical_and",
        "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "not_equal", "outer",
        "power", "remainder", "subtract", "true_divide", "vdot", "matmul", "convolve", "correlate", "kron",
        "fmod", "hypot", "copysign", "heaviside", "isclose", "allclose"]},
    **{n: (lambda f: lambda x, y: f(x, y % 8 if y.dtype.kind in "iu" else y)) for n in [   # counts < 8
        "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"]},
    "tensordot": lambda f: lambda x, y: f(x, y, axes=1),
    "tril": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), 1),
    "triu": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), -1),
    "astype": lambda f: lambda x, y: f(x, np.float32),
    "broadcast_to": lambda f: lambda x, y: f(x, (2,) + x.shape),
    "clip": lambda f: lambda x, y: f(x, y, y),
    "concatenate": lambda f: lambda x, y: f([x, y]),
    "hstack": lambda f: lambda x, y: f([x, y]),
    "vstack": lambda f: lambda x, y: f([x, y]),
    "stack": lambda f: lambda x, y: f([x, y]),
    "expand_dims": lambda f: lambda x, y: f(x, 0),
    "fliplr": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y])),
    "flipud": lambda f: lambda x, y: f(x),
    "full_like": lambda f: lambda x, y: f(x, 1),
    "moveaxis": lambda f: lambda x, y: f(x, 0, 0),
    "swapaxes": lambda f: lambda x, y: f(x, 0, 0),
    "pad": lambda f: lambda x, y: f(x, 1),
    "reshape": lambda f: lambda x, y: f(x, (1, -1)),
    "roll": lambda f: lambda x, y: f(x, 1),
    "squeeze": lambda f: lambda x, y: f(x[None], 0),
    "where": lambda f: lambda x, y: f(x != x, x, y),
    **{n: (lambda f: lambda x, y: f(x)) for n in [
        "flatnonzero", "argwhere", "unique"]},
    "nonzero": lambda f: lambda x, y: f(x)[0],
    "unique_values": lambda f: lambda x, y: _sorted(f(x)),   # numpy 2.3+: in no set order
    "unique_counts": lambda f: lambda x, y: f(x)[1],
    "unique_inverse": lambda f: lambda x, y: f(x)[1],
    "bincount": lambda f: lambda x, y: f(x % 7),
    "unique_all": lambda f: lambda x, y: f(x)[1],
    "histogram": lambda f: lambda x, y: f(x)[0],
    "compress": lambda f: lambda x, y: f(x != y, x),
    "extract": lambda f: lambda x, y: f(x != y, x),
    "take": lambda f: lambda x, y: f(x, [0, 4, 2, -1]),
    "take_along_axis": lambda f: lambda x, y: f(x, np.array([3, 1, 0, 1]), 0),
    "put": lambda f: (lambda x, y: _put_numpy(x, y)) if f is np.put else
    (lambda x, y: f(x, [0, 2], y[:2], inplace=False)),
    "searchsorted": lambda f: lambda x, y: f(_sorted(x), y),
    "digitize": lambda f: lambda x, y: f(x, _sorted(y)),
    "diag": lambda f: lambda x, y: f(x, 1),
    "diagonal": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), 1),
    "trace": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), 1),
    "einsum": lambda f: lambda x, y: f("i,i->", x, y),
    "rot90": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y])),
    "tile": lambda f: lambda x, y: f(x, (2, 2)),
    "repeat": lambda f: lambda x, y: f(x, 2),
    "append": lambda f: lambda x, y: f(x, y),
    "insert": lambda f: lambda x, y: f(x, [3, 1, -1], y[0]),
    "delete": lambda f: lambda x, y: f(x, [0, 2, 2]),
    "split": lambda f: lambda x, y: f(x, [2])[1],
    "array_split": lambda f: lambda x, y: f(x, 2)[0],
    "hsplit": lambda f: lambda x, y: f(x, [1, 4])[1],
    "vsplit": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), 2)[1],
    "dsplit": lambda f: lambda x, y: f(x.reshape(1, 1, 5), [3])[0],
    "meshgrid": lambda f: lambda x, y: f(x, y[:3])[1],
    "indices": lambda f: lambda x, y: f((2, 3), dtype=x.dtype),
    "interp": lambda f: lambda x, y: f(x, _sorted(y), y),
}


def _sorted(x):   # numpy's sort of bfloat16 (kind "V") does not put NaN last
    return np.sort(x) if isinstance(x, np.ndarray) and x.dtype.kind != "V" else jnp.sort(x)


def _put_numpy(x, y):
    out = x.copy()
    np.put(out, [0, 2], y[:2])
    return out


NOT_PER_DTYPE = {  # public callables that take no array of a given dtype
    "arange", "empty", "eye", "full", "identity", "linspace", "ones", "zeros", "promote_types",
    "result_type", "getitem", "astype_", "indexing", "finfo", "iinfo",
    "at",   # x.at[idx] has no numpy counterpart: tests/test_indexing.py covers every dtype
}

# the rest of jax.numpy (issue 21; tests/test_numpy_more.py covers them on dynamic sizes)
CALLS.update({
    **{n: (lambda f: lambda x, y: f(x)) for n in [
        "acos", "asin", "atan", "acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "degrees",
        "radians", "fabs", "positive", "trunc", "isposinf", "isneginf", "iscomplex", "isreal",
        "spacing", "i0", "bitwise_count", "nanprod", "nanvar", "nanstd", "nanargmax", "nanargmin",
        "trim_zeros", "ediff1d", "diagflat", "copy", "unwrap",
        "packbits", "gradient", "trapezoid", "histogram_bin_edges", "matrix_transpose", "resize",
        "argpartition", "partition"]},
    **{n: (lambda f: lambda x, y: f([x, y])) for n in ["column_stack", "dstack", "lexsort"]},
    "unstack": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]))[1],
    **{n: (lambda f: lambda x, y: f(x)[0]) for n in ["frexp", "modf"]},
    **{n: (lambda f: lambda x, y: f(x, y)) for n in [
        "atan2", "fmax", "fmin", "logaddexp", "logaddexp2", "nextafter", "float_power", "gcd", "lcm",
        "polyval", "union1d", "intersect1d", "setdiff1d", "setxor1d", "isin",
        "array_equal", "array_equiv", "vecdot", "concat", "block"]},
    "divmod": lambda f: lambda x, y: f(x, y)[1],
    "ldexp": lambda f: lambda x, y: f(x, (x != x).astype(np.int64) + 2),
    "unpackbits": lambda f: lambda x, y: f((x != y).astype(np.uint8)),
    "rollaxis": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), 1),
    "permute_dims": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]),
                                             (1, 0)),
    "matvec": lambda f: lambda x, y: f(np.stack([x, y]) if isinstance(x, np.ndarray) else jnp.stack([x, y]), y),
    "vecmat": lambda f: lambda x, y: f(*(lambda m: (m[:, 0], m))(np.stack([x, y]) if isinstance(x, np.ndarray)
                                                               else jnp.stack([x, y]))),
    "fill_diagonal": lambda f: (lambda x, y: _fill_diagonal_numpy(x, y)) if f is np.fill_diagonal else
    (lambda x, y: f(jnp.stack([x, y]) if not isinstance(x, np.ndarray) else np.stack([x, y]), x[0], inplace=False)),
    "choose": lambda f: lambda x, y: f((x != y).astype(np.int64), [x, y], mode="clip"),
    "select": lambda f: lambda x, y: f([x != y], [x], y),
    "piecewise": lambda f: lambda x, y: f(x, [x != y], [1, 2]),
    "place": lambda f: (lambda x, y: _place_numpy(x, y)) if f is np.place else
    (lambda x, y: f(x, x != y, y[:2], inplace=False)),
    "put_along_axis": lambda f: (lambda x, y: _put_along_axis_numpy(x, y)) if f is np.put_along_axis else
    (lambda x, y: f(x, (x != x).astype(np.int64)[:1] * 0, y[:1], axis=0, inplace=False)),
    "apply_along_axis": lambda f: lambda x, y: f(lambda v: v[::-1], 0, x),
    "apply_over_axes": lambda f: lambda x, y: f(np.sum if isinstance(x, np.ndarray) and f is np.apply_over_axes
                                                  else jnp.sum, x, [0]),
})
NOT_PER_DTYPE |= {
    # dtype objects, predicates and constructors that take no array of a given dtype
    "bfloat16", "bool_", "complex128", "complex64", "float16", "float32", "float64", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "cdouble", "csingle", "double", "single", "half",
    "float_", "int_", "uint", "complex_", "character", "complexfloating", "flexible", "floating", "generic",
    "inexact", "integer", "number", "object_", "signedinteger", "unsignedinteger", "dtype", "can_cast", "ndarray",
    "isdtype", "issubdtype", "isscalar", "iterable", "broadcast_shapes", "broadcast_arrays",
    "bartlett", "blackman", "hamming", "hanning", "kaiser", "geomspace", "logspace", "tri", "fromfunction",
    "diag_indices", "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "mask_indices", "ravel_multi_index", "unravel_index", "ix_", "vectorize",
    # by their fitting/solving nature float-only, as in numpy; covered in test_numpy_more.py
    "polydiv", "polyfit", "histogramdd",
    # LAPACK's dtypes only (float16 / bfloat16 refused, integers as float64) and always complex
    # (JAX's rule; numpy gives real roots a real dtype): every dtype in test_linalg_eig.py
    "roots",
    # numpy computes these in float64 whatever the input; JAX (and dynjax) keep float32
    "cov", "corrcoef",
    "cross",   # its vector axis must be static (2 or 3): test_numpy_more.py
    "pow",   # an alias of power (its row above)
    # JAX's convention, not numpy's: reciprocal promotes integers to float; vander keeps the
    # integer type (numpy: int64); polyadd/polysub/polymul keep leading zeros (numpy trims them)
    "reciprocal", "vander", "polyadd", "polysub", "polymul",
    # JAX's dtypes where numpy widens: poly/polyder/polyint keep float16, bfloat16 and float32
    # (numpy: float64), sort_complex gives complex64 for float32 (numpy: complex128), and
    # histogram2d counts are int64 without weights (numpy: float64); test_numpy_more.py
    "poly", "polyder", "polyint", "sort_complex", "histogram2d",
}


def _fill_diagonal_numpy(x, y):
    out = np.stack([x, y])
    np.fill_diagonal(out, x[0])
    return out


def _place_numpy(x, y):
    out = x.copy()
    np.place(out, x != y, y[:2])
    return out


def _put_along_axis_numpy(x, y):
    out = x.copy()
    np.put_along_axis(out, np.zeros(1, np.int64), y[:1], axis=0)
    return out


def test_every_function_has_a_row():
    public = {n for n in dir(jnp) if not n.startswith("_") and callable(getattr(jnp, n))}
    missing = public - set(CALLS) - NOT_PER_DTYPE - {"bool"}
    assert not missing, f"add a row to CALLS for {sorted(missing)}"


# JAX's rule where numpy widens: jnp.cumulative_prod keeps an integer dtype (numpy's
# accumulates small integers in 64 bits)
KEEPS_INTEGER_DTYPE = {"cumulative_prod"}


def _widened(got, want, dt):
    """JAX's rule where numpy differs: integers and bools computed as float64 by inexact
    functions (numpy picks float16 for 8-bit, float32 for 16-bit)."""
    return dt.kind in "biu" and got.dtype == np.float64 and want.dtype.kind == "f"


@pytest.mark.parametrize("fname", sorted(CALLS))
def test_function_on_every_dtype_against_numpy(fname):
    call_np, call_jnp = CALLS[fname](getattr(np, fname)), CALLS[fname](getattr(jnp, fname))
    for name in NAMES:
        dt = DT[name]
        x, y = _values(dt, 5, 1), _values(dt, 5, 2)
        if fname in ("power", "arccos", "arcsin", "log", "sqrt", "log1p") and dt.kind in "fc":
            x = np.abs(x).astype(dt) / 8 if name != "bf16" else x
        if fname == "power" and dt.kind in "iu":   # numpy raises on negative integer powers;
            y = (np.abs(y.astype(np.int64)) % 5).astype(dt)   # dynjax gives 0 (XLA's rule)
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            try:
                want = call_np(x.astype(np.float32) if name == "bf16" else x,
                               y.astype(np.float32) if name == "bf16" else y)
            except (TypeError, ValueError, np.exceptions.DTypePromotionError):
                want = None
            if want is None:   # numpy refuses: so does dynjax, naming the problem
                with pytest.raises((TypeError, ValueError)):
                    call_jnp(x, y)
                continue
            try:
                got = call_jnp(x, y)
            except TypeError as e:   # a documented refusal (see REFUSED): names the dtype
                assert dt.kind == "c" or name == "bool" or dt.kind == "f", (fname, name, e)
                assert dt.name in str(e) or name in str(e) or "bool" in str(e), (fname, name, e)
                continue
        if not isinstance(want, (np.ndarray, np.generic)):
            assert got == want, (fname, name)
            continue
        got, want = np.asarray(got), np.asarray(want)
        if _widened(got, want, dt):   # compare with numpy computing in float64 too
            with np.errstate(all="ignore"):
                want = np.asarray(call_np(x.astype(np.float64), y.astype(np.float64)))
        if dt == np.bool_ and want.dtype == np.int8 and got.dtype == np.bool_:
            want = want.astype(bool)   # numpy has no bool loop for these ufuncs (conj, square)
        if name == "bf16" and want.dtype == np.float32 and got.dtype == dt:
            want = want.astype(dt)
        if fname in KEEPS_INTEGER_DTYPE and dt.kind in "iu" and got.dtype == dt:
            want = want.astype(dt)   # JAX's rule: the product in the integer's own dtype
        assert got.shape == want.shape, (fname, name, got.shape, want.shape)
        assert got.dtype == want.dtype or _widened(got, want, dt) or (
            frozenset({np.dtype(want.dtype), np.dtype(got.dtype)}) and name in ("u64",)), \
            (fname, name, got.dtype, want.dtype)
        if fname in ("empty_like",):
            continue
        if name in COMPILED_DTYPES and fname not in ("iscomplexobj", "isrealobj", "ndim", "shape", "size"):
            compiled = np.asarray(qjit(call_jnp, abstracted_axes={0: "n"})(x, y))
            assert compiled.dtype == got.dtype and compiled.shape == got.shape, (fname, name)
            _close(compiled, got, f"{fname} {name} compiled vs eager")
        _close(got, want, f"{fname} {name}")


COMPILED_DTYPES = ("i8", "u32", "bf16", "f32", "c128")   # eager vs compiled, per function


def _close(got, want, what):
    if want.dtype.kind in "biu" and got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    low = min(got.dtype.itemsize, want.dtype.itemsize) // (2 if want.dtype.kind == "c" else 1)
    tol = 2e-2 if low <= 2 else 1e-5
    np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128), rtol=tol,
                               atol=tol, equal_nan=True, err_msg=what)
