"""Specialization of a dynamically shaped StableHLO module to static shapes.

XLA compiles only static programs.  At call time every dimension is known, so
:func:`specialize` takes the module produced by the lowering (whose ``@main``
may have ``?`` dimensions and leading ``tensor<i64>`` dimension inputs), and

1. renames ``@main`` to a private ``@_dynjax_main_dyn``;
2. adds a new static ``@main`` that takes the remaining inputs with their
   concrete types, casts them to the dynamic types (a same-element-type
   ``stablehlo.convert``), materializes the baked-in dimension values as
   ``stablehlo.constant`` and calls the old main;
3. runs jaxlib's ``refine_polymorphic_shapes`` (inlining, shape refinement,
   ``stablehlo-canonicalize-dynamism``-style folding of
   ``dynamic_broadcast_in_dim``/``dynamic_iota``/``dynamic_reshape``/
   ``real_dynamic_slice``/``dynamic_pad``/``dynamic_gather``/``dynamic_conv``
   with constant shapes, shape assertions, and a check that nothing stayed
   dynamic);
4. rewrites what refinement leaves in a form XLA handles worse: FFT placeholders
   (``fft.py``) and single-window gathers at constant starts, which become slices
   (``slices.py``);
5. drops the now identity casts and prints the result.

Anything that stays dynamic (a shape computed from array *data*, a loop whose
carried shapes change per iteration, ...) raises :class:`SpecializationError`
(a ``ValueError``) naming the offending ops.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
from collections.abc import Mapping, Sequence

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func, stablehlo

from .context import make_context
from .fft import static_ffts
from .slices import constant_gathers_to_slices

try:  # the C++ refinement entry point (private jaxlib API; kept in this package)
    from jaxlib._jax import mlir as _jax_mlir
except ImportError:  # pragma: no cover - very old / very new jaxlib layout
    from jaxlib import _jax as _jaxmod  # type: ignore

    _jax_mlir = _jaxmod.mlir

__all__ = [
    "SpecializationError",
    "specialize",
    "static_type_string",
    "main_signature",
]

_DYN_NAME = "_dynjax_main_dyn"


class SpecializationError(ValueError):
    """The module cannot be specialized to static shapes with the given inputs."""


# --------------------------------------------------------------------------
# numpy <-> MLIR type strings

_DTYPE_TO_MLIR = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.bool_): "i1",
    np.dtype(np.complex64): "complex<f32>",
    np.dtype(np.complex128): "complex<f64>",
}


def static_type_string(shape: Sequence[int], dtype) -> str:
    """Return the MLIR tensor type for a numpy shape and dtype.

    >>> static_type_string((5, 3), np.float64)
    'tensor<5x3xf64>'
    >>> static_type_string((), bool)
    'tensor<i1>'
    """
    try:
        elem = _DTYPE_TO_MLIR[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(f"unsupported dtype for an MLIR tensor type: {dtype!r}") from None
    dims = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"static_type_string needs non-negative int dims, got shape {tuple(shape)!r}")
        dims.append(str(int(d)))
    return "tensor<" + "".join(s + "x" for s in dims) + elem + ">"


# --------------------------------------------------------------------------
# private context used for specialization (recycled to bound memory: every
# distinct constant baked in is uniqued in the context forever)

_RECYCLE_AFTER = 1000
_lock = threading.Lock()
_ctx: ir.Context | None = None
_ctx_uses = 0


def _after_fork_in_child() -> None:
    """See ``context._after_fork_in_child``: a new context and lock in a forked child."""
    global _ctx, _lock
    from .context import _abandoned
    _abandoned.append(_ctx)
    _ctx = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _spec_context() -> ir.Context:
    global _ctx, _ctx_uses
    if _ctx is None or _ctx_uses >= _RECYCLE_AFTER:
        _ctx = make_context()
        _ctx_uses = 0
    _ctx_uses += 1
    return _ctx


def _parse(module, ctx: ir.Context) -> ir.Module:
    if isinstance(module, ir.Module):
        buf = io.BytesIO()
        module.operation.write_bytecode(file=buf)
        module = buf.getvalue()
    elif isinstance(module, (bytearray, memoryview)):
        module = bytes(module)
    elif not isinstance(module, (str, bytes)):
        raise TypeError(f"module must be MLIR text (str) or bytecode (bytes), got {type(module).__name__}")
    try:
        return ir.Module.parse(module, ctx)
    except Exception as e:
        raise ValueError(f"cannot parse the input module: {e}") from None


def _find_main(m: ir.Module):
    for op in m.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise ValueError("the module has no func.func @main")


def _function_type(fop) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)


@contextlib.contextmanager
def parsed_main(module):
    """Under the specialization lock, in its context: ``(context, parsed module, its @main,
    @main's function type)`` of ``module`` (text, bytecode or an ``ir.Module``)."""
    with _lock:
        ctx = _spec_context()
        m = _parse(module, ctx)
        with ctx, ir.Location.unknown(ctx):
            main = _find_main(m)
            yield ctx, m, main, _function_type(main)


def main_signature(module) -> tuple[list[str], list[str]]:
    """Return ``(input_types, result_types)`` of ``@main`` as MLIR type strings."""
    with parsed_main(module) as (_, _, _, ft):
        return [str(t) for t in ft.inputs], [str(t) for t in ft.results]


def _isa(cls, t: ir.Type) -> bool:
    """``cls.isinstance(t)`` on old bindings, typeid comparison on new ones."""
    check = getattr(cls, "isinstance", None)
    if check is not None:
        return check(t)
    return t.typeid == cls.static_typeid


def _is_scalar_int_tensor(t: ir.Type) -> bool:
    if not _isa(ir.RankedTensorType, t):
        return False
    rt = ir.RankedTensorType(t)
    return rt.rank == 0 and _isa(ir.IntegerType, rt.element_type)


def _dim_constant(t: ir.Type, value: int, index: int):
    if not _is_scalar_int_tensor(t):
        raise ValueError(
            f"input {index} of @main has type {t}; only scalar integer tensors "
            f"(e.g. tensor<i64>) can be baked in as dimension values")
    rt = ir.RankedTensorType(t)
    width = ir.IntegerType(rt.element_type).width
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"dimension value for input {index} must be an int, got {value!r}")
    value = int(value)
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if width > 1 else (0, 1)
    if not lo <= value <= hi:
        raise ValueError(f"dimension value {value} for input {index} does not fit in {t}")
    attr = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(rt.element_type, value))
    return stablehlo.constant(attr)


