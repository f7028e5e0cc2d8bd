"""Run-time helpers called by autograph-converted code: Python or traced control flow.

``transformer`` turns each ``if`` / ``for`` / ``while`` into a call of ``if_stmt``,
``for_stmt`` or ``while_stmt`` here. They look at the predicate, the range bounds or the
iterable *when the call happens* (at trace time, or eagerly):

* ordinary Python or numpy values: plain Python control flow, so a loop over a static
  range unrolls and an ``if`` on a static value is just an ``if``;
* a traced value (a ``Tracer``): the ``cond`` / ``for_loop`` / ``while_loop`` / ``scan``
  primitive, with the variables the statement assigns carried through it.

A variable that has no value yet is ``UNDEFINED`` (an ``Undefined`` object that raises a
``NameError`` naming the variable when it is used). Carried values whose dtype changes in
the body (a Python ``0`` that becomes a float array) are promoted to the joined dtype and
the body is traced again.
"""
from __future__ import annotations

import builtins
import operator
import threading

import numpy as np

from ..core import pytree
from ..core.avals import bool_, int64
from ..core.trace import Tracer, typeof


class Undefined:
    """The value of a variable that is not bound: using it raises a ``NameError``."""
    __slots__ = ("name", "reason")

    def __init__(self, name: str = "", reason: str = ""):
        self.name = name
        self.reason = reason

    def error(self):
        msg = f"autograph: variable `{self.name}` has no value here" if self.name else \
            "autograph: a variable has no value here"
        return NameError(msg + (f": {self.reason}" if self.reason else ""))

    def __repr__(self):
        return f"<undefined {self.name}>" if self.name else "<undefined>"

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        raise self.error()

    def _fail(self, *args, **kwargs):
        raise self.error()

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __index__ = __int__ = __float__ = _fail
    __array__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
                "lshift", "rshift"):
        locals()[f"__{_op}__"] = locals()[f"__r{_op}__"] = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    del _op


UNDEFINED = Undefined()


def ld(getter, name):
    """The current value of a variable (``getter`` is ``lambda: name``), or an ``Undefined``
    when it is not bound yet."""
    try:
        return getter()
    except NameError:
        return Undefined(name, "it is not assigned before this point")


def _undefined(x) -> bool:
    return isinstance(x, Undefined)


def _traced(x) -> bool:
    return isinstance(x, Tracer)


# --- boolean operators and expressions -----------------------------------------------------------

def and_(first, *rest):
    """``a and b and ...``: Python's short-circuit on ordinary values; ``logical_and`` of the
    remaining operands once one of them is traced."""
    value = first
    for i, thunk in enumerate(rest):
        if _traced(value):
            return _logical("logical_and", value, [t() for t in rest[i:]])
        if not value:
            return value
        value = thunk()
    return value


def or_(first, *rest):
    """``a or b or ...``: Python's short-circuit on ordinary values; ``logical_or`` of the
    remaining operands once one of them is traced."""
    value = first
    for i, thunk in enumerate(rest):
        if _traced(value):
            return _logical("logical_or", value, [t() for t in rest[i:]])
        if value:
            return value
        value = thunk()
    return value


def _logical(op, value, others):
    from .. import numpy as jnp
    out = value
    for o in others:
        out = getattr(jnp, op)(out, o)
    return out


def not_(x):
    """``not x``: ``logical_not`` on a traced value, Python's ``not`` otherwise."""
    if _traced(x):
        from .. import numpy as jnp
        return jnp.logical_not(x)
    return not x


def len_(len_fn, x):
    """``len(x)``; for a traced array whose leading axis is dynamic, that axis's size (a
    traced integer) instead of an error."""
    if len_fn is builtins.len and _traced(x) and x.ndim and not isinstance(x.shape[0], int):
        return x.shape[0]
    return len_fn(x)


def if_exp(pred, true_thunk, false_thunk, line):
    """``a if pred else b``: Python's on an ordinary predicate, a ``cond`` on a traced one."""
    if not _traced(pred):
        return true_thunk() if pred else false_thunk()
    pred = _predicate(pred, f"the condition of the conditional expression at line {line}")
    (out,) = _traced_cond(pred, [false_thunk, true_thunk], lambda fn: (fn(),), ["<expression>"],
                          f"the conditional expression at line {line}")
    return out


# --- if ----------------------------------------------------------------------------------------------

