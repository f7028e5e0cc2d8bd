"""Autograph's rewriting of item assignments: ``x[i] = v`` becomes ``x = ag__.set_item(x, i, v)``.

A traced array cannot be modified in place, so inside a converted function

    x[i] = v        ->  x = ag__.set_item(x, i, v)
    x[i, j] += v    ->  x = ag__.set_item(x, (i, j), v, 'add')
    x[a:b] *= v     ->  x = ag__.set_item(x, slice(a, b, None), v, 'mul')

``dispatch.set_item`` decides at run time: ``x.at[i].set(v)`` (``.add``, ``.multiply``, or a
read-modify-write for the other operators) on a traced array, plain Python on a list, a dict
or a numpy array. Because the statement now *assigns* ``x``, the liveness analysis sees it,
and a converted loop or ``if`` carries the new ``x`` like any other variable.

Only targets of the form ``name[...]`` where ``name`` is a local variable of the function
(a parameter, or assigned in its body) are rewritten: assigning a global or a closure
variable would change its scope. ``x.attr[i] = v``, ``x[i][j] = v`` and tuple targets stay
as they are.

This pass runs on each function's statements before the control-flow rewriting (it does not
enter nested functions; they get their own pass).
"""
from __future__ import annotations

import ast
from typing import Set

from . import analysis

AG = "ag__"

# augmented-assignment operators, by the name set_item receives
_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
        ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
        ast.LShift: "lshift", ast.RShift: "rshift", ast.MatMult: "matmul"}


def local_names(fn: ast.FunctionDef, declared: Set[str]) -> Set[str]:
    """The function's local variables: parameters and names its body binds (not ``global`` /
    ``nonlocal`` ones)."""
    args = fn.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return (params | analysis.assigned_names(fn.body)) - set(declared)


def rewrite(fn: ast.FunctionDef, declared: Set[str]) -> None:
    """Rewrite the item assignments in ``fn``'s own statements, in place."""
    locals_ = local_names(fn, declared)
    fn.body = _block(fn.body, locals_)


def _block(stmts, locals_):
    return [_stmt(s, locals_) for s in stmts]


def _stmt(s, locals_):
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return s
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and _rewritable(s.targets[0], locals_):
        return _assignment(s, s.targets[0], s.value, None)
    if isinstance(s, ast.AugAssign) and _rewritable(s.target, locals_) and type(s.op) in _OPS:
        return _assignment(s, s.target, s.value, _OPS[type(s.op)])
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(s, field, _block(block, locals_))
    for h in getattr(s, "handlers", []):
        h.body = _block(h.body, locals_)
    for c in getattr(s, "cases", []):
        c.body = _block(c.body, locals_)
    return s


def _rewritable(target, locals_) -> bool:
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
        and target.value.id in locals_


def _index_expr(node):
    """The subscript as an expression: ``a:b`` becomes ``ag__.make_slice(a, b, None)``."""
    if isinstance(node, ast.Slice):
        parts = [p if p is not None else ast.Constant(value=None) for p in (node.lower, node.upper, node.step)]
        return ast.Call(func=ast.Attribute(value=ast.Name(id=AG, ctx=ast.Load()), attr="make_slice",
                                           ctx=ast.Load()), args=parts, keywords=[])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_index_expr(e) for e in node.elts], ctx=ast.Load())
    return node


def _assignment(s, target, value, op):
    name = target.value.id
    args = [ast.Name(id=name, ctx=ast.Load()), _index_expr(target.slice), value]
    if op is not None:
        args.append(ast.Constant(value=op))
    call = ast.Call(func=ast.Attribute(value=ast.Name(id=AG, ctx=ast.Load()), attr="set_item", ctx=ast.Load()),
                    args=args, keywords=[])
    new = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call, type_comment=None)
    # every generated node takes the statement's location (user nodes keep their own)
    for n in ast.walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = s.lineno, s.col_offset
            n.end_lineno, n.end_col_offset = s.end_lineno, s.end_col_offset
    return new
