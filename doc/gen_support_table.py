"""Generate doc/support.md: every public name of ``jax.numpy`` (and ``jax.numpy.linalg``,
``jax.numpy.fft``, ``jax.lax``, ``jax.random``, ``jax.nn``, ``jax.scipy.special``) with
whether dynjax has it, and why not when it does not.

    python doc/gen_support_table.py          # rewrites doc/support.md
    python doc/gen_support_table.py --check  # exit 1 if doc/support.md is out of date

A name counts as supported when the dynjax module has an attribute of that name. A name
dynjax does not have gets the reason from ``REASONS`` (per module, then ``COMMON``), or
"not implemented yet". tests/test_support_table.py checks that the committed page matches
the code, so adding a function means rerunning this script.
"""
from __future__ import annotations

import importlib
import pathlib
import sys

MODULES = [
    ("jax.numpy", "dynjax.numpy"),
    ("jax.numpy.linalg", "dynjax.numpy.linalg"),
    ("jax.numpy.fft", "dynjax.numpy.fft"),
    ("jax.lax", "dynjax.lax"),
    ("jax.random", "dynjax.random"),
    ("jax.nn", "dynjax.nn"),
    ("jax.scipy.special", "dynjax.scipy.special"),
]

_IO = "I/O and printing are outside traced code: use numpy on the inputs and results"
_NARROW = "4- and 8-bit float and sub-byte integer types: dynjax computes with 8- to 64-bit types only"
_COLLECTIVE = ("a collective dynjax does not offer yet (dynjax's collectives act under "
               "vmap(axis_name=...) and in shard_map; pmap is not there yet)")
_PRIMITIVE = ("a JAX primitive object: dynjax's primitives are dynjax.lax.primitives.*_p, with their own "
              "names and rules")
_SHARDING = "a placement primitive of JAX's runtime: dynjax places arrays with device_put(x, sharding) and sharded qjit calls"
_TOKEN = "tokens and ordering effects: dynjax orders effects itself (dynjax.debug)"

_DERIVED = "no primitive: dynjax computes it from other primitives: "
_DOT_ALGORITHM = ("an algorithm for precision= of dot_general (input and accumulation types); "
                  "dynjax accepts Precision values and ignores them, computing every dot in its "
                  "operands' (or preferred_element_type's) type, as the CPU does")
_ACCURACY = ("the accuracy= argument of JAX's transcendental functions (exp, log, tanh ...), "
             "which choose between approximations on accelerators; dynjax's take no accuracy=")
_ONE_SCATTER = ("dynjax has one scatter primitive, with a kind= param (set, add, mul, min, max) and "
                "whole axes indexed by rows of indices (dynjax.lax.primitives.scatter_p); "
                "lax.scatter* with JAX's dimension numbers are built on it")
_ONE_REDUCE_WINDOW = ("dynjax has one reduce_window primitive, with a kind= param (sum, prod, max, "
                      "min; dynjax.lax.reduce_window.reduce_window_p), not one per monoid nor one "
                      "with a jaxpr computation")