def if_stmt(pred, true_fn, false_fn, init, names, both=None, live=None, line=0):
    """An ``if`` statement. ``true_fn(*vars)`` / ``false_fn(*vars)`` run a branch on the current
    values of the variables ``names`` that the statement assigns, and return their new values.

    With a traced ``pred``, both branches are traced into a ``cond`` that returns the
    variables that are live after the statement (``live``), when they have a value before it
    or every branch assigns them (``both``)."""
    if not _traced(pred):
        return true_fn(*init) if pred else false_fn(*init)
    n = len(names)
    both = both or (False,) * n
    live = live or (True,) * n
    where = f"the if at line {line}"
    pred = _predicate(pred, f"the condition of {where}")
    outputs = []
    for k in range(n):
        if not live[k]:
            continue
        if _undefined(init[k]) and not both[k]:
            raise NameError(f"autograph: `{names[k]}` is assigned in only one branch of {where}, whose "
                            f"condition is a traced value (both branches are traced, and each must "
                            f"give it a value); give `{names[k]}` a value before the if")
        outputs.append(k)

    def run(fn):
        res = fn(*init)
        return tuple(res[k] for k in outputs)

    outs = _traced_cond(pred, [false_fn, true_fn], run, [names[k] for k in outputs], where)
    result = [Undefined(names[k], f"it is assigned in {where} (a traced condition) but dynjax found no later "
                                  "use of it") for k in range(n)]
    for k, v in zip(outputs, outs):
        result[k] = v
    return tuple(result)


def _traced_cond(pred, branches, run, names, where):
    """``cond`` of ``run(branch)`` for each branch; outputs whose dtypes differ between the
    branches are promoted to the joined dtype."""
    from ..control_flow.binders import bind_cond
    from ..lax.api import convert_element_type
    index = convert_element_type(pred, int64)
    casts = {}
    for _ in range(4):
        seen = {}

        def wrap(b, fn):
            def branch():
                _state.branch_depth = getattr(_state, "branch_depth", 0) + 1
                try:
                    outs = run(fn)
                finally:
                    _state.branch_depth -= 1
                leaves = []
                for j, (name, v) in enumerate(zip(names, outs)):
                    if _undefined(v):
                        raise NameError(f"autograph: `{name}` has no value at the end of a branch of {where}")
                    v = _apply_casts(v, casts.get(j))
                    _check_leaves(v, name, where)
                    leaves.append(pytree.tree_flatten(v))
                seen[b] = leaves
                if len(seen) == len(branches):
                    _join_branches(seen, names, where)
                return tuple(pytree.tree_unflatten(t, ls) for ls, t in leaves)
            return branch
        try:
            return bind_cond(index, [wrap(b, fn) for b, fn in enumerate(branches)], ())
        except _Promote as p:
            if p.owner is not seen:
                raise
            for j, dts in p.dtypes.items():
                casts[j] = dts
    raise AssertionError("autograph: dtype promotion did not converge")  # pragma: no cover


def _join_branches(seen, names, where):
    first = seen[0]
    promote = {}
    for j, name in enumerate(names):
        trees = [seen[b][j][1] for b in seen]
        if any(t != trees[0] for t in trees[1:]):
            raise TypeError(f"autograph: `{name}` has a different structure in the branches of {where} "
                            f"({' vs '.join(map(str, trees))})")
        dts = []
        for i in range(len(first[j][0])):
            avals = [typeof(seen[b][j][0][i]) for b in seen]
            if any(a.ndim != avals[0].ndim for a in avals):
                raise TypeError(f"autograph: `{name}` has different ranks in the branches of {where} ("
                                + " vs ".join(a.str_short() for a in avals) + ")")
            joined = _join(avals)
            dts.append(joined)
        if any(typeof(seen[b][j][0][i]).dtype != dts[i] for b in seen for i in range(len(dts))):
            promote[j] = dts
    if promote:
        raise _Promote(seen, promote)


# --- item assignment ---------------------------------------------------------------------------

_state = threading.local()   # branch_depth: how many traced ``if`` branches are being traced
make_slice = builtins.slice  # ``a:b`` in a rewritten subscript (``slice`` may be shadowed)

_INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "truediv": operator.itruediv,
            "floordiv": operator.ifloordiv, "mod": operator.imod, "pow": operator.ipow,
            "and": operator.iand, "or": operator.ior, "xor": operator.ixor, "lshift": operator.ilshift,
            "rshift": operator.irshift, "matmul": operator.imatmul}
_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and": operator.and_,
           "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
           "matmul": operator.matmul}


def _index_traced(index) -> bool:
    if isinstance(index, tuple):
        return any(_index_traced(i) for i in index)
    if isinstance(index, builtins.slice):
        return any(_traced(p) for p in (index.start, index.stop, index.step))
    return _traced(index)


