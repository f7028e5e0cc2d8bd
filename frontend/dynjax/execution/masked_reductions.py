"""Boolean-mask selections whose values only feed reductions run as masked reductions.

``x[m]`` (also ``x[m, ...]``, ``x[m2d]``, ``compress`` and ``extract``) is traced as the
positions of ``m``'s True elements (a cumsum and a scatter into an array of the data-dependent
length ``e = sum(m)``) and a ``gather`` of them. When the selected values are used only by an
elementwise chain (unary ops, binary ops with scalars, with values broadcast along the selected
axis, or with other values selected by the same positions: ``x[m] * y[m]``) that ends in
reductions over the selected axis (``reduce_sum`` / ``prod`` / ``max`` / ``min``), the chain
can run on the whole arrays instead, with the elements ``m`` leaves out replaced by the
reduction's identity right before the reduction: ``sum(x[m] ** 2)`` becomes
``sum(select_n(m, -0.0, x ** 2))``. The result is the same (the select comes after the
elementwise ops, so a NaN or an overflow in an unselected element never reaches it), and the
scatter and gather become dead code. ``e`` itself stays computed where it is still used
(``mean``, ``var``), as a value rather than a size, so the program no longer has a size that
comes from data.

``rewrite_masked_reductions`` is run once per trace on the program that is planned and
compiled (``qjit._Entry``), so every tier runs the rewritten program; the traced jaxpr that
transformations and ``f.jaxpr`` see is left as it was. Anything that does not match the pattern
exactly is left unchanged, and a mask whose selected values have any other use (returned, used
by a non-elementwise operation or a nested program) keeps its compaction.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ..core.avals import DBIdx
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ..core.symbolic import Expr, decide_eq
from ..lax import api as lax
from ..lax import primitives as P
from .padding import ELEMENTWISE_NAMES, reduction_identity

_ELEMENTWISE = frozenset(getattr(P, f"{name}_p") for name in ELEMENTWISE_NAMES)
_REDUCTIONS = {P.reduce_sum_p: "sum", P.reduce_prod_p: "prod", P.reduce_max_p: "max",
               P.reduce_min_p: "min"}


class _Group:
    """The positions of one 1-d bool ``mask``'s True elements: ``count`` (the dim ``e``) of them."""
    __slots__ = ("mask", "count", "positions", "roots", "terminals", "escapes")

    def __init__(self, mask: Var, count: Var, positions: Var):
        self.mask, self.count, self.positions = mask, count, positions
        self.roots = 0        # gathers of the selected elements
        self.terminals = 0    # reductions over the selected axis
        self.escapes = False  # a selected value has a use the rewrite cannot follow

    @property
    def eligible(self) -> bool:
        return self.roots > 0 and self.terminals > 0 and not self.escapes


def _lit(atom, value) -> bool:
    return isinstance(atom, Literal) and np.ndim(atom.val) == 0 and atom.val == value


def _sym(d):
    """A dim (int, Literal or Var) as an int or a symbolic expression (None if it has none)."""
    if isinstance(d, Literal):
        return int(d.val)
    if isinstance(d, (int, np.integer)):
        return int(d)
    return getattr(d, "sym", None)


def _dims_equal(a, b) -> bool:
    return a is b or _same_value(_sym(a), b)


def _product(dims):
    """The product of dims as an int or a symbolic expression (None if one has no expression)."""
    out: Any = 1
    for d in dims:
        s = _sym(d)
        if s is None:
            return None
        if isinstance(out, int) and isinstance(s, int):
            out *= s
        else:
            out = (out if isinstance(out, Expr) else Expr.const(out)) * s
    return out


def _same_value(expr, d) -> bool:
    """Whether the dim ``d`` is the size ``expr`` (an int or an expression)."""
    s = _sym(d)
    if s is None or expr is None:
        return False
    if isinstance(s, int) and isinstance(expr, int):
        return s == expr
    try:
        return bool(decide_eq(expr, s))
    except (TypeError, AttributeError):
        return False


def _eqn_of(defs, atom, name):
    e = defs.get(id(atom)) if isinstance(atom, Var) else None
    return e if e is not None and e.primitive.name == name else None


def _is_mask_to_int(defs, atom, mask) -> bool:
    e = _eqn_of(defs, atom, "convert_element_type")
    return e is not None and e.invars[0] is mask and np.dtype(e.params["new_dtype"]) == np.int64


