"""The blob of an exported program: header, JSON body, SHA-256 digest (``doc/export.md``).

Layout (all integers big-endian)::

    b"DYNJAX-EXPORT\\0"      14 bytes  magic
    major, minor            2 x u16   format version
    body length             u64
    body                    UTF-8 JSON (see below)
    digest                  32 bytes  SHA-256 of everything before it

The body holds the function's name, the dynjax version that wrote it, the program (the
jaxpr codec of ``jaxpr_codec.py``, its constants through ``values.py``), the input signature
(per implicit dimension: its name and the argument axes it is the size of; per argument leaf:
how errors name it), the pytree structures of the arguments and results, and the StableHLO
text for ``mlir_module()``.

``deserialize`` refuses (ValueError, never another exception) anything that is not such a
blob: wrong magic, a newer major version (the message says which version the blob has and
which this dynjax reads), a length or digest that does not match (truncated or corrupted
bytes), or a body that does not follow the format. No ``pickle``, no ``eval``.
"""
from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

from ..core import pytree
from ..core.jaxpr import ClosedJaxpr, JaxprTypeError, check_jaxpr
from ..tracing import InputSignature
from .jaxpr_codec import Decoder, Encoder
from .values import Malformed, Unshippable, class_path, decode_value, dynjax_class, encode_value

MAGIC = b"DYNJAX-EXPORT\0"
#: the format this dynjax writes; it reads every blob of the same major version whose minor
#: version is at most FORMAT_MINOR (a newer minor may use what this one does not know)
FORMAT_MAJOR, FORMAT_MINOR = 1, 0
_HEADER = struct.Struct(">HHQ")
_DIGEST = 32


def serialize(exp) -> bytes:
    """The bytes of an ``Exported``."""
    from .. import __version__
    enc = Encoder(exp.fun_name)
    program = encode_program(exp.jaxpr, exp.fun_name, enc)
    sig = exp._signature
    body = {
        "fun_name": exp.fun_name,
        "dynjax_version": __version__,
        "program": program,
        "symbols": enc.symbols(),
        "dims": [{"name": n if isinstance(n, str) else None, "sources": [[li, ax] for li, ax in src]}
                 for n, src in zip(sig.dim_names, sig.dim_sources)],
        "leaf_where": list(sig.leaf_where),
        "in_tree": encode_tree(exp.in_tree),
        "out_tree": encode_tree(exp.out_tree),
        "mlir": exp._mlir_text,
    }
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
    head = MAGIC + _HEADER.pack(FORMAT_MAJOR, FORMAT_MINOR, len(data))
    return head + data + hashlib.sha256(head + data).digest()


def encode_program(closed: ClosedJaxpr, fun_name: str, enc: Encoder = None) -> dict:
    """The program as JSON-able data; a param the format cannot hold (a Python function, a
    user's object) is a ValueError naming the primitive and the user's line."""
    enc = enc or Encoder(fun_name)
    try:
        return {"jaxpr": enc.jaxpr(closed.jaxpr), "consts": [encode_value(c, enc._nested) for c in closed.consts]}
    except Unshippable as e:
        raise ValueError(f"export of {fun_name}: the program holds {e}, which cannot be serialized") from None


