"""The ``ast`` rewriting behind ``qjit(autograph=True)``.

Python ``if`` / ``for`` / ``while`` statements cannot run on traced values, so autograph
rewrites a function's source before it is traced. Each statement becomes a call into
``dispatch``, which decides *at trace time* what to do: plain Python control flow when the
predicate, bounds or iterable are ordinary values, a ``cond`` / ``for_loop`` /
``while_loop`` / ``scan`` when they are traced. For example

    for i in range(n):
        acc = acc + x * i

becomes (names shortened)

    def for_body(item, acc, i):
        i = item
        acc = acc + x * i
        return (acc, i)
    acc, i = ag__.for_stmt(ag__.range_(range, n), for_body, (ag__.ld(lambda: acc),
                           ag__.ld(lambda: i)), ('acc', 'i'), carried=(True, False), ...)

The names a statement assigns are passed in and returned, so the dispatcher can carry
them through a loop or return them from a branch; ``analysis`` tells it which of them are
live. Statements that a traced loop or branch cannot express (``break``, ``continue``,
``return``, ``raise`` inside a branch) stay Python, with the predicate or iterable wrapped
in a check that raises a clear error if it turns out to be traced.

Every generated node takes the location of the statement it replaces, and the function is
compiled with its original file name and line numbers, so tracebacks point at the user's
lines. The converted function gets the original's globals and closure cells.
"""
from __future__ import annotations

import ast
import inspect
import itertools
import sys
import types
from typing import List, Set

from . import analysis, item_assign

AG = "ag__"   # the name the converted code uses for the dispatch module


class ConversionError(Exception):
    """The function cannot be converted (no source, a generator, ...); ``convert`` warns."""


# --- small ast builders --------------------------------------------------------------------------

def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name(AG), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=None):
    return ast.Call(func=func, args=list(args), keywords=list(keywords or []))


def _const(v):
    return ast.Constant(value=v)


def _tuple(elts, ctx=None):
    return ast.Tuple(elts=list(elts), ctx=ctx or ast.Load())


def _kw(name, value):
    return ast.keyword(arg=name, value=value)