def _positions_group(eqn, defs) -> Optional[_Group]:
    """The group of a ``scatter`` that computes the positions of a mask's True elements the way
    ``numpy/selection.py`` does (``_flat_positions`` with the count as the length), else None."""
    if eqn.params.get("axes") != (0,) or eqn.params.get("kind") != "set" or len(eqn.invars) != 3:
        return None
    zeros, rows, ids = eqn.invars
    z = _eqn_of(defs, zeros, "broadcast_in_dim")
    if z is None or not _lit(z.invars[0], 0) or len(z.invars) != 2 or z.params["shape"] != (None,):
        return None
    count = z.invars[1]
    c = _eqn_of(defs, count, "reduce_sum")
    if c is None or c.params["axes"] != (0,):
        return None
    ce = _eqn_of(defs, c.invars[0], "convert_element_type")
    if ce is None:
        return None
    mask = ce.invars[0]
    if not isinstance(mask, Var) or mask.aval.dtype != np.bool_ or mask.aval.ndim != 1 \
            or not _is_mask_to_int(defs, c.invars[0], mask):
        return None
    length = mask.aval.shape[0]
    # ids: iota over the mask's length
    io = _eqn_of(defs, ids, "iota")
    if io is None or io.params.get("dimension") != 0 or not _dims_equal(ids.aval.shape[0], length):
        return None
    # rows: the target position of each element, as a column
    r = _eqn_of(defs, rows, "broadcast_in_dim")
    if r is None or r.params["broadcast_dimensions"] != (0,) or rows.aval.ndim != 2 or rows.aval.shape[1] != 1:
        return None
    t = _eqn_of(defs, r.invars[0], "select_n")
    if t is None or len(t.invars) != 3 or t.invars[0] is not mask:
        return None
    end, rank = t.invars[1], t.invars[2]
    b = _eqn_of(defs, end, "broadcast_in_dim")
    if b is None or b.params["broadcast_dimensions"] != ():
        return None
    end_value = b.invars[0]
    if end_value is not count:
        cv = _eqn_of(defs, end_value, "convert_element_type")
        if cv is None or cv.invars[0] is not count:
            return None
    s = _eqn_of(defs, rank, "sub")
    if s is None or not _lit(s.invars[1], 1):
        return None
    cs = _eqn_of(defs, s.invars[0], "cumsum")
    if cs is None or cs.params.get("axis") != 0 or cs.params.get("reverse") \
            or not _is_mask_to_int(defs, cs.invars[0], mask):
        return None
    return _Group(mask, count, eqn.outvars[0])


def _coordinate(defs, atom, positions, stride, size):
    """Whether ``atom`` is ``(positions // stride) % size`` as ``numpy/selection.py::_unravel``
    writes it (no division by a static 1, no remainder when ``size`` is None)."""
    if size is not None:
        r = _eqn_of(defs, atom, "rem")
        if r is None or not _same_value(_sym(size), r.invars[1]):
            return False
        atom = r.invars[0]
    if isinstance(stride, int) and stride == 1:
        return atom is positions
    d = _eqn_of(defs, atom, "div")
    return d is not None and d.invars[0] is positions and _same_value(stride, d.invars[1])


def _selection_root(eqn, defs, groups) -> Optional[tuple]:
    """``(group, k)`` when the ``gather`` ``eqn`` reads the elements of its operand's leading
    ``k`` axes at a group's positions (the flattened mask covers those axes), else None."""
    axes = eqn.params.get("axes")
    x, rows = eqn.invars[0], eqn.invars[1]
    k = len(axes) if axes is not None else 0
    if k == 0 or tuple(axes) != tuple(range(k)) or not isinstance(x, Var) or x.aval.ndim < k:
        return None
    if rows.aval.ndim != 2 or rows.aval.shape[1] != k:
        return None
    if k == 1:
        columns = [rows]
    else:
        c = _eqn_of(defs, rows, "concatenate")
        if c is None or c.params.get("dimension") != 1 or len(c.invars) != k:
            return None
        columns = list(c.invars)
    coords = []
    for col in columns:
        b = _eqn_of(defs, col, "broadcast_in_dim")
        if b is None or b.params["broadcast_dimensions"] != (0,) or col.aval.shape[1] != 1:
            return None
        coords.append(b.invars[0])
    group = None
    for g in groups:
        if _coords_match(defs, coords, g.positions, x.aval.shape[:k]):
            group = g
            break
    if group is None:
        return None
    if not _same_value(_product(x.aval.shape[:k]), group.mask.aval.shape[0]):
        return None
    return group, k


def _coords_match(defs, coords, positions, shape) -> bool:
    """Whether ``coords`` are the row-major coordinates in ``shape`` of the flat ``positions``."""
    for j, atom in enumerate(coords):
        stride = _product(shape[j + 1:])
        if stride is None:
            return False
        if not _coordinate(defs, atom, positions, stride, shape[j] if j > 0 else None):
            return False
    return True