def set_item(x, index, value, op=None):
    """``x[index] = value`` (``op=None``) or ``x[index] <op>= value``; returns the new ``x``.

    On a traced array, or a numpy array updated with traced values or indices, this is the
    functional ``x.at[index].set(value)`` (``.add`` for ``+=``, ``.multiply`` for ``*=``, and
    ``x.at[index].apply(lambda old: old <op> value)`` for the other operators). Otherwise it
    is Python's statement, modifying ``x`` in place, except inside a branch of a traced
    ``if``, where both branches are traced: there a list, dict or numpy array is copied
    first, so that one branch's assignment is not seen by the other."""
    if _undefined(x):
        raise x.error()
    functional = _traced(x) or (isinstance(x, np.ndarray) and (_traced(value) or _index_traced(index)))
    in_branch = getattr(_state, "branch_depth", 0) > 0
    if functional or (in_branch and isinstance(x, np.ndarray)):
        from ..numpy.indexing import at
        ref = at(x)[index]
        if op is None:
            return ref.set(value)
        if op == "add":
            return ref.add(value)
        if op == "mul":
            return ref.multiply(value)
        fn = _BINARY[op]
        return ref.apply(lambda old: fn(old, value))
    if in_branch and isinstance(x, (list, dict)):
        x = type(x)(x)
    if op is None:
        x[index] = value
    else:
        x[index] = _INPLACE[op](x[index], value)
    return x


# --- loops -------------------------------------------------------------------------------------------

class TracedRange:
    """``range(lower, upper, step)`` with a traced bound or step."""

    def __init__(self, lower, upper, step):
        self.lower, self.upper, self.step = lower, upper, step


class TracedEnumerate:
    """``enumerate(xs, start)`` over a traced array."""

    def __init__(self, xs, start):
        self.xs, self.start = xs, start


def range_(range_fn, *args):
    """``range(*args)``, or a ``TracedRange`` when an argument is traced."""
    if range_fn is builtins.range and any(_traced(a) for a in args):
        if len(args) == 1:
            return TracedRange(0, args[0], 1)
        return TracedRange(args[0], args[1], args[2] if len(args) == 3 else 1)
    return range_fn(*args)


def enumerate_(enumerate_fn, xs, start=0):
    """``enumerate(xs, start)``, or a ``TracedEnumerate`` when ``xs`` is traced."""
    if enumerate_fn is builtins.enumerate and _traced(xs):
        return TracedEnumerate(xs, start)
    return enumerate_fn(xs, start)


def for_stmt(iterable, body, init, names, carried=None, live=None, line=0):
    """A ``for`` loop. ``body(item, *vars)`` runs one iteration on the current values of the
    variables ``names`` that the body (or the loop target) assigns, and returns them.

    Over a ``TracedRange`` it becomes a ``for_loop``; over a traced array (its leading axis,
    which may be dynamic) or a ``TracedEnumerate`` a ``scan``; otherwise a Python loop.
    Variables live at the loop head (``carried``) that have a value before the loop are
    carried through the traced loop."""
    if isinstance(iterable, TracedRange):
        from ..control_flow.binders import bind_for_loop

        def bind(step_fn, init_):
            return bind_for_loop(step_fn, iterable.lower, iterable.upper, iterable.step, init_, True)
        return _traced_loop(bind, body, init, names, carried, live, f"the for loop at line {line}")
    if _traced(iterable) or isinstance(iterable, TracedEnumerate):
        return _scan_loop(iterable, body, init, names, carried, live, line)
    values = tuple(init)
    for item in iterable:
        values = body(item, *values)
    return values


def _scan_loop(iterable, body, init, names, carried, live, line):
    from ..control_flow.binders import bind_scan
    enum = isinstance(iterable, TracedEnumerate)
    xs = iterable.xs if enum else iterable
    if typeof(xs).ndim == 0:
        raise TypeError(f"autograph: the for loop at line {line} iterates over a 0-d traced array")

    def bind(step_fn, init_):
        if enum:
            def f(carry, x):
                i, c = carry
                return (i + 1, step_fn((i, x), c)), ()
            start = iterable.start if _traced(iterable.start) else np.int64(iterable.start)
            return bind_scan(f, (start, init_), xs, None, False)[0][1]
        return bind_scan(lambda c, x: (step_fn(x, c), ()), init_, xs, None, False)[0]
    return _traced_loop(bind, body, init, names, carried, live, f"the for loop at line {line}")