def deserialize(blob) -> Any:
    """The ``Exported`` program that ``Exported.serialize`` wrote; a ValueError (saying what
    is wrong) for anything else."""
    from .exported import Exported
    if isinstance(blob, (bytearray, memoryview)):
        blob = bytes(blob)
    if not isinstance(blob, bytes):
        raise TypeError(f"deserialize: expected bytes, got {type(blob).__name__}")
    if blob and MAGIC.startswith(blob):
        raise ValueError(f"deserialize: the blob is truncated ({len(blob)} bytes, inside its header)")
    if len(blob) < len(MAGIC) or not blob.startswith(MAGIC):
        raise ValueError("deserialize: these bytes are not a dynjax exported program (no DYNJAX-EXPORT "
                         f"header; {len(blob)} bytes)")
    if len(blob) < len(MAGIC) + _HEADER.size + _DIGEST:
        raise ValueError(f"deserialize: the blob is truncated ({len(blob)} bytes, shorter than its header "
                         "and digest)")
    major, minor, length = _HEADER.unpack_from(blob, len(MAGIC))
    if major != FORMAT_MAJOR or minor > FORMAT_MINOR:
        raise ValueError(f"deserialize: the blob has export format version {major}.{minor}, but this dynjax "
                         f"reads versions {FORMAT_MAJOR}.0 to {FORMAT_MAJOR}.{FORMAT_MINOR}"
                         + (" (written by a newer dynjax: upgrade dynjax to load it)"
                            if (major, minor) > (FORMAT_MAJOR, FORMAT_MINOR) else ""))
    start = len(MAGIC) + _HEADER.size
    if len(blob) != start + length + _DIGEST:
        raise ValueError(f"deserialize: the blob is {len(blob)} bytes, but its header says "
                         f"{start + length + _DIGEST} (truncated or extended)")
    if hashlib.sha256(blob[:start + length]).digest() != blob[start + length:]:
        raise ValueError("deserialize: the blob's SHA-256 digest does not match its contents (corrupted)")
    try:
        body = json.loads(blob[start:start + length].decode("utf-8"))
        return _decode_body(body, Exported)
    except ValueError as e:   # Malformed, JSON and UTF-8 errors, numpy's
        raise ValueError(f"deserialize: malformed blob: {e}") from None
    except (KeyError, TypeError, AttributeError, IndexError, AssertionError, RecursionError) as e:
        raise ValueError(f"deserialize: malformed blob: {type(e).__name__}: {e}") from None


def _decode_body(body, Exported):
    if not isinstance(body, dict):
        raise Malformed("the body must be an object")
    name = body["fun_name"]
    if not isinstance(name, str):
        raise Malformed("fun_name must be a string")
    dec = Decoder(body["symbols"])
    program = body["program"]
    jaxpr = dec.jaxpr(program["jaxpr"])
    consts = [decode_value(c, dec._nested) for c in program["consts"]]
    if len(consts) != len(jaxpr.constvars):
        raise Malformed("the constants do not match the program's constvars")
    closed = ClosedJaxpr(jaxpr, consts)
    try:
        check_jaxpr(closed)
    except JaxprTypeError as e:
        raise Malformed(f"the program is not well typed: {e}") from None
    dims = body["dims"]
    leaf_where = body["leaf_where"]
    nimp = len(jaxpr.in_explicit) - sum(jaxpr.in_explicit)
    nleaves = sum(jaxpr.in_explicit)
    if not isinstance(dims, list) or len(dims) != nimp or any(jaxpr.in_explicit[:nimp]) \
            or not all(jaxpr.in_explicit[nimp:]):
        raise Malformed("the dimension table does not match the program's implicit inputs")
    if not (isinstance(leaf_where, list) and len(leaf_where) == nleaves
            and all(isinstance(w, str) for w in leaf_where)):
        raise Malformed("the argument names do not match the program's inputs")
    in_type = jaxpr.in_type
    names, sources = [], []
    for k, d in enumerate(dims):
        n = d["name"]
        if n is not None and not isinstance(n, str):
            raise Malformed(f"bad dimension name {n!r}")
        src = []
        for pair in d["sources"]:
            li, ax = pair
            if not (isinstance(li, int) and isinstance(ax, int) and 0 <= li < nleaves):
                raise Malformed(f"bad dimension source {pair!r}")
            aval = in_type[nimp + li][0]
            if not (0 <= ax < aval.ndim and getattr(aval.shape[ax], "val", None) == k):
                raise Malformed(f"dimension {k} is not axis {ax} of input {li}")
            src.append((li, ax))
        if not src:
            raise Malformed(f"dimension {k} is the size of no argument axis")
        names.append(n if n is not None else ("__fresh__", k))
        sources.append(src)
    leaf_avals = [a.update(shape=tuple(d if isinstance(d, int) else 0 for d in a.shape))
                  for a, e in in_type if e]
    sig = InputSignature(in_type, names, sources, leaf_avals, list(leaf_where))
    in_tree, out_tree = decode_tree(body["in_tree"]), decode_tree(body["out_tree"])
    if in_tree.num_leaves != nleaves or out_tree.num_leaves != sum(jaxpr.out_explicit):
        raise Malformed("the pytree structures do not match the program's inputs and outputs")
    if in_tree.kind != "tuple" or len(in_tree.children) != 2 or in_tree.children[0].kind != "tuple" \
            or in_tree.children[1].kind != "dict":
        raise Malformed("the argument structure must be (args tuple, kwargs dict)")
    mlir = body["mlir"]
    if mlir is not None and not isinstance(mlir, str):
        raise Malformed("mlir must be a string")
    if mlir is not None:
        # the program lowered when it was exported: lowering it again runs every lowering
        # rule on every param, so a body whose params were tampered with (a digest computed
        # over them, so not corruption) is refused here rather than at the first call
        from ..lowering import module_text
        try:
            module_text(closed)
        except Exception as e:
            raise Malformed(f"the program does not lower to StableHLO: {type(e).__name__}: {e}") from None
    return Exported(name, closed, sig, in_tree, out_tree, mlir)


