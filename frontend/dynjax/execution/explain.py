"""Why a trace or a compile happened: the messages of ``DYNJAX_LOG``.

``DYNJAX_LOG`` is a comma-separated list of categories:

* ``recompiles``: every trace, lowering, exact-size compile, size-bucket compile and
  background compile, with its reason -- which argument's shape, dtype, static value or
  size changed against the signatures seen before (as ``TORCH_LOGS=recompiles`` and jax's
  ``explain_cache_misses`` do);
* ``tiers``: which tier served each run of a program segment (``exact`` or ``padded``);
* ``compile``: every trace, lowering and XLA compile when it ends, with its duration, the
  program's size (equations, StableHLO ops) and its reason (``compile_log``);
* ``all``: the three; ``none``: nothing, not even the progress line of slow compiles
  (``compile_log``), which is otherwise printed by default.

The messages go to the ``logging`` loggers ``dynjax.recompiles``, ``dynjax.tiers`` and
``dynjax.compile``; the variable attaches a handler printing them to stderr. Without it, a program can still turn
them on with ``logging.getLogger("dynjax.recompiles").setLevel(logging.INFO)`` and its own
handler.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any, Callable, Iterable, Optional, Sequence

recompiles = logging.getLogger("dynjax.recompiles")
tiers = logging.getLogger("dynjax.tiers")
compile_log = logging.getLogger("dynjax.compile")

CATEGORIES = ("recompiles", "tiers", "compile", "all", "none")


def _wanted() -> set:
    return {c.strip().lower() for c in os.environ.get("DYNJAX_LOG", "").split(",") if c.strip()}


def silenced() -> bool:
    """Whether ``DYNJAX_LOG`` holds ``none`` (read each time: compiles only ask this)."""
    return "none" in _wanted()


def _configure() -> None:
    wanted = _wanted()
    unknown = wanted - set(CATEGORIES)
    if unknown:
        print(f"dynjax: DYNJAX_LOG has unknown categories {sorted(unknown)} "
              f"(known: {', '.join(CATEGORIES)})", file=sys.stderr)
    if "none" in wanted:
        return
    for name, logger in (("recompiles", recompiles), ("tiers", tiers), ("compile", compile_log)):
        if name in wanted or "all" in wanted:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False


_configure()


def on(logger: logging.Logger) -> bool:
    return logger.isEnabledFor(logging.INFO)


def _fmt_shape(shape) -> str:
    return "(" + ", ".join("?" if isinstance(d, tuple) else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def trace_reason(fun_name: str, new, old_keys: Sequence, describe_arg: Callable[[int], str]) -> str:
    """Why ``new`` (an abstract signature, see ``QJIT._abstract_key``) needed a trace: the
    difference from the closest signature traced before."""
    return f"trace {fun_name}: " + trace_why(new, old_keys, describe_arg)


def trace_why(new, old_keys: Sequence, describe_arg: Callable[[int], str]) -> str:
    """``trace_reason`` without the function's name."""
    if not old_keys:
        return "first call"
    best = None
    for old in old_keys:
        diffs = _signature_diffs(new, old, describe_arg)
        if best is None or len(diffs) < len(best):
            best = diffs
    return "; ".join(best) if best else "a new signature"


def signature_text(key) -> str:
    """An abstract signature (``QJIT._abstract_key``) as argument types: ``(f64[?,3], i64[])``;
    ``?`` for an abstracted axis, pytrees flattened, static arguments by value."""
    from ..core.avals import dtype_short_name
    (parts, statics, kw, static_kw) = key
    items = []
    for _, leaves in parts:
        for dt, shape, _ in leaves:
            dims = ",".join("?" if isinstance(d, tuple) else str(d) for d in shape)
            items.append(f"{dtype_short_name(dt)}[{dims}]")
    items += [f"static {v!r}" for _, v in statics]
    items += [f"{n}={v!r}" for n, (_, v) in static_kw]
    if kw[1]:
        items.append(f"{len(kw[1])} keyword argument(s)")
    return "(" + ", ".join(items) + ")"