def while_stmt(test, body, init, names, carried=None, live=None, line=0):
    """A ``while`` loop: ``test(*vars)`` and ``body(*vars)`` on the variables ``names`` that the
    body assigns. It runs as Python while the test gives ordinary values, and becomes a
    ``while_loop`` (from the current values) as soon as the test is traced."""
    values = tuple(init)
    where = f"the while loop at line {line}"
    while True:
        pred = test(*values)
        if _traced(pred):
            break
        if not pred:
            return values
        values = body(*values)
    from ..control_flow.binders import bind_while_loop
    n = len(names)
    cfg = {}

    def bind(step_fn, init_):
        def cond_fn(carry):
            return _predicate(test(*cfg["full"](carry)), f"the condition of {where}")
        return bind_while_loop(cond_fn, lambda c: step_fn(None, c), init_, True)

    def call_body(item, *vals):
        return body(*vals)
    return _traced_loop(bind, call_body, values, names, carried or (True,) * n, live, where, cfg)


def _traced_loop(bind, body, init, names, carried, live, where, cfg=None):
    """Bind a loop primitive over ``body``: carry the live variables that have a value."""
    n = len(names)
    carried = carried or (True,) * n
    live = live or (True,) * n
    for k in range(n):
        if live[k] and _undefined(init[k]):
            raise NameError(f"autograph: `{names[k]}` is assigned in {where}, which runs on traced values, "
                            f"and is used after it, but has no value before the loop; give `{names[k]}` a "
                            "value before the loop")
    slots = [k for k in range(n) if carried[k] and not _undefined(init[k])]
    local = {k: Undefined(names[k], f"it is assigned in {where} (traced) before this use, or only after "
                                    "it") for k in range(n)}
    current = [_value_or(init[k], local[k]) if k in slots else local[k] for k in range(n)]
    for k in slots:
        _check_leaves(init[k], names[k], where, before=True)

    def full(carry):
        vals = list(current)
        for k, v in zip(slots, carry):
            vals[k] = v
        return vals
    if cfg is not None:
        cfg["full"] = full

    start = [init[k] for k in slots]
    # Python scalars are weakly typed (0.0 + a float32 array is float32), but a loop body sees
    # its carried values with strong types. A first "probe" trace hands the body weakly typed
    # values, so that promotion finds the dtype Python would give; the loop is then traced
    # again with strong initial values.
    probe = any(_weak_leaves(x) for x in start)
    for _ in range(16):
        token = object()

        def step(item, carry, probe=probe, start=tuple(start)):
            carry = tuple(carry)
            if probe:
                carry = tuple(_weaken(c, s) for c, s in zip(carry, start))
            outs = body(item, *full(carry))
            new = []
            promote = {}
            for j, k in enumerate(slots):
                v = outs[k]
                if _undefined(v):
                    raise NameError(f"autograph: `{names[k]}` has no value at the end of an iteration of "
                                    f"{where}")
                _check_leaves(v, names[k], where)
                v, dts = _match_carry(carry[j], v, names[k], where)
                if dts is not None:
                    promote[j] = dts
                new.append(v)
            if promote:
                raise _Promote(token, promote)
            return tuple(new)
        try:
            outs = bind(step, tuple(start))
        except _Promote as p:
            if p.owner is not token:
                raise
            for j, dts in p.dtypes.items():
                start[j] = _apply_casts(start[j], dts)
            continue
        if not probe:
            break
        probe = False
        start = [_strengthen(x) for x in start]
    else:   # pragma: no cover
        raise AssertionError("autograph: dtype promotion did not converge")
    outs = tuple(outs)
    result = [Undefined(names[k], f"it is assigned in {where} (traced) and dynjax found no later use of it")
              for k in range(n)]
    for k, v in zip(slots, outs):
        result[k] = v
    return tuple(result)


def _weak_leaves(x) -> bool:
    return any(typeof(leaf).weak_type for leaf in pytree.tree_flatten(x)[0])


def _weaken(carry, init):
    """The carried value ``carry`` weakly typed where its initial value ``init`` is."""
    from ..lax.api import convert_element_type
    c_leaves, tree = pytree.tree_flatten(carry)
    i_leaves, _ = pytree.tree_flatten(init)
    return pytree.tree_unflatten(tree, [convert_element_type(c, typeof(c).dtype, True) if typeof(i).weak_type
                                        else c for c, i in zip(c_leaves, i_leaves)])


def _strengthen(x):
    """``x`` with every weakly typed Python scalar made a numpy array of its dtype (a loop
    treats a weakly typed tracer as strong already)."""
    leaves, tree = pytree.tree_flatten(x)
    out = []
    for leaf in leaves:
        a = typeof(leaf)
        if a.weak_type and not _traced(leaf):
            leaf = np.asarray(leaf, a.dtype)
        out.append(leaf)
    return pytree.tree_unflatten(tree, out)


def _value_or(x, default):
    return default if _undefined(x) else x


