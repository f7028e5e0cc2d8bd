"""What a compile is made with, and what tells two compiles apart: the ``CompileOptions``
dynjax passes to XLA (its defaults, with ``$DYNJAX_XLA_OPTIONS`` on top), the ``XLA_FLAGS``
the process's XLA read when its client was made, and the identifiers of both that the disk
cache puts in its keys (``cache.py``), so that an executable on disk is only loaded by a
process that would have compiled the same one."""
from __future__ import annotations

import hashlib
import os
import re

import jaxlib
import jaxlib._jax as _jax


def jaxlib_version() -> str:
    """The version of the jaxlib whose XLA compiles and runs dynjax's programs."""
    return jaxlib.__version__


def compile_options():
    """The ``CompileOptions`` of a compile: XLA's defaults, with the options named in
    ``$DYNJAX_XLA_OPTIONS`` on top (``xla_option_overrides``)."""
    opts = _jax.CompileOptions()
    overrides = xla_option_overrides()
    if overrides:
        opts.env_option_overrides = list(overrides)
    return opts


def xla_option_overrides() -> tuple:
    """``$DYNJAX_XLA_OPTIONS`` as ``(name, value)`` pairs: XLA debug options for dynjax's own
    compiles (what ``compiler_options`` is to ``jax.jit``), e.g.
    ``DYNJAX_XLA_OPTIONS="xla_cpu_use_fusion_emitters=false"`` (compiles 2-3x faster, runs some
    programs slower). Items are ``name=value``, separated by spaces or commas; ``true``/``false``
    are booleans, numbers are numbers, anything else a string."""
    raw = os.environ.get("DYNJAX_XLA_OPTIONS", "")
    pairs = []
    for item in raw.replace(",", " ").split():
        name, eq, text = item.partition("=")
        name = name.strip().lstrip("-")
        if not eq or not re.fullmatch(r"xla_\w+", name) or not text:
            raise ValueError(f"DYNJAX_XLA_OPTIONS: {item!r} is not of the form xla_<option>=<value> "
                             f"(in {raw!r})")
        low = text.lower()
        if low in ("true", "false"):
            value = low == "true"
        else:
            try:
                value = int(text)
            except ValueError:
                try:
                    value = float(text)
                except ValueError:
                    value = text
        pairs.append((name, value))
    return tuple(pairs)


def compile_options_id() -> str:
    """A string identifying the compile options we use (part of disk-cache keys): the
    ``CompileOptions`` (with ``$DYNJAX_XLA_OPTIONS``) and the ``XLA_FLAGS`` this process's XLA
    was started with (both change what XLA emits: fast math, its emitters, ...), so that an
    executable on disk is only loaded by a process that would have compiled the same one."""
    digest = hashlib.sha256(_jax.CompileOptions().SerializeAsString())
    digest.update(b"\0overrides\0" + repr(xla_option_overrides()).encode())
    digest.update(b"\0XLA_FLAGS\0" + " ".join(xla_flags()).encode())
    return "CompileOptions+XLA_FLAGS:" + digest.hexdigest()[:16]


_flags_at_start: "tuple | None" = None


def remember_flags() -> None:
    """Keep the ``XLA_FLAGS`` as they are now: called when the client is made (XLA reads them
    then, once), so that a later change of the variable does not change the cache keys."""
    global _flags_at_start
    if _flags_at_start is None:
        _flags_at_start = xla_flags()


def xla_flags() -> tuple:
    """The ``XLA_FLAGS`` of this process, split and sorted: as they were when the client was
    made (XLA reads them once), or as they are now before that."""
    if _flags_at_start is not None:
        return _flags_at_start
    return tuple(sorted(os.environ.get("XLA_FLAGS", "").split()))