def _signature_diffs(new, old, describe_arg) -> list:
    (parts, statics, kw, static_kw), (oparts, ostatics, okw, ostatic_kw) = new, old
    out = []
    if len(parts) != len(oparts):
        return [f"{len(parts)} arguments (before: {len(oparts)})"]
    for k, ((tree, items), (otree, oitems)) in enumerate(zip(parts, oparts)):
        where = describe_arg(k)
        if tree != otree or len(items) != len(oitems):
            out.append(f"{where} has a new pytree structure")
            continue
        for j, ((dt, shape, py), (odt, oshape, opy)) in enumerate(zip(items, oitems)):
            leaf = where + (f" (leaf {j})" if len(items) > 1 else "")
            if dt != odt:
                out.append(f"{leaf}: dtype {odt} -> {dt}")
            if len(shape) != len(oshape):
                out.append(f"{leaf}: rank {len(oshape)} -> {len(shape)}")
            elif shape != oshape:
                out.append(f"{leaf}: shape {_fmt_shape(oshape)} -> {_fmt_shape(shape)} "
                           "(axes not named in abstracted_axes are static)")
            if py != opy:
                out.append(f"{leaf}: " + ("a Python scalar where an array was passed" if py else
                                          "an array where a Python scalar was passed"))
    if statics != ostatics:
        out.append(f"static arguments {_values(ostatics)} -> {_values(statics)}")
    if static_kw != ostatic_kw:
        out.append(f"static keyword arguments {_named_values(ostatic_kw)} -> {_named_values(static_kw)}")
    if kw != okw:
        out.append("keyword arguments changed")
    return out


def _values(statics) -> str:
    return "(" + ", ".join(repr(v) for _, v in statics) + ")"


def _named_values(static_kw) -> str:
    return "(" + ", ".join(f"{n}={v!r}" for n, (_, v) in static_kw) + ")"


def compile_reason(kind: str, key, old_keys: Iterable, describe: Callable[[int], str],
                   runtime: Sequence[int], baked: Sequence[int]) -> str:
    """Why an exact-size compile happened: the sizes or shapes that are new."""
    return f"{kind}: " + compile_why(key, old_keys, describe, runtime, baked)


def compile_why(key, old_keys: Iterable, describe: Callable[[int], str],
                runtime: Sequence[int], baked: Sequence[int]) -> str:
    """``compile_reason`` without its ``kind``."""
    old_keys = list(old_keys)
    shapes, values = key
    if not old_keys:
        return f"first compile, {_sizes(shapes, values, describe, runtime, baked)}"
    changed = []
    for j, i in enumerate(baked):
        seen = sorted({ov[j] for _, ov in old_keys})
        if values[j] not in seen:
            changed.append(f"{describe(i)} = {values[j]} (compiled before: {_few(seen)})")
    if not changed:   # no new size: a shape of a static axis is new
        for j, i in enumerate(runtime):
            seen = {os_[j] for os_, _ in old_keys}
            if shapes[j] not in seen:
                changed.append(f"{describe(i)} has shape {shapes[j]}")
    return "; ".join(changed) if changed else "a new signature"


def _sizes(shapes, values, describe, runtime, baked) -> str:
    """The sizes (the baked integers), or the array shapes when there are none."""
    items = [f"{describe(i)} = {v}" for i, v in zip(baked, values)]
    if not items:
        items = [f"{describe(i)} has shape {s}" for i, s in zip(runtime, shapes) if s != ()]
    return ", ".join(items) if items else "no sizes"


def _few(values: Sequence[Any]) -> str:
    values = list(values)
    return ", ".join(map(str, values[:6])) + (", ..." if len(values) > 6 else "")


def bucket_reason(bounds: Sequence[int], values: Optional[Sequence[int]], describe: Callable[[int], str],
                  baked: Sequence[int], old: Iterable) -> str:
    """Why a size bucket is compiled: the sizes that fell in it (``values``), or None when it
    is compiled ahead of need."""
    why = bucket_why(bounds, values, describe, baked, old)
    return ("compile padded executable ahead, for " if values is None else
            "compile padded executable for ") + why


def bucket_why(bounds: Sequence[int], values: Optional[Sequence[int]], describe: Callable[[int], str],
               baked: Sequence[int], old: Iterable) -> str:
    """``bucket_reason`` without its verb: ``the next size bucket: n <= 32`` or ``a new size
    bucket: n = 20 in bucket <= 32 (buckets compiled before: (16,))``."""
    old = list(old)
    if values is None:
        items = ", ".join(f"{describe(i)} <= {b}" for i, b in zip(baked, bounds))
        return f"the next size bucket: {items}"
    items = ", ".join(f"{describe(i)} = {v} in bucket <= {b}" for i, v, b in zip(baked, values, bounds))
    return f"a new size bucket: {items}" + (
        f" (buckets compiled before: {_few([tuple(b) for b in old])})" if old else "")


def bucket_text(bounds: Sequence[int], describe: Callable[[int], str], baked: Sequence[int]) -> str:
    """A size bucket: ``bucket: n <= 32``."""
    return "bucket: " + ", ".join(f"{describe(i)} <= {b}" for i, b in zip(baked, bounds))


def note(logger: logging.Logger, message: str) -> None:
    logger.info(message)


def maybe(logger: logging.Logger, make: Callable[[], Optional[str]]) -> None:
    """Log ``make()`` when the logger is on (the message is only built then)."""
    if on(logger):
        msg = make()
        if msg:
            logger.info(msg)
