"""Static facts about a function's statements, computed on its original ``ast``.

The rewriting in ``transformer`` needs, for each ``if`` / ``for`` / ``while`` it converts:

* the names the statement assigns (they are what a loop may carry or a ``cond`` returns),
* which names every branch of an ``if`` assigns for sure (definite assignment),
* which names are *live* after the statement (read later before being overwritten), and,
  for loops, live at the loop head (read by the next iteration or after the loop),
* whether the statement holds ``break`` / ``continue`` / ``return`` / ``raise`` / ``yield``,
  which cannot become a traced loop or branch.

Liveness is a plain backward data-flow pass over the structured statements. It is
conservative where Python is hard to follow (``try``, ``match``, ``break``): it then
assumes more names are live, which can only make autograph carry more values or report
an error, never lose a value that is used.
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, List, Optional, Set

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# --- names read ------------------------------------------------------------------------------

def loads(node) -> Set[str]:
    """Names read by ``node`` (an expression, a statement or a list of them), including reads
    inside nested lambdas, comprehensions and functions (their own parameters and
    comprehension targets excepted)."""
    out: Set[str] = set()
    for n in _as_list(node):
        _loads(n, out, frozenset())
    return out


def _loads(node, out: Set[str], bound: FrozenSet[str]):
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            out.add(node.id)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            _loads(d, out, bound)
        for d in getattr(node, "decorator_list", []):
            _loads(d, out, bound)
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        inner = bound | params
        body = node.body if isinstance(node.body, list) else [node.body]
        for s in body:
            _loads(s, out, inner)
        return
    if isinstance(node, _COMPREHENSIONS):
        targets = set()
        for g in node.generators:
            targets |= stored_names(g.target)
        inner = bound | targets
        for g in node.generators:
            _loads(g.iter, out, bound if g is node.generators[0] else inner)
            for c in g.ifs:
                _loads(c, out, inner)
        for e in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
            _loads(e, out, inner)
        return
    for child in ast.iter_child_nodes(node):
        _loads(child, out, bound)


def stored_names(target) -> Set[str]:
    """Plain names bound by an assignment target (``a``, ``a, (b, *c)``); not ``a[i]``, ``a.x``."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        out = set()
        for e in target.elts:
            out |= stored_names(e)
        return out
    if isinstance(target, ast.Starred):
        return stored_names(target.value)
    return set()


def _target_loads(target) -> Set[str]:
    """Names read by an assignment target itself (``a`` in ``a[i] = ...``)."""
    if isinstance(target, ast.Name):
        return set()
    if isinstance(target, (ast.Tuple, ast.List)):
        out = set()
        for e in target.elts:
            out |= _target_loads(e)
        return out
    if isinstance(target, ast.Starred):
        return _target_loads(target.value)
    return loads(target)


def _as_list(node) -> list:
    if node is None:
        return []
    return list(node) if isinstance(node, list) else [node]


# --- names assigned ----------------------------------------------------------------------------

def assigned_names(stmts) -> Set[str]:
    """Names the statements bind in the enclosing function's scope (nested function and class
    bodies excluded; their own names included)."""
    out: Set[str] = set()
    for s in _as_list(stmts):
        _assigned(s, out)
    return out


def _assigned(node, out: Set[str]):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(node.name)
        return
    if isinstance(node, (ast.Lambda,) + _COMPREHENSIONS):
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        out.add(node.id)
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            if a.name != "*":
                out.add((a.asname or a.name).split(".")[0])
        return
    if isinstance(node, ast.ExceptHandler) and node.name:
        out.add(node.name)
    if isinstance(node, ast.NamedExpr):
        out |= stored_names(node.target)
    for child in ast.iter_child_nodes(node):
        _assigned(child, out)


def definitely_assigned(stmts) -> Set[str]:
    """Names that every run through ``stmts`` (without an exception) assigns."""
    out: Set[str] = set()
    for s in _as_list(stmts):
        out |= _definite(s)
    return out


def _definite(s) -> Set[str]:
    if isinstance(s, ast.Assign):
        out = set()
        for t in s.targets:
            out |= stored_names(t)
        return out
    if isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        return stored_names(s.target) if getattr(s, "value", None) is not None else set()
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {s.name}
    if isinstance(s, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in s.names if a.name != "*"}
    if isinstance(s, ast.If):
        return definitely_assigned(s.body) & definitely_assigned(s.orelse)
    if isinstance(s, (ast.With, ast.AsyncWith)):
        out = definitely_assigned(s.body)
        for item in s.items:
            if item.optional_vars is not None:
                out |= stored_names(item.optional_vars)
        return out
    if isinstance(s, ast.Try):
        out = definitely_assigned(s.body) | definitely_assigned(s.orelse)
        for h in s.handlers:
            out &= definitely_assigned(h.body)
        return out | definitely_assigned(s.finalbody)
    return set()


# --- statements that cannot be traced ------------------------------------------------------------

def find_escape(stmts, kinds: Iterable[str], in_loop: bool = False) -> Optional[ast.stmt]:
    """The first statement among ``kinds`` ('break', 'continue', 'return', 'raise', 'yield') in
    ``stmts`` that leaves or suspends them: nested function bodies are skipped, and
    ``break`` / ``continue`` inside a nested loop belong to that loop."""
    kinds = set(kinds)
    for s in _as_list(stmts):
        found = _escape(s, kinds, in_loop)
        if found is not None:
            return found
    return None


