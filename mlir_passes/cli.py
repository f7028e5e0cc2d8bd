"""``dynjax-opt``: an ``mlir-opt``-like driver for dynjax's StableHLO passes.

Usage::

    dynjax-opt [--specialize='args=tensor<5xf64>;dims=5'] [--canonicalize]
               [--pass-pipeline='builtin.module(...)'] [-o OUT] IN.mlir|-

Steps run in this order: ``--specialize``, ``--pass-pipeline``,
``--canonicalize``.  ``--specialize`` takes ``dims=`` (comma-separated values
for the leading ``tensor<i64>`` dimension inputs of ``@main``, in order, as
many as given) and ``args=`` (comma-separated static types for the remaining
inputs, in order).  Errors go to stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main", "parse_specialize_option"]


def _split_top_level(s: str, sep: str) -> list[str]:
    """Split on ``sep`` outside <>, (), [] and {} brackets."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in {s!r}")
    parts.append("".join(cur))
    return parts


def parse_specialize_option(opt: str) -> tuple[list[int], list[str]]:
    """Parse ``'args=tensor<5xf64>,tensor<2xi64>;dims=5,3'`` into ``([5, 3], [types...])``."""
    dims: list[int] = []
    args: list[str] = []
    seen = set()
    for field in _split_top_level(opt.strip(), ";"):
        field = field.strip()
        if not field:
            continue
        key, eq, value = field.partition("=")
        key = key.strip()
        if not eq or key not in ("args", "dims"):
            raise ValueError(f"--specialize: expected 'args=...' or 'dims=...', got {field!r}")
        if key in seen:
            raise ValueError(f"--specialize: {key}= given twice")
        seen.add(key)
        items = [v.strip() for v in _split_top_level(value, ",")]
        items = [v for v in items if v]
        if key == "dims":
            for v in items:
                try:
                    dims.append(int(v, 0))
                except ValueError:
                    raise ValueError(f"--specialize: dims value {v!r} is not an integer") from None
        else:
            args = items
    return dims, args


def _read_input(path: str) -> str | bytes:
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    if data.startswith(b"ML\xefR"):  # MLIR bytecode magic
        return data
    return data.decode("utf-8")


def _run(ns: argparse.Namespace) -> str:
    from jaxlib.mlir import ir

    from .context import make_context, run_pipeline
    from .specialize import main_signature, specialize

    module = _read_input(ns.input)
    if ns.specialize is not None:
        dims, args = parse_specialize_option(ns.specialize)
        inputs, _ = main_signature(module)
        if len(dims) + len(args) != len(inputs):
            raise ValueError(
                f"--specialize: @main has {len(inputs)} inputs ({', '.join(inputs)}) but "
                f"{len(dims)} dims and {len(args)} args were given")
        arg_types = [None] * len(dims) + args
        module = specialize(module, arg_types, dict(enumerate(dims)))
    if ns.pass_pipeline is None and not ns.canonicalize:
        if isinstance(module, bytes):
            ctx = make_context()
            return str(ir.Module.parse(module, ctx))
        if ns.specialize is not None:
            return module
    ctx = make_context()
    try:
        m = ir.Module.parse(module, ctx)
    except Exception as e:
        raise ValueError(f"cannot parse the input module: {e}") from None
    if ns.pass_pipeline is not None:
        run_pipeline(m, ns.pass_pipeline)
    if ns.canonicalize:
        run_pipeline(m, "builtin.module(canonicalize)")
    return str(m)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="dynjax-opt",
        description="Run dynjax's StableHLO passes (specialization to static shapes, "
                    "canonicalization, any registered pass pipeline) on an MLIR file.")
    p.add_argument("input", nargs="?", default="-", help="input .mlir file (text or bytecode), '-' for stdin")
    p.add_argument("-o", dest="output", default="-", help="output file ('-' for stdout)")
    p.add_argument("--specialize", metavar="'args=T1,T2;dims=D1,D2'",
                   help="bake in leading dimension inputs and give the other inputs static types")
    p.add_argument("--canonicalize", action="store_true", help="run the canonicalize pass last")
    p.add_argument("--pass-pipeline", metavar="'builtin.module(...)'",
                   help="a textual MLIR pass pipeline (stablehlo passes are registered)")
    ns = p.parse_args(argv)
    try:
        text = _run(ns)
    except (ValueError, TypeError, OSError) as e:
        print(f"dynjax-opt: error: {e}", file=sys.stderr)
        return 1
    if not text.endswith("\n"):
        text += "\n"
    try:
        if ns.output == "-":
            sys.stdout.write(text)
        else:
            with open(ns.output, "w") as f:
                f.write(text)
    except OSError as e:
        print(f"dynjax-opt: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # python -m mlir_passes.cli
    sys.exit(main())