def static_test(pred, kind, kind_line, stmt, line):
    """The predicate of an ``if`` or ``while`` that holds ``kind`` (``break``, ``return`` ...)
    and so is not converted: it must not be traced."""
    if _traced(pred):
        what = "a loop" if stmt == "while" else "an if statement"
        raise NotImplementedError(
            f"autograph: `{kind}` at line {kind_line} is inside {what} whose condition is a traced value "
            f"(the {stmt} at line {line}); a traced {'loop' if stmt == 'while' else 'branch'} cannot "
            f"`{kind}`. Restructure the code without `{kind}` (e.g. fold the exit condition into the "
            "while test, or assign a result variable in both branches), or make the condition static")
    return pred


def static_iter(iterable, kind, kind_line, line):
    """The iterable of a ``for`` loop that holds ``kind`` (``break``, ``return`` ...) and so is
    not converted: it must not be traced."""
    if _traced(iterable) or isinstance(iterable, (TracedRange, TracedEnumerate)):
        raise NotImplementedError(
            f"autograph: `{kind}` at line {kind_line} is inside the for loop at line {line}, which runs "
            f"over traced values; a loop over traced values cannot `{kind}`. Restructure the code "
            f"without `{kind}` (e.g. a while loop whose test holds the exit condition), or loop over a "
            "static range")
    return iterable


# --- values, dtypes --------------------------------------------------------------------------------

class _Promote(Exception):
    """Internal: carried or branch values change dtype; promote them and trace again."""

    def __init__(self, owner, dtypes):
        self.owner = owner
        self.dtypes = dtypes   # index -> list of dtypes, one per pytree leaf


_SCALARS = (bool, int, float, complex, np.ndarray, np.generic)


def _check_leaves(value, name, where, before=False):
    leaves, _ = pytree.tree_flatten(value)
    for leaf in leaves:
        if not isinstance(leaf, (Tracer,) + _SCALARS):
            when = "before" if before else "in"
            raise TypeError(f"autograph: `{name}` is a {type(leaf).__name__} {when} {where}; a variable "
                            "that a loop or branch over traced values assigns must hold arrays or "
                            "numbers (or tuples, lists, dicts of them)")


def _join(avals):
    from ..numpy._promote import promote_dtypes
    dt = avals[0].dtype
    if all(a.dtype == dt for a in avals):
        return dt
    return promote_dtypes(*avals)[0]


def _cast(x, dtype):
    if _traced(x):
        if x.dtype == dtype:
            return x
        from ..lax.api import convert_element_type
        return convert_element_type(x, dtype)
    arr = np.asarray(x)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _apply_casts(value, dtypes):
    if dtypes is None:
        return value
    leaves, tree = pytree.tree_flatten(value)
    return pytree.tree_unflatten(tree, [_cast(x, dt) for x, dt in zip(leaves, dtypes)])


def _match_carry(carry_in, out, name, where):
    """``out`` made to fit the carried value ``carry_in`` (the body's argument): same
    structure and ranks (else a TypeError naming the variable); a dtype that joins into the
    carried one is cast, a wider one is returned as the dtypes to promote the carry to."""
    in_leaves, in_tree = pytree.tree_flatten(carry_in)
    out_leaves, out_tree = pytree.tree_flatten(out)
    if in_tree != out_tree:
        raise TypeError(f"autograph: `{name}` enters {where} as {in_tree} but one iteration makes it "
                        f"{out_tree}; a carried variable must keep its structure")
    cast_leaves, promote = [], None
    joined = []
    for a, b in zip(in_leaves, out_leaves):
        ta, tb = typeof(a), typeof(b)
        if ta.ndim != tb.ndim:
            raise TypeError(f"autograph: `{name}` enters {where} as {ta.str_short()} but one iteration "
                            f"makes it {tb.str_short()}; a carried variable must keep its rank")
        dt = _join([ta, tb])
        joined.append(dt)
        if dt != ta.dtype:
            promote = True
        cast_leaves.append(_cast(b, ta.dtype) if tb.dtype != ta.dtype and dt == ta.dtype else b)
    if promote:
        return out, joined
    return pytree.tree_unflatten(out_tree, cast_leaves), None


def _predicate(pred, what):
    """A traced predicate as a ``bool[]`` scalar (a number is compared with zero)."""
    a = typeof(pred)
    if a.shape != ():
        raise TypeError(f"autograph: {what} is a traced array of type {a.str_short()}, not a scalar "
                        "(reduce it, e.g. with jnp.any or jnp.all)")
    if a.dtype != bool_:
        from .. import numpy as jnp
        return jnp.not_equal(pred, 0)
    return pred