def _analyze(jaxpr: Jaxpr):
    """The groups of ``jaxpr`` and the role of each equation of their chains:
    ``{id(eqn): (role, group, extra)}`` with role ``root`` (extra: k), ``selected`` (an
    elementwise op or a reduction over other axes of selected values), ``uniform`` (a value
    constant along the selected axis, of its length ``e``) or ``terminal`` (a reduction over
    the selected axis)."""
    defs = {}
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            defs[id(v)] = eqn
    groups: List[_Group] = []
    by_count: Dict[int, _Group] = {}
    roles: Dict[int, tuple] = {}
    selected: Dict[int, _Group] = {}
    uniform: Dict[int, _Group] = {}
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "scatter":
            g = _positions_group(eqn, defs)
            if g is not None:
                if id(g.count) in by_count:   # two position arrays of one count: leave both
                    by_count[id(g.count)].escapes = g.escapes = True
                by_count[id(g.count)] = g
                groups.append(g)
                continue
        if name == "gather":
            found = _selection_root(eqn, defs, groups)
            if found is not None:
                g, k = found
                g.roots += 1
                selected[id(eqn.outvars[0])] = g
                roles[id(eqn)] = ("root", g, k)
                continue
        role = _chain_role(eqn, selected, uniform, by_count)
        if role is not None:
            roles[id(eqn)] = role
            kind, g, _ = role
            if kind == "selected":
                selected[id(eqn.outvars[0])] = g
            elif kind == "uniform":
                uniform[id(eqn.outvars[0])] = g
            else:
                g.terminals += 1
            continue
        for a in eqn.invars:   # any other use of a selected value keeps its compaction
            if isinstance(a, Var) and id(a) in selected:
                selected[id(a)].escapes = True
    for v in jaxpr.outvars:
        if isinstance(v, Var) and id(v) in selected:
            selected[id(v)].escapes = True
    return {k: r for k, r in roles.items() if r[1].eligible}


def _chain_role(eqn, selected, uniform, by_count) -> Optional[tuple]:
    prim = eqn.primitive
    if prim is P.broadcast_in_dim_p:
        out = eqn.outvars[0]
        lead = out.aval.shape[0] if out.aval.ndim else None
        g = by_count.get(id(lead)) if isinstance(lead, Var) else None
        if g is None or 0 in eqn.params["broadcast_dimensions"]:
            return None
        if any(d is lead for d in out.aval.shape[1:]) or any(d is lead for d in eqn.invars[0].aval.shape):
            return None
        return ("uniform", g, None)
    if prim in _ELEMENTWISE and len(eqn.outvars) == 1:
        group, any_selected = None, False
        for a in eqn.invars:
            if isinstance(a, Literal) or a.aval.ndim == 0:
                continue
            g = selected.get(id(a))
            if g is not None:
                any_selected = True
            else:
                g = uniform.get(id(a))
            if g is None or (group is not None and g is not group):
                return None
            group = g
        if group is None:
            return None
        return ("selected" if any_selected else "uniform", group, None)
    if prim in _REDUCTIONS:
        x = eqn.invars[0]
        g = selected.get(id(x))
        if g is None:
            return None
        axes = tuple(eqn.params["axes"])
        if 0 in axes:
            return ("terminal", g, _REDUCTIONS[prim])
        return ("selected", g, None)
    return None


def _remap_uniform(eqn, read, unselected, length):
    """A ``uniform`` equation computed along the mask's length instead of ``e``."""
    if eqn.primitive is P.broadcast_in_dim_p:
        out = eqn.outvars[0]
        shape = [length] + [d if isinstance(d, int) else read(d) for d in out.aval.shape[1:]]
        return lax.broadcast_in_dim(read(eqn.invars[0]), tuple(shape), eqn.params["broadcast_dimensions"])
    return eqn.primitive.bind(*_operands(eqn, read, unselected), **eqn.params)


def _operands(eqn, read, unselected):
    """The operands of a chain equation: the whole-array value of each selected or uniform
    operand, the others (scalars, literals) as they are."""
    return [unselected[id(a)] if isinstance(a, Var) and id(a) in unselected else read(a) for a in eqn.invars]