def _static_arg_type(spec, declared: ir.Type, index: int) -> ir.Type:
    if spec is None:
        raise ValueError(
            f"input {index} of @main ({declared}) has neither a static type in arg_types "
            f"nor a value in dim_values")
    if isinstance(spec, ir.Type):
        t = spec
    else:
        try:
            t = ir.Type.parse(str(spec))
        except Exception as e:
            raise ValueError(f"bad type string {spec!r} for input {index} of @main: {e}") from None
    if not _isa(ir.RankedTensorType, t):
        raise ValueError(f"type {spec!r} for input {index} of @main is not a ranked tensor type")
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        raise ValueError(f"type {spec!r} for input {index} of @main is not static")
    if _isa(ir.RankedTensorType, declared):
        dt = ir.RankedTensorType(declared)
        ok = dt.element_type == rt.element_type and dt.rank == rt.rank
        if ok:
            dyn = ir.ShapedType.get_dynamic_size()
            ok = all(d == dyn or d == s for d, s in zip(dt.shape, rt.shape))
        if not ok:
            raise ValueError(
                f"type {t} for input {index} of @main is incompatible with the declared type {declared}")
    elif _isa(ir.UnrankedTensorType, declared):
        if ir.UnrankedTensorType(declared).element_type != rt.element_type:
            raise ValueError(
                f"type {t} for input {index} of @main is incompatible with the declared type {declared}")
    else:
        raise ValueError(f"input {index} of @main has non-tensor type {declared}")
    return t


_HALF = 1 << 31


def _walk(op, out):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "stablehlo.get_dimension_size":
                    out.append(inner.operation)
                _walk(inner.operation, out)
    return out