_LAX_PRIMITIVES = {
    **{f"{n}_p": _DERIVED + f"lax.{n} is log1p and sqrt under a custom_jvp"
       for n in ("acosh", "asinh", "atanh")},
    **{f"{n}_p": _COLLECTIVE for n in ("ragged_all_to_all",)},
    "after_all_p": _TOKEN, "create_token_p": _TOKEN,
    "approx_top_k_p": _DERIVED + "lax.approx_max_k / approx_min_k are exact (as JAX's on the CPU): "
                      "a stable sort and a slice",
    "clamp_p": _DERIVED + "lax.clamp is max then min",
    "copy_p": "dynjax's arrays are immutable values, so a copy is the value itself (no copy primitive)",
    "cumlogsumexp_p": _DERIVED + "lax.cumlogsumexp is an associative scan of logaddexp",
    "dce_sink_p": "an internal JAX helper",
    "device_put_p": _SHARDING,
    **{f"{n}_p": "JAX's comparison of symbolic dimensions (shape polymorphism); dynjax decides "
                 "dims by their symbolic expressions when tracing" for n in ("eq_to", "le_to", "lt_to")},
    "exp2_p": _DERIVED + "lax.exp2 is pow(2, x)",
    "gather_p": ("dynjax's gather primitive indexes whole axes with rows of indices "
                 "(dynjax.lax.primitives.gather_p), with no dimension numbers nor slice sizes; "
                 "lax.gather with JAX's dimension numbers is built on it"),
    **{n: _ONE_SCATTER for n in ("scatter_p", "scatter_add_p", "scatter_sub_p", "scatter_mul_p",
                                 "scatter_min_p", "scatter_max_p")},
    "mulhi_p": _DERIVED + "lax.mulhi is products of wider (or 32-bit half) integers",
    **{f"reduce_{n}_p": _DERIVED + f"lax.reduce_{n} is reduce_max / reduce_min / reduce_sum over "
                                   "the bits" for n in ("and", "or", "xor")},
    "reduce_p": ("dynjax's lax.reduce maps the monoid computations (add, mul, max, min) onto "
                 "reduce_sum / reduce_prod / reduce_max / reduce_min: there is no reduce primitive "
                 "with a jaxpr computation"),
    **{n: _ONE_REDUCE_WINDOW for n in ("reduce_window_p", "reduce_window_sum_p",
                                       "reduce_window_max_p", "reduce_window_min_p")},
    "rng_bit_generator_p": _DERIVED + "lax.rng_bit_generator computes XLA's Philox and Threefry "
                           "bit generators with dynjax's integer operations, bit for bit",
    "rng_uniform_p": "see rng_uniform",
    "scan_p": ("dynjax's scan primitive (dynjax.control_flow.primitives.scan_p) takes the length as an "
               "operand (a dynamic size) and carries the loop's dynamic sizes: its operands are "
               "consts, length, sizes, carry, xs, not JAX's consts, carry, xs with a length param"),
    **{n: "JAX's primitives for the derivative of max / min pooling; dynjax differentiates its "
          "reduce_window primitive with rules of its own" for n in (
        "select_and_gather_add_p", "select_and_scatter_add_p", "select_and_scatter_p")},
    **{f"shift_right_{n}_p": ("dynjax has one shift_right primitive: arithmetic for signed and "
                              "logical for unsigned dtypes (numpy's right_shift); "
                              "lax.shift_right_logical / _arithmetic bitcast to the other signedness "
                              "where needed") for n in ("arithmetic", "logical")},
    "split_p": _DERIVED + "lax.split is static or dynamic slices",
    "square_p": _DERIVED + "lax.square is integer_pow(x, 2)",
    "stack_p": _DERIVED + "lax.stack is broadcast_in_dim and concatenate",
    "unstack_p": _DERIVED + "lax.unstack is slices",
    "tile_p": _DERIVED + "lax.tile is broadcast_in_dim and reshape",
    "stop_gradient_p": _DERIVED + "lax.stop_gradient is an identity under a custom_jvp with a zero "
                       "derivative",
    "top_k_p": _DERIVED + "lax.top_k is a sort on (value, -index) keys and a slice",
}

