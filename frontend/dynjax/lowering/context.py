"""The lowering context: maps jaxpr variables to MLIR values and offers helpers to rules.

A ``LoweringContext`` is one *scope*: the values of one jaxpr's variables. Nested jaxprs
(loop bodies, branches) are lowered in a child scope made by ``ctx.nested()`` (that is
what ``lower_jaxpr_into`` does), which shares the module but has its own environment,
so a rule can lower a body inside a region's block with the block arguments as the
body's invars.

All helpers emit at the *current* insertion point (``with ir.InsertionPoint(...)``), and
need an active ``ir.Context`` and ``ir.Location`` (``lower_jaxpr`` sets both up).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..core.avals import (ShapedArray, bfloat16, dtype_category, float16, float32, float64,
                          real_dtype)
from ..core.jaxpr import Literal, Var

DimLike = Union[int, Var, ir.Value]


def get_mlir_context() -> ir.Context:
    """The shared MLIR context with every dialect loaded (built by ``mlir_passes``, which
    holds the jaxlib-private calls this needs)."""
    from mlir_passes.context import get_context
    return get_context()


# ----------------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------------

def elem_type(dtype) -> ir.Type:
    """MLIR element type of a numpy dtype: signless signed integers (bool is ``i1``), unsigned
    ``ui8``..``ui64``, ``f16 bf16 f32 f64``, ``complex<f32>`` / ``complex<f64>``."""
    dt = np.dtype(dtype)
    cat = dtype_category(dt)
    if cat == "bool":
        return ir.IntegerType.get_signless(1)
    if cat == "signed":
        return ir.IntegerType.get_signless(8 * dt.itemsize)
    if cat == "unsigned":
        return ir.IntegerType.get_unsigned(8 * dt.itemsize)
    if cat == "complex":
        return ir.ComplexType.get(elem_type(real_dtype(dt)))
    return {float16: ir.F16Type, bfloat16: ir.BF16Type, float32: ir.F32Type,
            float64: ir.F64Type}[dt].get()


def tensor_type(shape: Sequence, dtype) -> ir.RankedTensorType:
    """``tensor<...>`` with ``?`` for every dim that is not an int."""
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([int(d) if isinstance(d, (int, np.integer)) else dyn for d in shape],
                                   elem_type(dtype))


def ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    """The tensor type of an aval; dynamic (Var) dims become ``?``."""
    return tensor_type(aval.shape, aval.dtype)


def is_static(shape) -> bool:
    return all(isinstance(d, (int, np.integer)) for d in shape)


_I64 = np.dtype(np.int64)


class LoweringContext:
    """One lowering scope: ``env`` maps ``id(Var)`` to its ``ir.Value``.

    Attributes:
      module: the ``ir.Module`` being built.
      parent: the enclosing scope (``None`` for ``@main``). Lookups do not fall through to
        the parent: nested jaxprs are closed, so every value a body uses is one of its
        own invars/constvars (pass outer values in explicitly).
    """

    def __init__(self, module: ir.Module, parent: Optional["LoweringContext"] = None):
        self.module = module
        self.parent = parent
        self.env: Dict[int, ir.Value] = {}
        # the mesh of the per-device program being lowered (a ``shard_map`` body in a
        # partitioned program: ``lowering/manual.py``), inherited by nested scopes
        self.manual = parent.manual if parent is not None else None

    # -- scopes --------------------------------------------------------------------------------
    def nested(self) -> "LoweringContext":
        """A child scope for a nested jaxpr (same module, empty environment)."""
        return LoweringContext(self.module, self)

    def lower_jaxpr(self, jaxpr, args: Sequence[ir.Value], consts: Optional[Sequence] = None) -> List[ir.Value]:
        """Shorthand for ``lower_jaxpr_into(self, jaxpr, args, consts)``."""
        from .core import lower_jaxpr_into
        return lower_jaxpr_into(self, jaxpr, args, consts)

    # -- environment ---------------------------------------------------------------------------
    def bind(self, var, value: ir.Value) -> None:
        self.env[id(var)] = value

    def read(self, atom) -> ir.Value:
        """The value of a jaxpr atom: a bound Var's value, or a constant for a Literal."""
        if isinstance(atom, Literal):
            return self.constant(atom.val, atom.aval.dtype)
        try:
            return self.env[id(atom)]
        except KeyError:
            raise KeyError(f"lowering: variable {atom!r} has no value in this scope "
                           "(nested jaxprs must receive outer values as explicit inputs)") from None

    # -- types ---------------------------------------------------------------------------------
    ir_type = staticmethod(ir_type)
    elem_type = staticmethod(elem_type)
    tensor_type = staticmethod(tensor_type)

    # -- constants -----------------------------------------------------------------------------
    def constant(self, value, dtype, shape: Sequence[int] = ()) -> ir.Value:
        """A ``stablehlo.constant``: a splat of a scalar, or a full numpy array of static shape."""
        dt = np.dtype(dtype)
        arr = np.asarray(value)
        shape = tuple(int(s) for s in shape) if arr.ndim == 0 else arr.shape
        # the raw bytes of the value(s) with an explicit element type: exact for every dtype
        # (uint64 beyond int64, bfloat16, complex); one element gives a splat
        data = np.ascontiguousarray(arr, dtype=dt).reshape(-1 if arr.ndim else 1)
        attr = ir.DenseElementsAttr.get(data, type=elem_type(dt), shape=list(shape))
        return hlo.ConstantOp(attr).result

    def full(self, value, dtype, dims: Sequence[DimLike]) -> ir.Value:
        """A tensor of ``dims`` (ints / dim Vars / scalar values) filled with ``value``."""
        return self.broadcast(self.constant(value, dtype), dims, ())

    def full_like(self, value, aval: ShapedArray) -> ir.Value:
        return self.full(value, aval.dtype, aval.shape)

    # -- dimensions ----------------------------------------------------------------------------
    def dim_value(self, d: DimLike) -> ir.Value:
        """A ``tensor<i64>`` holding dim ``d`` (an int, a dim Var of this scope, or a value)."""
        if isinstance(d, (int, np.integer)):
            return self.constant(int(d), _I64)
        v = d if isinstance(d, ir.Value) else self.read(d)
        et = ir.RankedTensorType(v.type).element_type
        if et != elem_type(_I64):
            v = hlo.ConvertOp(tensor_type((), _I64), v).result
        return v

    def dim_values(self, value: ir.Value, aval: Optional[ShapedArray] = None) -> List[DimLike]:
        """The dims of a value: ints where static, else the aval's dim Vars (when given) or
        ``stablehlo.get_dimension_size`` (converted to ``tensor<i64>``)."""
        t = ir.RankedTensorType(value.type)
        out: List[DimLike] = []
        for i in range(t.rank):
            if not t.is_dynamic_dim(i):
                out.append(t.get_dim_size(i))
            elif aval is not None and not isinstance(aval.shape[i], int):
                out.append(aval.shape[i])
            else:
                sz = hlo.GetDimensionSizeOp(value, i).result
                out.append(self.dim_value(sz))
        return out

    def shape_tensor(self, dims: Sequence[DimLike]) -> ir.Value:
        """A ``tensor<Nxi64>`` from ints and dim values (a constant when all are static)."""
        dims = list(dims)
        if is_static(dims):
            return self.constant(np.array([int(d) for d in dims], dtype=np.int64), _I64)
        t1 = tensor_type((1,), _I64)
        parts = []
        pending: List[int] = []

        def flush():
            if pending:
                parts.append(self.constant(np.array(pending, dtype=np.int64), _I64))
                pending.clear()
        for d in dims:
            if isinstance(d, (int, np.integer)):
                pending.append(int(d))
            else:
                flush()
                parts.append(hlo.ReshapeOp(t1, self.dim_value(d)).result)
        flush()
        if len(parts) == 1:
            return parts[0]
        return hlo.ConcatenateOp(parts, 0).result

    # -- shape-producing helpers ---------------------------------------------------------------
    def broadcast(self, value: ir.Value, dims: Sequence[DimLike], broadcast_dimensions: Sequence[int]) -> ir.Value:
        """``broadcast_in_dim`` to ``dims``; ``dynamic_broadcast_in_dim`` when a dim is dynamic."""
        et = ir.RankedTensorType(value.type).element_type
        dims = list(dims)
        dyn = ir.ShapedType.get_dynamic_size()
        t = ir.RankedTensorType.get([int(d) if isinstance(d, (int, np.integer)) else dyn for d in dims], et)
        if t == value.type and list(broadcast_dimensions) == list(range(len(dims))):
            return value
        if is_static(dims):
            return hlo.BroadcastInDimOp(t, value, list(broadcast_dimensions)).result
        return hlo.DynamicBroadcastInDimOp(t, value, self.shape_tensor(dims),
                                           list(broadcast_dimensions)).result

    def broadcast_scalar(self, value: ir.Value, dims: Sequence[DimLike]) -> ir.Value:
        """Broadcast a rank-0 value to ``dims`` (no-op when ``dims`` is empty)."""
        if not dims:
            return value
        return self.broadcast(value, dims, ())

    def broadcast_scalar_like(self, value: ir.Value, like: ir.Value) -> ir.Value:
        """Broadcast a rank-0 value to the shape of the tensor ``like``; dynamic dims are taken
        with ``get_dimension_size`` of ``like``, so this refines wherever ``like`` does (also
        inside loop bodies whose dims are block arguments)."""
        if ir.RankedTensorType(value.type).rank == ir.RankedTensorType(like.type).rank:
            return value
        return self.broadcast_scalar(value, self.dim_values(like))

    def broadcast_like(self, value: ir.Value, aval: ShapedArray) -> ir.Value:
        """Broadcast a rank-0 value to the shape of ``aval`` (no-op when the value has that rank)."""
        if ir.RankedTensorType(value.type).rank == len(aval.shape):
            return value
        return self.broadcast_scalar(value, aval.shape)

    def reshape(self, value: ir.Value, dims: Sequence[DimLike]) -> ir.Value:
        """``reshape`` (static) or ``dynamic_reshape`` to ``dims``."""
        et = ir.RankedTensorType(value.type).element_type
        dyn = ir.ShapedType.get_dynamic_size()
        t = ir.RankedTensorType.get([int(d) if isinstance(d, (int, np.integer)) else dyn for d in dims], et)
        if is_static(dims) and ir.RankedTensorType(value.type).has_static_shape:
            return hlo.ReshapeOp(t, value).result
        return hlo.DynamicReshapeOp(t, value, self.shape_tensor(dims)).result

    def iota(self, dtype, dims: Sequence[DimLike], dimension: int) -> ir.Value:
        """``iota`` (static) or ``dynamic_iota``."""
        t = tensor_type(dims, dtype)
        if is_static(dims):
            return hlo.IotaOp(t, dimension).result
        return hlo.DynamicIotaOp(t, self.shape_tensor(dims), dimension).result

    def convert(self, value: ir.Value, dtype) -> ir.Value:
        """``stablehlo.convert`` to ``dtype`` (no-op when already of that element type)."""
        t = ir.RankedTensorType(value.type)
        et = elem_type(dtype)
        if t.element_type == et:
            return value
        dyn = ir.ShapedType.get_dynamic_size()
        shape = [dyn if t.is_dynamic_dim(i) else t.get_dim_size(i) for i in range(t.rank)]
        return hlo.ConvertOp(ir.RankedTensorType.get(shape, et), value).result

    def cast(self, value: ir.Value, t: ir.Type) -> ir.Value:
        """Make ``value`` have type ``t`` (same element type, compatible shape) with an identity
        ``stablehlo.convert``; used to reconcile inferred and declared types."""
        if value.type == t:
            return value
        return hlo.ConvertOp(t, value).result

    # -- comparisons and regions ---------------------------------------------------------------
    def compare(self, x: ir.Value, y: ir.Value, direction: str, dtype=None, total_order: bool = False) -> ir.Value:
        """``stablehlo.compare`` with the comparison type for ``dtype`` (FLOAT / SIGNED / UNSIGNED)."""
        if dtype is None:
            et = ir.RankedTensorType(x.type).element_type
            ctype = _compare_type_of_elem(et)
        else:
            ctype = compare_type(dtype)
        if total_order and ctype == "FLOAT":
            ctype = "TOTALORDER"
        return hlo.CompareOp(x, y, hlo.ComparisonDirectionAttr.get(direction),
                             compare_type=hlo.ComparisonTypeAttr.get(ctype)).result

    def scalar_region(self, region: ir.Region, arg_types: Sequence[ir.Type]) -> ir.Block:
        """Append the entry block of a reducer/comparator region with the given argument types."""
        return region.blocks.append(*arg_types)


def compare_type(dtype) -> str:
    cat = dtype_category(dtype)
    if cat in ("float", "complex"):
        return "FLOAT"
    if cat in ("bool", "unsigned"):
        return "UNSIGNED"
    return "SIGNED"


def _compare_type_of_elem(et: ir.Type) -> str:
    if ir.FloatType.isinstance(et) if hasattr(ir.FloatType, "isinstance") else False:
        return "FLOAT"
    s = str(et)
    if s.startswith("f") or s.startswith("bf"):
        return "FLOAT"
    if s == "i1" or s.startswith("ui"):
        return "UNSIGNED"
    return "SIGNED"