# ----------------------------------------------------------------------------------------------
# pytree structures: tuples, lists, dicts with str / int keys, None, leaves, and dynjax's own
# namedtuples (jnp.linalg's results)
# ----------------------------------------------------------------------------------------------
_KINDS = ("leaf", "none", "tuple", "list", "dict")


def check_tree(tree, what: str) -> None:
    """A ValueError when ``tree`` has nodes the format cannot rebuild without their code
    (registered classes, namedtuples, dataclasses, ordered or default dicts)."""
    try:
        encode_tree(tree)
    except Unshippable as e:
        raise ValueError(f"{what} {e}; an exported program's arguments and results may only be "
                         "arrays and scalars in tuples, lists, dicts (str or int keys), None and dynjax's "
                         "own result namedtuples") from None


def encode_tree(t) -> Any:
    if t.kind == "namedtuple" and t.aux.__module__.startswith("dynjax."):   # jnp.linalg's results
        return {"namedtuple": [class_path(t.aux), [encode_tree(c) for c in t.children]]}
    if t.kind not in _KINDS:
        label = t.aux.__name__ if t.kind == "namedtuple" else (
            t.aux[0].__name__ if t.kind == "custom" else t.kind)
        raise Unshippable(f"hold a {label} node, whose class cannot be rebuilt without its code")
    if t.kind == "leaf":
        return "*"
    if t.kind == "none":
        return None
    children = [encode_tree(c) for c in t.children]
    if t.kind == "dict":
        keys = list(t.aux)
        if not all(isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool)) for k in keys):
            raise Unshippable("hold a dict with keys other than strings and ints")
        return {"dict": [[k, c] for k, c in zip(keys, children)]}
    return {t.kind: children}


def decode_tree(d):
    if d == "*":
        return pytree.LEAF
    if d is None:
        return pytree.TreeDef("none", None, ())
    if not (isinstance(d, dict) and len(d) == 1):
        raise Malformed(f"bad tree node {d!r}")
    (kind, children), = d.items()
    if kind == "namedtuple" and isinstance(children, list) and len(children) == 2 \
            and isinstance(children[1], list):
        cls = dynjax_class(children[0], "a namedtuple", lambda c: issubclass(c, tuple) and hasattr(c, "_fields"))
        if len(children[1]) != len(cls._fields):
            raise Malformed(f"{children[0]} has {len(cls._fields)} fields")
        return pytree.TreeDef("namedtuple", cls, tuple(decode_tree(c) for c in children[1]))
    if kind not in ("tuple", "list", "dict") or not isinstance(children, list):
        raise Malformed(f"bad tree node {kind!r}")
    if kind != "dict":
        return pytree.TreeDef(kind, None, tuple(decode_tree(c) for c in children))
    keys, subs = [], []
    for p in children:
        if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int))
                and not isinstance(p[0], bool)):
            raise Malformed("bad dict node")
        keys.append(p[0])
        subs.append(decode_tree(p[1]))
    if len(set(keys)) != len(keys):
        raise Malformed("a dict node repeats a key")
    return pytree.TreeDef("dict", tuple(keys), tuple(subs))