def _ld(name):
    """``ag__.ld(lambda: name)``: the variable's value, or ``ag__.UNDEFINED`` if it is unbound."""
    lam = ast.Lambda(args=_no_args(), body=_name(name))
    return _call(_ag("ld"), [lam, _const(name)])


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _args(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _locate(node, src):
    """Give every generated node in ``node`` (those without a location) ``src``'s location:
    for a compound statement, its header (``if x > 0``), so that a traceback shows that line.
    User nodes moved into ``node`` keep their own."""
    end = getattr(src, "test", None) or getattr(src, "iter", None) or src
    if end.end_lineno != src.lineno:
        end = src if src.end_lineno == src.lineno else None
    loc = (src.lineno, src.col_offset, src.lineno, end.end_col_offset if end is not None else src.col_offset)
    for n in ast.walk(node):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = loc
    return node


# --- the transformer ----------------------------------------------------------------------------

class _FunctionConverter:
    """Rewrites the control flow of one function body (nested functions get their own)."""

    _ids = itertools.count()

    def __init__(self, fn: ast.AST):
        self.fn = fn
        self.declared: Set[str] = set()
        self.decls: List[ast.stmt] = []
        for node in _walk_scope(fn.body):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declared |= set(node.names)
                self.decls.append(node)
        item_assign.rewrite(fn, self.declared)   # x[i] = v -> x = ag__.set_item(x, i, v)
        self.live = analysis.Liveness(fn).run()

    def convert(self):
        self.fn.body = self.block(self.fn.body)
        return self.fn

    # statements -------------------------------------------------------------------------------
    def block(self, stmts) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out or [ast.copy_location(ast.Pass(), stmts[0])] if stmts else out

    def stmt(self, s) -> List[ast.stmt]:
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.While):
            return self.while_(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _ExprConverter().visit_list(s.decorator_list)
            if isinstance(s, ast.FunctionDef) and not analysis.find_escape(s.body, ["yield"]):
                _FunctionConverter(s).convert()
            return [s]
        if isinstance(s, ast.ClassDef):
            return [s]
        # any other statement: convert its expressions, and the blocks of compound ones
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and getattr(s, field) and isinstance(
                    getattr(s, field)[0], ast.stmt):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, "handlers", []):
            h.body = self.block(h.body)
        for c in getattr(s, "cases", []):
            c.body = self.block(c.body)
        _ExprConverter().visit_fields(s, skip=("body", "orelse", "finalbody", "handlers", "cases"))
        return [s]

    def _names(self, stmts, extra=()) -> List[str]:
        return sorted((analysis.assigned_names(stmts) | set(extra)) - self.declared)

    def _def(self, name, params, body, returns, src):
        """``def name(*params): [decls]; body; return (returns,)``."""
        ret = ast.Return(value=_tuple([_name(n) for n in returns]))
        decls = [type(d)(names=[n for n in d.names]) for d in self.decls]
        fdef = ast.FunctionDef(name=name, args=_args(params), body=decls + body + [ret], decorator_list=[],
                               returns=None, type_comment=None)
        if sys.version_info >= (3, 12):
            fdef.type_params = []
        return _locate(fdef, src)

    def _assign_results(self, names, call, src):
        if names:
            target = _tuple([_name(n, ast.Store()) for n in names], ast.Store())
            node = ast.Assign(targets=[target], value=call, type_comment=None)
        else:
            node = ast.Expr(value=call)
        return _locate(node, src)

    def _uid(self, kind, s):
        return f"{AG}{kind}_{s.lineno}_{next(self._ids)}"

    def if_(self, s: ast.If) -> List[ast.stmt]:
        test = _ExprConverter().visit(s.test)
        escape = analysis.find_escape(s.body + s.orelse, ["break", "continue", "return", "raise", "yield"])
        if escape is not None:
            s.test = _locate(_call(_ag("static_test"), [test, _const(_kind(escape)), _const(escape.lineno),
                                                        _const("if"), _const(s.lineno)]), s.test)
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            return [s]
        names = self._names(s.body + s.orelse)
        both = analysis.definitely_assigned(s.body) & analysis.definitely_assigned(s.orelse)
        live = self.live.live_out.get(id(s), set())
        true_name, false_name = self._uid("if_true", s), self._uid("if_false", s)
        true_def = self._def(true_name, names, self.block(s.body), names, s)
        false_body = self.block(s.orelse) if s.orelse else [_locate(ast.Pass(), s)]
        false_def = self._def(false_name, names, false_body, names, s)
        call = _call(_ag("if_stmt"), [test, _name(true_name), _name(false_name),
                                      _tuple([_ld(n) for n in names]), _tuple([_const(n) for n in names])],
                     [_kw("both", _tuple([_const(n in both) for n in names])),
                      _kw("live", _tuple([_const(n in live) for n in names])),
                      _kw("line", _const(s.lineno))])
        return [true_def, false_def, self._assign_results(names, _locate(call, s), s)]

    def _loop_escape(self, s):
        return analysis.find_escape(s.body, ["break", "continue", "return", "yield"])

    def for_(self, s: ast.For) -> List[ast.stmt]:
        it = _ExprConverter().visit(s.iter)
        it = _wrap_iterable(it)
        escape = self._loop_escape(s)
        if escape is not None:
            s.iter = _locate(_call(_ag("static_iter"), [it, _const(_kind(escape)), _const(escape.lineno),
                                                        _const(s.lineno)]), s.iter)
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            return [s]
        _ExprConverter().visit(s.target)
        targets = analysis.stored_names(s.target) - self.declared
        names = self._names(s.body, targets)
        head = self.live.head.get(id(s), set())
        after = self.live.exit.get(id(s), set())
        item = f"{AG}item"
        bind_target = _locate(ast.Assign(targets=[s.target], value=_name(item), type_comment=None), s)
        body_name = self._uid("for_body", s)
        body_def = self._def(body_name, [item] + names, [bind_target] + self.block(s.body), names, s)
        call = _call(_ag("for_stmt"), [it, _name(body_name), _tuple([_ld(n) for n in names]),
                                       _tuple([_const(n) for n in names])],
                     [_kw("carried", _tuple([_const(n in head) for n in names])),
                      _kw("live", _tuple([_const(n in after) for n in names])),
                      _kw("line", _const(s.lineno))])
        # without break, a loop's else clause always runs after it
        return [body_def, self._assign_results(names, _locate(call, s), s)] + self.block(s.orelse)

    def while_(self, s: ast.While) -> List[ast.stmt]:
        test = _ExprConverter().visit(s.test)
        escape = self._loop_escape(s)
        if escape is not None:
            s.test = _locate(_call(_ag("static_test"), [test, _const(_kind(escape)), _const(escape.lineno),
                                                        _const("while"), _const(s.lineno)]), s.test)
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            return [s]
        names = self._names(s.body)
        head = self.live.head.get(id(s), set())
        after = self.live.exit.get(id(s), set())
        test_name, body_name = self._uid("while_test", s), self._uid("while_body", s)
        test_def = ast.FunctionDef(name=test_name, args=_args(names), body=[ast.Return(value=test)],
                                   decorator_list=[], returns=None, type_comment=None)
        if sys.version_info >= (3, 12):
            test_def.type_params = []
        _locate(test_def, s)
        body_def = self._def(body_name, names, self.block(s.body), names, s)
        call = _call(_ag("while_stmt"), [_name(test_name), _name(body_name), _tuple([_ld(n) for n in names]),
                                         _tuple([_const(n) for n in names])],
                     [_kw("carried", _tuple([_const(n in head) for n in names])),
                      _kw("live", _tuple([_const(n in after) for n in names])),
                      _kw("line", _const(s.lineno))])
        return [test_def, body_def, self._assign_results(names, _locate(call, s), s)] + self.block(s.orelse)


def _kind(node) -> str:
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        return "yield"
    if isinstance(node, ast.Await):
        return "await"
    return analysis._KIND[type(node)]