def rewrite_masked_reductions(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every mask selection whose values only feed reductions over the selected
    axis rewritten as masked reductions (see the module docstring); ``closed`` itself when
    nothing matches or the rewrite would not give a program of the same type."""
    jaxpr = closed.jaxpr
    if not any(e.primitive.name == "gather" for e in jaxpr.eqns):
        return closed
    roles = _analyze(jaxpr)
    if not roles:
        return closed
    try:
        new = _retrace(jaxpr, closed.consts, roles)
    except Exception as e:   # the rewrite is an optimization: the original program is always right
        from . import explain
        why = f"{type(e).__name__}: {e}"
        explain.maybe(explain.compile_log, lambda: f"masked reductions: program left as traced ({why})")
        return closed
    if not _same_interface(jaxpr, new.jaxpr):
        return closed
    return new


def _same_interface(old: Jaxpr, new: Jaxpr) -> bool:
    """Whether ``new`` takes and returns what ``old`` does (the callers keep ``old``'s types
    and result structure), with fewer gathers (else the rewrite gained nothing)."""
    if len(old.invars) != len(new.invars) or len(old.outvars) != len(new.outvars):
        return False
    if tuple(old.in_explicit) != tuple(new.in_explicit) or tuple(old.out_explicit) != tuple(new.out_explicit):
        return False
    for a, b in zip(list(old.invars) + list(old.outvars), list(new.invars) + list(new.outvars)):
        if np.dtype(a.aval.dtype) != np.dtype(b.aval.dtype) or a.aval.ndim != b.aval.ndim \
                or a.aval.weak_type != b.aval.weak_type:
            return False
    return sum(e.primitive.name == "gather" for e in new.eqns) < sum(e.primitive.name == "gather" for e in old.eqns)


def _retrace(jaxpr: Jaxpr, consts, roles) -> ClosedJaxpr:
    """Trace ``jaxpr`` again from its in_type, binding every equation as it is except those
    with a role, which build the masked chains; the trace drops what became dead. Each new
    equation keeps the source line of the equation it comes from (error messages)."""
    from ..core.jaxpr import check_jaxpr
    from ..core.trace import current_trace, typeof
    from ..tracing import trace_flat

    def run(*explicit):
        scope = current_trace()
        env: Dict[int, Any] = {}
        unselected: Dict[int, Any] = {}

        def read(a):
            return a.val if isinstance(a, Literal) else env[id(a)]

        def dim(d):
            return d if isinstance(d, int) else read(d)

        args = iter(explicit)
        for i, (v, (aval, is_explicit)) in enumerate(zip(jaxpr.invars, jaxpr.in_type)):
            if not is_explicit:
                continue
            x = env[id(v)] = next(args)
            for d, xd in zip(aval.shape, typeof(x).shape):
                if isinstance(d, DBIdx):   # an implicit input: this argument's dim
                    env[id(jaxpr.invars[d.val])] = xd
        for v, c in zip(jaxpr.constvars, consts):
            env[id(v)] = c
        for eqn in jaxpr.eqns:
            start = len(scope.eqns)
            role = roles.get(id(eqn))
            if role is None:
                outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
                for v, x in zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]):
                    env[id(v)] = x
            else:
                kind, g, extra = role
                length = dim(g.mask.aval.shape[0])
                out = eqn.outvars[0]
                if kind == "root":
                    x = eqn.invars[0]
                    value = read(x)
                    if extra > 1:
                        rest = [dim(d) for d in x.aval.shape[extra:]]
                        value = lax.reshape(value, tuple([length] + rest))
                    unselected[id(out)] = value
                elif kind == "selected":
                    unselected[id(out)] = eqn.primitive.bind(*_operands(eqn, read, unselected), **eqn.params)
                elif kind == "uniform":
                    env[id(out)] = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
                    unselected[id(out)] = _remap_uniform(eqn, read, unselected, length)
                else:   # terminal: mask the operand with the reduction's identity, then reduce
                    value = unselected[id(eqn.invars[0])]
                    shape = tuple(value.aval.shape)
                    mask = read(g.mask)
                    if len(shape) > 1:
                        mask = lax.broadcast_in_dim(mask, shape, (0,))
                    dtype = value.aval.dtype
                    fill = lax.broadcast_in_dim(np.asarray(reduction_identity(extra, dtype), dtype), shape, ())
                    if value.aval.weak_type:
                        fill = lax.convert_element_type(fill, dtype, weak_type=True)
                    env[id(out)] = eqn.primitive.bind(lax.select_n(mask, fill, value), **eqn.params)
            for e in scope.eqns[start:]:
                e.source_info = eqn.source_info
        return [read(v) for v in jaxpr.outvars], None

    new, _ = trace_flat(run, jaxpr.in_type, _dim_names(jaxpr))
    check_jaxpr(new)
    return new


def _dim_names(jaxpr: Jaxpr):
    """The names of the implicit dims' symbols (abstracted axis names), kept in the new trace."""
    from ..core.symbolic import single_symbols
    names = []
    for v in jaxpr.invars:
        sym = getattr(v, "sym", None)
        syms = single_symbols(sym) if isinstance(sym, Expr) else []
        names.append(syms[0].name if syms else None)
    return names