def _exact_dimension_sizes(m: ir.Module) -> None:
    """Make every ``get_dimension_size`` widened to ``i64`` exact for axes of ``2**31``
    elements or more.

    ``stablehlo.get_dimension_size`` is 32-bit, and refinement folds it to ``n mod 2**32``
    (as a signed ``i32``): an axis of ``2**31 + 16`` elements would read as ``-2147483632``.
    Each ``convert`` of it to ``i64`` is replaced by ``(q - (lo != 0)) * 2**31 + lo``, where
    ``lo = n mod 2**31`` (the low 31 bits of the 32-bit size) and ``q = ceil(n / 2**31)`` is
    the (small) size of a ``reduce_window`` with stride ``2**31`` along that axis. Everything
    folds to one ``i64`` constant, and the ``reduce_window`` is then dead and erased.
    """
    i1, i32, i64 = (ir.IntegerType.get_signless(w) for w in (1, 32, 64))
    t_i1, t_i32, t_i64 = (ir.RankedTensorType.get([], t) for t in (i1, i32, i64))

    def const(v, t):
        return stablehlo.constant(ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, v)))
    for size_op in _walk(m.operation, []):
        wides = [u.owner for u in size_op.results[0].uses
                 if u.owner.name == "stablehlo.convert" and u.owner.results[0].type == t_i64]
        if not wides:
            continue
        x = size_op.operands[0]
        axis = ir.IntegerAttr(size_op.attributes["dimension"]).value
        xt = ir.RankedTensorType(x.type)
        dyn = ir.ShapedType.get_dynamic_size()
        for wide in wides:
            with ir.InsertionPoint(wide):
                flags = stablehlo.CompareOp(x, x, stablehlo.ComparisonDirectionAttr.get("EQ"),
                                            results=[ir.RankedTensorType.get(xt.shape, i1)]).result
                strides = [_HALF if k == axis else 1 for k in range(xt.rank)]
                window = stablehlo.ReduceWindowOp([ir.RankedTensorType.get([dyn] * xt.rank, i1)], [flags],
                                                  [const(0, t_i1)], [1] * xt.rank, window_strides=strides)
                body = window.regions[0].blocks.append(t_i1, t_i1)
                with ir.InsertionPoint(body):
                    stablehlo.ReturnOp([body.arguments[0]])
                q = stablehlo.convert(t_i64, stablehlo.GetDimensionSizeOp(window.results[0], axis,
                                                                           results=[t_i32]).result)
                lo = stablehlo.and_(stablehlo.convert(t_i64, size_op.results[0]), const(_HALF - 1, t_i64))
                nonzero = stablehlo.CompareOp(lo, const(0, t_i64),
                                              stablehlo.ComparisonDirectionAttr.get("NE")).result
                whole = stablehlo.subtract(q, stablehlo.select(nonzero, const(1, t_i64), const(0, t_i64)))
                exact = stablehlo.add(stablehlo.multiply(whole, const(_HALF, t_i64)), lo)
            wide.results[0].replace_all_uses_with(exact)
            wide.erase()


_ERR_OP = re.compile(r"error: '([\w.]+)' op (.*)")


def _refinement_error(e: Exception) -> SpecializationError:
    text = str(e)
    ops = []
    for name, what in _ERR_OP.findall(text):
        item = f"{name} ({what.strip()})" if "dynamic shapes" not in what else name
        if item not in ops:
            ops.append(item)
    if "has dynamic shapes" in text:
        head = "shape refinement left dynamic shapes in: " + ", ".join(ops)
    elif ops:
        head = "shape refinement failed at: " + ", ".join(ops)
    else:
        first = re.search(r"error: (.*)", text)
        head = "shape refinement failed" + (f": {first.group(1).strip()}" if first else "")
        if "body block return types" in text:
            head += " (a loop-carried value changes shape between iterations)"
    # keep jaxlib's own diagnostics (with the op and its types) below the summary
    detail = text.split("\n")
    if len(detail) > 40:
        detail = detail[:40] + ["..."]
    return SpecializationError(head + "\n" + "\n".join(detail))


