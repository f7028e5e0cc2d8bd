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
_COLLECTIVE = "a collective over named mesh axes (pmap/shard_map): dynjax runs a program on one device"
_PRIMITIVE = ("a JAX primitive object: dynjax's primitives are dynjax.lax.primitives.*_p, with their own "
              "names and rules")
_SHARDING = "sharding and devices: dynjax runs a program on one device"
_TOKEN = "tokens and ordering effects: dynjax orders effects itself (dynjax.debug)"

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
        "roots": "needs the eigenvalues of a general (non-symmetric) companion matrix; dynjax has no "
                 "general eigensolver yet",
        **{n: _NARROW for n in ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
                                "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                                "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2",
                                "uint4")},
    },
    "jax.numpy.linalg": {
        "eig": "needs a general (non-symmetric) eigensolver; for symmetric matrices use eigh",
        "eigvals": "needs a general (non-symmetric) eigensolver; for symmetric matrices use eigvalsh",
    },
    "jax.lax": {
        **{n: _COLLECTIVE for n in ("all_gather", "all_to_all", "axis_index", "axis_size", "pbroadcast", "pcast",
                                    "pmax", "pmean", "pmin", "ppermute", "precv", "psend", "pshuffle", "psum",
                                    "psum_scatter", "pswapaxes", "ragged_all_to_all")},
        "with_sharding_constraint": _SHARDING,
        "after_all": _TOKEN, "create_token": _TOKEN,
        "platform_dependent": "dynjax compiles for the CPU only",
        "composite": "StableHLO composites are not emitted",
        "dce_sink": "an internal JAX helper",
    },
}
COMMON_SUFFIXES = {"_p": _PRIMITIVE}
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