_KIND = {ast.Break: "break", ast.Continue: "continue", ast.Return: "return", ast.Raise: "raise"}


def _escape(node, kinds, in_loop):
    if isinstance(node, _SCOPES):
        return None
    kind = _KIND.get(type(node))
    if kind in kinds and not (kind in ("break", "continue") and in_loop):
        return node
    if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) and "yield" in kinds:
        return node
    nested = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    for child in ast.iter_child_nodes(node):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and child in node.orelse:
            found = _escape(child, kinds, in_loop)   # a loop's else clause is outside the loop
        else:
            found = _escape(child, kinds, nested)
        if found is not None:
            return found
    return None


# --- liveness ----------------------------------------------------------------------------------

class Liveness:
    """Backward liveness over one function body.

    After ``run``, ``live_out[id(stmt)]`` is the set of names live right after ``stmt`` and,
    for loops, ``head[id(loop)]`` the names live at the loop head (before the test or the
    next iteration) and ``exit[id(loop)]`` the names live when the loop ends normally.
    Names read by nested functions and lambdas count as live everywhere (a closure may read
    them at any later time).
    """

    def __init__(self, fn: ast.AST):
        self.fn = fn
        self.live_out: Dict[int, Set[str]] = {}
        self.head: Dict[int, Set[str]] = {}
        self.exit: Dict[int, Set[str]] = {}
        self.always = self._closure_reads(fn)
        self.all_loads = loads(fn.body)
        self._loops: List[tuple] = []   # (exit set, head set) of the enclosing loops

    @staticmethod
    def _closure_reads(fn) -> Set[str]:
        out: Set[str] = set()
        for node in ast.walk(fn):
            if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out |= loads(node)
        return out

    def run(self):
        self.block(self.fn.body, set())
        return self

    def block(self, stmts, live: Set[str]) -> Set[str]:
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def _record(self, table, s, live):
        table[id(s)] = table.get(id(s), set()) | live | self.always

    def stmt(self, s, live: Set[str]) -> Set[str]:
        live = set(live) | self.always
        self._record(self.live_out, s, live)
        if isinstance(s, ast.Assign):
            killed = set()
            for t in s.targets:
                killed |= stored_names(t)
            uses = loads(s.value)
            for t in s.targets:
                uses |= _target_loads(t)
            return (live - killed) | uses
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return live
            return (live - stored_names(s.target)) | loads(s.value) | _target_loads(s.target)
        if isinstance(s, ast.AugAssign):
            target = {s.target.id} if isinstance(s.target, ast.Name) else loads(s.target)
            return live | target | loads(s.value)
        if isinstance(s, ast.If):
            return loads(s.test) | self.block(s.body, live) | self.block(s.orelse, live)
        if isinstance(s, (ast.For, ast.AsyncFor)):
            def body_in(head):
                return (self.block(s.body, head) - stored_names(s.target)) | _target_loads(s.target)
            return loads(s.iter) | self._loop(s, live, body_in)
        if isinstance(s, ast.While):
            return self._loop(s, live, lambda h: loads(s.test) | self.block(s.body, h), loads(s.test))
        if isinstance(s, ast.Break):
            return live | (self._loops[-1][0] if self._loops else self.all_loads)
        if isinstance(s, ast.Continue):
            return live | (self._loops[-1][1] if self._loops else self.all_loads)
        if isinstance(s, ast.Return):
            return loads(s.value) | self.always
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            outer = [d for d in s.decorator_list]
            if not isinstance(s, ast.ClassDef):
                outer += list(s.args.defaults) + [d for d in s.args.kw_defaults if d is not None]
            else:
                outer += list(s.bases) + [k.value for k in s.keywords]
            return (live - {s.name}) | loads(outer)
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            return live - assigned_names([s])
        if isinstance(s, ast.Delete):
            killed = set()
            for t in s.targets:
                killed |= stored_names(t)
            return (live - killed) | loads([t for t in s.targets if not isinstance(t, ast.Name)])
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return loads([i.context_expr for i in s.items]) | self.block(s.body, live)
        if isinstance(s, ast.Try) or type(s).__name__ in ("TryStar", "Match"):
            # conservative: every name the statement reads, nothing killed
            everything = live | loads(s)
            for field in ("body", "orelse", "finalbody"):
                self.block(getattr(s, field, []) or [], everything)
            for h in getattr(s, "handlers", []):
                self.block(h.body, everything)
            for c in getattr(s, "cases", []):
                self.block(c.body, everything)
            return everything
        return live | loads(s)

    def _loop(self, s, live, body_in, test_uses=frozenset()):
        exit_live = self.block(s.orelse, live) | set(test_uses)
        head = set(exit_live)
        while True:
            self._loops.append((live, head))
            try:
                new = exit_live | body_in(head)
            finally:
                self._loops.pop()
            if new <= head:
                break
            head |= new
        self._record(self.head, s, head)
        self._record(self.exit, s, self.block(s.orelse, live))
        return head