REASONS = {
    "jax.numpy": {
        "load": _IO, "save": _IO, "savez": _IO, "fromfile": _IO, "frombuffer": _IO, "fromstring": _IO,
        "fromiter": _IO + " (an iterator's length is not known to a trace)",
        "frompyfunc": "wraps a Python function as a ufunc object; write jnp.vectorize(f) instead",
        "ufunc": "dynjax has no ufunc objects (no .reduce/.accumulate/.at); use the functions",
        "printoptions": _IO, "set_printoptions": _IO, "get_printoptions": _IO,
        "array_repr": _IO, "array_str": _IO,
        "from_dlpack": "DLPack exchange needs device buffers; dynjax's eager values are numpy arrays "
                       "(numpy.from_dlpack)",
        "ComplexWarning": "a numpy warning class, not part of dynjax's API",
        "einsum_path": "dynjax.numpy.einsum chooses its contraction order itself (optimize='greedy')",
        **{n: _NARROW for n in ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
                                "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                                "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2",
                                "uint4")},
    },
    "jax.lax": {
        **{n: _COLLECTIVE for n in ("pbroadcast", "pcast", "precv", "psend", "pswapaxes", "ragged_all_to_all")},
        "after_all": _TOKEN, "create_token": _TOKEN,
        "platform_dependent": "dynjax compiles for the CPU only",
        "composite": "StableHLO composites are not emitted",
        "dce_sink": "an internal JAX helper",
        "rng_uniform": "XLA's `rng` op is stateful: every run of one compiled program draws new numbers "
                       "(jax.jit(lambda: lax.rng_uniform(0., 1., (3,))) gives other values at each "
                       "call), so no eager value can equal a compiled one; use dynjax.random (or "
                       "lax.rng_bit_generator, which is deterministic)",
        "DotAlgorithm": _DOT_ALGORITHM, "DotAlgorithmPreset": _DOT_ALGORITHM,
        "AccuracyMode": _ACCURACY, "Tolerance": _ACCURACY,
        **_LAX_PRIMITIVES,
    },
    "jax.scipy.special": {
        "hyp2f1": "not yet to scipy's accuracy: the Gauss series converges like x**k, so x near 1 (and "
                  "x < -1 after Pfaff's transformation) needs the 1 - x and 1 / x transformations, whose "
                  "degenerate cases (c - a - b or b - a an integer) need the digamma limit forms; a series "
                  "alone would be inaccurate or slow there",
        "sph_harm_y": "complex-valued results built on the associated Legendre functions of all orders up "
                      "to n_max (JAX's lpmn tables): not written yet",
        "wofz": "the Faddeeva function of a complex argument needs a complex algorithm accurate over the "
                "whole plane (Weideman's or Poppe-Wijers' regions, and the erfcx / dawsn lines); not "
                "written yet (erfcx and dawsn, its real-axis cases, are here)",
    },
    "jax.random": {
        "random_gamma_p": _DERIVED + "random.gamma draws by Marsaglia and Tsang's method in a "
                          "while_loop of dynjax operations on threefry bits",
    },
    "jax.nn": {
        "scaled_dot_general": "quantizes its operands to the 4- and 8-bit float types of its configs "
                              "(nvfp4, mxfp8), which dynjax does not have, and JAX runs it only "
                              "through cuDNN on NVIDIA GPUs; without configs it is lax.dot_general",
        "get_scaled_dot_general_config": "its configurations (nvfp4, mxfp8) are made of 4- and 8-bit "
                                         "float types, which dynjax does not have; they serve "
                                         "scaled_dot_general only",
    },
}
COMMON_SUFFIXES = {"_p": _PRIMITIVE}   # a JAX primitive without a reason of its own above
DEFAULT_REASON = "not implemented yet"


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def _reason(jax_name, name):
    table = REASONS.get(jax_name, {})
    if name in table:
        return table[name]
    for suffix, why in COMMON_SUFFIXES.items():
        if name.endswith(suffix):
            return why
    return DEFAULT_REASON


def rows():
    """``(jax module, dynjax module, [(name, supported, reason)])`` for every module pair."""
    out = []
    for jax_name, dj_name in MODULES:
        try:
            jm = importlib.import_module(jax_name)
        except ImportError:
            continue
        try:
            dm = importlib.import_module(dj_name)
        except ImportError:
            dm = None
        entries = []
        for name in _public(jm):
            ok = dm is not None and hasattr(dm, name)
            entries.append((name, ok, "" if ok else _reason(jax_name, name)))
        out.append((jax_name, dj_name, entries))
    return out


def render():
    """The text of doc/support.md."""
    import jax
    lines = [
        "# API support",
        "",
        "Every public name of JAX's numerical modules and whether dynjax has it (under the same",
        "name, in the module named in each heading); for a missing name, why. Generated by",
        "`python doc/gen_support_table.py` from the code (against jax " + jax.__version__ + "); the",
        "test `tests/test_support_table.py` fails when this page is out of date.",
        "",
        "A supported name takes JAX's arguments and works on dynamic dims (axes named in",
        "`qjit(abstracted_axes=...)` or sizes from traced integers), under `grad` and `vmap`, eagerly",
        "and compiled; see the module's own page for its limits.",
        "",
    ]
    tables = rows()
    lines.append("| module | supported | of |")
    lines.append("|---|---|---|")
    for jax_name, dj_name, entries in tables:
        lines.append(f"| `{jax_name}` → `{dj_name}` | {sum(ok for _, ok, _ in entries)} | {len(entries)} |")
    lines.append("")
    for jax_name, dj_name, entries in tables:
        lines.append(f"## `{jax_name}` → `{dj_name}`")
        lines.append("")
        lines.append("| name | dynjax | why not |")
        lines.append("|---|---|---|")
        for name, ok, why in entries:
            lines.append(f"| `{name}` | {'yes' if ok else 'no'} | {why} |")
        lines.append("")
    return "\n".join(lines)


PAGE = pathlib.Path(__file__).with_name("support.md")


def main(argv):
    text = render()
    if "--check" in argv:
        if PAGE.read_text() != text:
            print(f"{PAGE} is out of date: run python doc/gen_support_table.py")
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