def specialize(module, arg_types: Sequence, dim_values: Mapping[int, int] | None = None) -> str:
    """Specialize ``module``'s ``@main`` to static shapes; return the new module's text.

    Args:
      module: MLIR text (``str``) or bytecode (``bytes``) of a module with a
        ``func.func @main`` whose input/result types may contain ``?``.
        (An ``ir.Module`` is also accepted; it is not modified.)
      arg_types: one entry per ``@main`` input: a static MLIR tensor type
        string (e.g. ``"tensor<5x3xf64>"``) for inputs passed at run time, or
        ``None`` for inputs baked in through ``dim_values``.
      dim_values: ``{input index: int}`` -- scalar integer inputs (the leading
        ``tensor<i64>`` dimension values) to bake in as constants.  They are
        removed from the specialized ``@main``'s signature.

    Returns:
      The text of a module whose ``@main`` takes exactly the non-baked inputs,
      in order, with the given static types, and has static result types.

    Raises:
      ValueError: bad arguments (wrong count, bad type string, a type that
        contradicts the declared one, ...), or :class:`SpecializationError`
        (a ``ValueError``) when refinement fails or leaves something dynamic.
    """
    dim_values = dict(dim_values or {})
    with _lock:
        ctx = _spec_context()
        m = _parse(module, ctx)
        with ctx, ir.Location.unknown(ctx):
            main = _find_main(m)
            ftype = _function_type(main)
            inputs = list(ftype.inputs)
            results = list(ftype.results)
            if len(arg_types) != len(inputs):
                raise ValueError(
                    f"arg_types has {len(arg_types)} entries but @main has {len(inputs)} inputs "
                    f"({', '.join(str(t) for t in inputs)})")
            for k in dim_values:
                if not isinstance(k, (int, np.integer)) or not 0 <= k < len(inputs):
                    raise ValueError(f"dim_values key {k!r} is not an input index of @main "
                                     f"(which has {len(inputs)} inputs)")
            static_in = []
            for i, t in enumerate(inputs):
                if i not in dim_values:
                    static_in.append(_static_arg_type(arg_types[i], t, i))

            main.attributes["sym_name"] = ir.StringAttr.get(_DYN_NAME)
            main.attributes["sym_visibility"] = ir.StringAttr.get("private")
            with ir.InsertionPoint.at_block_begin(m.body):
                wrapper = func.FuncOp("main", ir.FunctionType.get(static_in, results))
                block = wrapper.add_entry_block()
            with ir.InsertionPoint(block):
                it = iter(block.arguments)
                call_args = []
                for i, t in enumerate(inputs):
                    if i in dim_values:
                        call_args.append(_dim_constant(t, dim_values[i], i))
                    else:
                        a = next(it)
                        call_args.append(a if a.type == t else stablehlo.convert(t, a))
                call = func.CallOp(results, ir.FlatSymbolRefAttr.get(_DYN_NAME), call_args)
                func.ReturnOp(call.results)
            _exact_dimension_sizes(m)
            buf = io.BytesIO()
            m.operation.write_bytecode(file=buf)
        try:
            refined = _jax_mlir.refine_polymorphic_shapes(
                buf.getvalue(), enable_shape_assertions=True, validate_static_shapes=True)
        except Exception as e:
            raise _refinement_error(e) from None

        out = ir.Module.parse(refined, ctx)
        with ctx, ir.Location.unknown(ctx):
            static_ffts(out)   # FFTs over dynamic axes: stablehlo.fft of the known lengths
            constant_gathers_to_slices(out)   # slices of dynamic axes, now of known sizes
            new_main = _find_main(out)
            new_type = _function_type(new_main)
            if "?" in str(new_type):
                raise SpecializationError(f"@main still has dynamic types after refinement: {new_type}")
            # remove the wrapper's casts, which refinement turned into identities
            for arg in new_main.regions[0].blocks[0].arguments:
                for use in list(arg.uses):
                    op = use.owner
                    if (op.name == "stablehlo.convert" and len(op.results) == 1
                            and op.results[0].type == arg.type):
                        op.results[0].replace_all_uses_with(arg)
                        op.erase()
            return str(out)