def _walk_scope(stmts):
    """Nodes of a function body, not descending into nested scopes."""
    todo = list(stmts)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, analysis._SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def _wrap_iterable(it):
    """``range(...)`` / ``enumerate(...)`` calls go through dispatch helpers that notice traced
    arguments (``range(n)`` with a traced ``n`` would otherwise fail at once)."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not any(
            isinstance(a, ast.Starred) for a in it.args):
        if it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords:
            return _locate(_call(_ag("range_"), [it.func] + it.args), it)
        if it.func.id == "enumerate" and 1 <= len(it.args) <= 2 and all(
                k.arg == "start" for k in it.keywords):
            return _locate(_call(_ag("enumerate_"), [it.func] + it.args, it.keywords), it)
    return it


class _ExprConverter(ast.NodeTransformer):
    """``a and b``, ``a or b``, ``not a``, ``x if p else y`` and ``len(x)`` inside expressions
    become dispatch calls that behave like Python on ordinary values and build logical
    operations / a ``cond`` / a traced size on traced ones."""

    def visit_list(self, nodes):
        for i, n in enumerate(nodes):
            nodes[i] = self.visit(n)
        return nodes

    def visit_fields(self, node, skip=()):
        for field, value in ast.iter_fields(node):
            if field in skip:
                continue
            if isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    def visit_FunctionDef(self, node):   # statements are handled by _FunctionConverter
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if _has_scope_sensitive(node):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        rest = [ast.Lambda(args=_no_args(), body=v) for v in node.values[1:]]
        return _locate(_call(_ag(fn), [node.values[0]] + rest), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _locate(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _has_scope_sensitive(node):
            return node
        return _locate(_call(_ag("if_exp"), [node.test, ast.Lambda(args=_no_args(), body=node.body),
                                             ast.Lambda(args=_no_args(), body=node.orelse),
                                             _const(node.lineno)]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and not node.keywords and not isinstance(node.args[0], ast.Starred):
            return _locate(_call(_ag("len_"), [node.func, node.args[0]]), node)
        return node


def _has_scope_sensitive(node) -> bool:
    """Expressions that would change meaning inside a lambda (walrus, yield, await)."""
    return any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(node))


# --- building the converted function -------------------------------------------------------------

def _function_ast(fn):
    """The ``FunctionDef`` of ``fn``, with line and column numbers of its file."""
    if not isinstance(fn, types.FunctionType):
        raise ConversionError(f"{fn!r} is not a Python function")
    code = fn.__code__
    if code.co_name == "<lambda>":
        raise ConversionError("lambdas are not converted (their source cannot be isolated)")
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise ConversionError("generators and coroutines are not converted")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(f"its source code is not available ({e})") from None
    source = "".join(lines)
    indented = source[:1].isspace()
    try:
        # an indented def (a method, a nested function) parses inside an `if 1:` block, which
        # keeps its column offsets
        tree = ast.parse("if 1:\n" + source if indented else source, filename=code.co_filename)
    except SyntaxError as e:
        raise ConversionError(f"its source could not be parsed ({e})") from None
    body = tree.body[0].body if indented else tree.body
    if not body or not isinstance(body[0], ast.FunctionDef) or body[0].name != code.co_name:
        raise ConversionError("its source does not start with its own `def` statement")
    fdef = body[0]
    ast.increment_lineno(fdef, first - (2 if indented else 1))
    return fdef


def convert_function(fn, dispatch_module):
    """The converted version of the plain Python function ``fn`` (see the module docstring).
    Raises ``ConversionError`` when it cannot be converted."""
    fdef = _function_ast(fn)
    if analysis.find_escape(fdef.body, ["yield"]) is not None:
        raise ConversionError("generators are not converted")
    fdef.decorator_list = []   # decorators were already applied to `fn`
    fdef.returns = None
    for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs + \
            [x for x in (fdef.args.vararg, fdef.args.kwarg) if x is not None]:
        a.annotation = None   # annotations are copied from `fn`, not evaluated again
    # defaults are copied from `fn` too; evaluating them again could differ
    fdef.args.defaults = [_const(None) for _ in fdef.args.defaults]
    fdef.args.kw_defaults = [None if d is None else _const(None) for d in fdef.args.kw_defaults]
    _FunctionConverter(fdef).convert()
    source = ast.unparse(fdef)

    # A factory whose parameters are the original's free variables (and the dispatch module):
    # inside it, the converted def refers to them as free variables too, and is then rebuilt
    # with the original's closure cells.
    code = fn.__code__
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(name=f"{AG}factory", args=_args(freevars + [AG]),
                              body=[fdef, ast.Return(value=_name(fdef.name))], decorator_list=[],
                              returns=None, type_comment=None)
    if sys.version_info >= (3, 12):
        factory.type_params = []
    _locate(factory, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == code.co_name)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in new_code.co_freevars:
        if name == AG:
            closure.append(types.CellType(dispatch_module))
        elif name in cells:
            closure.append(cells[name])
        else:   # pragma: no cover - the converted code reads no new outer names
            closure.append(types.CellType())
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure) or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__dynjax_autograph_source__ = source
    new.__dynjax_autograph_original__ = fn
    return new
