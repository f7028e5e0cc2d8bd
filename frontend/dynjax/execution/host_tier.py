"""The host tier: a program too small for XLA runs as a few numpy calls, with nothing compiled.

Any XLA run costs about 7 us on the host (putting the arguments, launching, reading the
results back), however little it computes; numpy adds ten floats in 0.5 us. So a segment
whose run at a call's exact sizes the host would finish sooner is not compiled at all: the
first call at such sizes evaluates the jaxpr with the primitives' numpy impls (the reference
semantics, as eager dynjax does) while recording the dtype and shape of every value, and from
that record builds a ``HostProgram``: one generated Python function whose lines call a numpy
kernel per equation, with the sizes, literals and every value computed from them alone folded
into constants. Later calls at those sizes run that function, through the dispatch table's
fast path like an executable.

Kernels (``host_kernels``, one rule per primitive): a rule looks at the recorded input dtypes
and the equation's parameters and returns a direct numpy call (``np.add``, ``np.sin``,
``np.add.reduce``, a reshape, ...) where that call computes exactly what the impl rule
computes for those dtypes, or None; the impl rule itself is the kernel otherwise. The
generated function is checked once against the recorded values, bit for bit, before it
serves a call (a mismatch falls back to the impl rules).

When: the segment is straight-line (no equation holds a nested program), its arguments,
constants and sizes hold at most ``MAX_ELEMENTS`` elements each (and no value it computes
more than ``MAX_VALUE_ELEMENTS``), and the recorded run's
estimated time (a fixed cost per equation, more for an impl rule than for a direct call,
plus a cost per element) is at most ``BUDGET_SECONDS``. Results are numpy's, as eager
dynjax's: transcendental functions within a few ulps of XLA's, subnormals kept where XLA's
CPU code flushes them (``tests/test_eager_vs_compiled.py``); they never share memory with
the arguments.

``DYNJAX_HOST_TIER``: ``auto`` (the default), ``off`` (``0``: always compile) or ``always``
(every straight-line segment, whatever its sizes: for tests).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ..core.primitive import Primitive, impl_rules

#: a segment's arguments (and each of its constants) of at most this many elements may run
#: on the host; larger ones are XLA's
MAX_ELEMENTS = 1024
#: and no value it computes (a broadcast, an outer product) more than this many
MAX_VALUE_ELEMENTS = 16 * MAX_ELEMENTS
#: at most this many equations
MAX_EQUATIONS = 64
#: the host runs a program whose estimated time is at most this (measured on a 2-core x86
#: machine: an XLA run of a small program takes ~7.5 us through the dispatch table, a host
#: program ~1.5 us plus its equations)
BUDGET_SECONDS = 6e-6
#: estimated cost of one equation: a direct numpy call, a view (reshape, squeeze, a
#: broadcast that the ufuncs reading it do themselves), an impl rule
DIRECT_SECONDS = 0.6e-6
VIEW_SECONDS = 0.2e-6
IMPL_SECONDS = 3e-6
#: and of each element it writes (or reads, for a reduction; each product of a matrix
#: product), more for a transcendental function
ELEMENT_SECONDS = 0.5e-9
TRANSCENDENTAL_SECONDS = 2.5e-9

POLICIES = ("auto", "off", "always")
_last = ("auto", "auto")   # the last $DYNJAX_HOST_TIER read and its policy (one tuple: atomic)


def policy() -> str:
    """``$DYNJAX_HOST_TIER`` (``auto``, ``off`` or ``always``; ``0`` / ``1`` mean off / auto)."""
    global _last
    raw = os.environ.get("DYNJAX_HOST_TIER", "auto")
    last = _last
    if raw == last[0]:
        return last[1]
    value = {"0": "off", "1": "auto", "": "auto"}.get(raw.strip().lower(), raw.strip().lower())
    if value not in POLICIES:
        raise ValueError(f"DYNJAX_HOST_TIER={raw!r}: expected one of {', '.join(POLICIES)}")
    _last = (raw, value)
    return value


# ----------------------------------------------------------------------------------------------
# Kernels: one rule per primitive, given the recorded input dtypes and the parameters
# ----------------------------------------------------------------------------------------------

#: primitive -> rule(in_values, out_values, params) -> (numpy callable, fresh) or None. The
#: callable takes the equation's operands (all of them, size operands included) and returns
#: what the impl rule returns for operands of these dtypes and shapes; ``fresh`` says its
#: result is a new array (not a view of an operand), so that a program result needs no copy.
host_kernels: Dict[Primitive, Callable] = {}

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                    np.uint8, np.uint16, np.uint32, np.uint64))
_VIEWS = {"reshape", "squeeze", "broadcast_in_dim", "transpose"}
_TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan",
                   "sinh", "cosh", "tanh", "atan2", "pow", "logistic"}


def _dtypes(values):
    return [np.asarray(v).dtype for v in values]


def _ufunc(fn, dtypes):
    """A rule: ``fn`` itself when every operand has one dtype and it is one of ``dtypes``."""
    def rule(ins, outs, params):
        ds = _dtypes(ins)
        if params or ds[0] not in dtypes or any(d != ds[0] for d in ds):
            return None
        if _dtypes(outs)[0] != np.asarray(fn(*[np.zeros((), d) for d in ds])).dtype:
            return None
        return fn, True, True
    return rule


def _register_kernels():
    from ..lax import primitives as P
    floats, numbers = _FLOATS, _FLOATS + _COMPLEX + _INTS
    for name, fn in [("neg", np.negative), ("exp", np.exp), ("log", np.log), ("expm1", np.expm1),
                     ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("asin", np.arcsin),
                     ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh), ("cosh", np.cosh),
                     ("tanh", np.tanh), ("sqrt", np.sqrt), ("floor", np.floor), ("ceil", np.ceil),
                     ("log1p", np.log1p), ("abs", np.abs), ("is_finite", np.isfinite)]:
        host_kernels[getattr(P, name + "_p")] = _ufunc(fn, floats)
    host_kernels[P.neg_p] = _ufunc(np.negative, floats + _INTS)   # (integers wrap, as the impl's)
    host_kernels[P.abs_p] = _ufunc(np.abs, floats + _INTS)
    for name, fn, dtypes in [("add", np.add, numbers), ("sub", np.subtract, numbers),
                             ("mul", np.multiply, numbers), ("div", np.true_divide, floats + _COMPLEX),
                             ("pow", np.power, floats), ("atan2", np.arctan2, floats),
                             ("max", np.maximum, _INTS), ("min", np.minimum, _INTS),
                             ("and", np.bitwise_and, _INTS + (np.dtype(bool),)),
                             ("or", np.bitwise_or, _INTS + (np.dtype(bool),)),
                             ("xor", np.bitwise_xor, _INTS + (np.dtype(bool),)),
                             ("eq", np.equal, numbers), ("ne", np.not_equal, numbers),
                             ("lt", np.less, floats + _INTS), ("le", np.less_equal, floats + _INTS),
                             ("gt", np.greater, floats + _INTS), ("ge", np.greater_equal, floats + _INTS)]:
        host_kernels[getattr(P, name + "_p")] = _ufunc(fn, dtypes)
    host_kernels[P.reduce_sum_p] = _reduce_sum
    host_kernels[P.reduce_max_p] = _reduce_extremum(np.maximum, "reduce_max")
    host_kernels[P.reduce_min_p] = _reduce_extremum(np.minimum, "reduce_min")
    host_kernels[P.convert_element_type_p] = _convert
    host_kernels[P.select_n_p] = _select_n
    host_kernels[P.broadcast_in_dim_p] = _broadcast_in_dim
    host_kernels[P.reshape_p] = _reshape
    host_kernels[P.squeeze_p] = _squeeze
    host_kernels[P.transpose_p] = _transpose
    host_kernels[P.dot_general_p] = _dot_general


def _reduce_sum(ins, outs, params):
    (x,), axes = ins, tuple(params["axes"])
    if np.asarray(x).dtype not in _FLOATS + _COMPLEX:   # numpy widens small integers' sums
        return None
    return (lambda v: np.add.reduce(v, axis=axes)), True


def _reduce_extremum(ufunc, prim_name):
    def rule(ins, outs, params):
        (x,), axes = ins, tuple(params["axes"])
        x = np.asarray(x)
        if any(x.shape[a] == 0 for a in axes) or x.dtype not in _FLOATS + _INTS:
            return None   # an empty axis: the impl gives its identity
        if x.dtype in _INTS:
            return (lambda v: ufunc.reduce(v, axis=axes)), True
        impl = impl_rules[_primitive(prim_name)]

        def kernel(v):   # a zero result: the impl picks the zero of the right sign
            m = ufunc.reduce(v, axis=axes)
            return m if m.all() else impl(v, axes=axes)
        return kernel, True
    return rule


def _primitive(name):
    from ..lax import primitives as P
    return getattr(P, name + "_p")


def _convert(ins, outs, params):
    src, dst = np.asarray(ins[0]).dtype, np.dtype(params["new_dtype"])
    # float to integer saturates and truncates, complex to real keeps the real part: the impl
    if dst.kind in "iu" and src.kind == "f" or src.kind == "c" and dst.kind != "c":
        return None
    if src not in _FLOATS + _COMPLEX + _INTS + (np.dtype(bool),) or \
            dst not in _FLOATS + _COMPLEX + _INTS + (np.dtype(bool),):
        return None
    return (lambda v: v.astype(dst)), True


def _select_n(ins, outs, params):
    if len(ins) != 3 or np.asarray(ins[0]).dtype != np.dtype(bool):
        return None
    return (lambda which, no, yes: np.where(which, yes, no)), True


def _broadcast_in_dim(ins, outs, params):
    x, out = np.asarray(ins[0]), np.asarray(outs[0])
    expanded = [1] * out.ndim
    for i, d in enumerate(params["broadcast_dimensions"]):
        expanded[d] = x.shape[i]
    expanded, shape = tuple(expanded), out.shape
    kernel = (lambda v, *_: np.broadcast_to(v.reshape(expanded), shape))
    # where only elementwise operations read the result, their own broadcasting does it
    kernel.lazy = lambda v, *_: v.reshape(expanded)
    kernel.lazy_shape = expanded
    return kernel, False


def _reshape(ins, outs, params):
    if params.get("dimensions") is not None:
        return None
    shape = np.asarray(outs[0]).shape
    return (lambda v, *_: v.reshape(shape)), False


def _squeeze(ins, outs, params):
    shape = np.asarray(outs[0]).shape
    return (lambda v: v.reshape(shape)), False


def _transpose(ins, outs, params):
    permutation = tuple(params["permutation"])
    return (lambda v: np.transpose(v, permutation)), False


def _dot_general(ins, outs, params):
    x, y = np.asarray(ins[0]), np.asarray(ins[1])
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    pref = params.get("preferred_element_type")
    # a plain matrix product, as the impl computes it (np.matmul of the same operands)
    if x.ndim != 2 or y.ndim != 2 or tuple(lc) != (1,) or tuple(rc) != (0,) or lb or rb or \
            x.dtype != y.dtype or x.dtype not in _FLOATS + _COMPLEX or \
            (pref is not None and np.dtype(pref) != x.dtype):
        return None
    return np.matmul, True


# ----------------------------------------------------------------------------------------------
# Building a host program
# ----------------------------------------------------------------------------------------------

class NotHosted(Exception):
    """This segment, at these sizes, is XLA's."""


def straight_line(jaxpr: Jaxpr) -> bool:
    """Whether the host tier may run ``jaxpr``: at most ``MAX_EQUATIONS`` equations, each
    with an impl rule and none holding a nested program (loops, branches, custom rules)."""
    if len(jaxpr.eqns) > MAX_EQUATIONS:
        return False
    for eqn in jaxpr.eqns:
        if eqn.primitive not in impl_rules:
            return False
        for p in eqn.params.values():
            if isinstance(p, (Jaxpr, ClosedJaxpr)) or (
                    isinstance(p, (tuple, list)) and any(isinstance(q, (Jaxpr, ClosedJaxpr)) for q in p)):
                return False
    return True


def small(values: Sequence[Any]) -> bool:
    """Whether every value holds at most ``MAX_ELEMENTS`` elements."""
    return all(np.size(v) <= MAX_ELEMENTS for v in values)


class _Aval:
    """An input's shape and dtype, as ``runtime.Executable.in_avals`` gives them."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)


class HostProgram:
    """A segment at one call's exact sizes as numpy calls (see the module docstring); called
    like ``runtime.Executable``: ``call_exact(runtime arguments)`` returns the list of
    results, each a new writable array."""

    __slots__ = ("run", "in_avals", "_scalars", "equations", "direct", "estimate", "sizes",
                 "source", "__weakref__")
    wait_interruptibly = False

    def __init__(self, run, in_avals, equations, direct, estimate, sizes, source):
        self.run = run
        self.in_avals = in_avals
        # a 0-d input takes its numpy scalar type, and a Python float or bool where that is
        # the dtype (the generated function converts it; a Python int may not fit: the
        # checked path says so)
        self._scalars = tuple((a.dtype.type,) + _PYTHON_SCALARS.get(a.dtype, ()) if a.shape == () else ()
                              for a in in_avals)
        self.equations = equations   # how many equations a call runs, how many as direct calls
        self.direct = direct
        self.estimate = estimate     # its estimated run time, in seconds
        self.sizes = sizes           # the call's arguments as sizes and shapes (introspection)
        self.source = source         # the generated function's text

    def __call__(self, *args):
        return self.call(args)

    def call(self, args: Sequence[Any]) -> list:
        """Run on the runtime arguments (converted to the inputs' dtypes)."""
        return self.run(*[np.asarray(a, v.dtype) for a, v in zip(args, self.in_avals)])

    def call_exact(self, args: Sequence[Any], interruptible=None) -> list:
        """``call`` for arguments of exactly the inputs' shapes and dtypes (or 0-d inputs as
        one of ``scalar_types``), as the dispatch table's fast path passes them."""
        return self.run(*args)

    def scalar_types(self, i: int) -> tuple:
        """The scalar types input ``i`` takes as they are (``runtime.Executable.scalar_types``)."""
        return self._scalars[i]


_PYTHON_SCALARS = {np.dtype(np.float64): (float,), np.dtype(bool): (bool,)}


def _impl_kernel(eqn):
    impl, params = impl_rules[eqn.primitive], eqn.params
    return (lambda *xs: impl(*xs, **params)) if params else impl


def build(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], runtime: Sequence[int],
          sizes: Sequence[Any], force: bool = False) -> HostProgram:
    """The host program of ``jaxpr`` at these arguments (``runtime``: the positions that stay
    arguments; the others are sizes, baked in), or ``NotHosted`` when it would not pay
    (``force``: whatever it costs). ``sizes``: the arguments as sizes and shapes."""
    if not host_kernels:
        _register_kernels()
    env: Dict[int, Any] = {}
    folded = set()   # the variables whose value is known when building (sizes, constants)
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = c
        folded.add(id(v))
    runtime_set = set(runtime)
    for i, (v, a) in enumerate(zip(jaxpr.invars, args)):
        env[id(v)] = a
        if i not in runtime_set:
            folded.add(id(v))

    def read(a):
        return a.val if isinstance(a, Literal) else env[id(a)]

    steps = []       # (equation, kernel, fresh result) of the equations a call runs
    broadcasting = set()   # the steps that are numpy ufuncs (they broadcast their operands)
    seconds, direct, floats = 0.0, 0, False
    with np.errstate(all="ignore"):
        for eqn in jaxpr.eqns:
            ins = [read(a) for a in eqn.invars]
            outs = impl_rules[eqn.primitive](*ins, **eqn.params)
            outs = list(outs) if eqn.primitive.multiple_results else [outs]
            if not force and not all(np.size(x) <= MAX_VALUE_ELEMENTS for x in outs):
                raise NotHosted(f"a value of more than {MAX_VALUE_ELEMENTS} elements")
            for v, x in zip(eqn.outvars, outs):
                env[id(v)] = x
            if all(isinstance(a, Literal) or id(a) in folded for a in eqn.invars):
                folded.update(id(v) for v in eqn.outvars)   # computed from sizes and constants
                continue
            rule = None if eqn.primitive.multiple_results else host_kernels.get(eqn.primitive)
            try:
                chosen = rule(ins, outs, eqn.params) if rule is not None else None
            except Exception:
                chosen = None
            if chosen is None:
                steps.append((eqn, _impl_kernel(eqn), False))
            else:
                steps.append((eqn, chosen[0], chosen[1]))
                broadcasting.update({len(steps) - 1} if len(chosen) > 2 and chosen[2] else ())
                direct += 1
            elements = sum(np.size(x) for x in outs)
            name = eqn.primitive.name
            if name.startswith("reduce_"):
                elements += np.size(ins[0])
            elif name == "dot_general" and np.ndim(ins[0]):   # the products
                elements += np.size(outs[0]) * np.shape(ins[0])[-1]
            floats = floats or any(np.asarray(x).dtype.kind in "fcV" for x in ins + outs)
            if chosen is None:
                fixed = IMPL_SECONDS
            else:
                fixed = VIEW_SECONDS if name in _VIEWS else DIRECT_SECONDS
                elements = 0 if name in _VIEWS else elements
            per = TRANSCENDENTAL_SECONDS if name in _TRANSCENDENTAL else ELEMENT_SECONDS
            seconds += fixed + elements * per
    if not force and seconds > BUDGET_SECONDS:
        raise NotHosted(f"estimated {seconds * 1e6:.1f} us on the host")
    steps = _lazy_broadcasts(jaxpr, steps, broadcasting, env)
    expected = [np.asarray(read(v)) for v in jaxpr.outvars]
    in_avals = tuple(_Aval(np.shape(args[i]), jaxpr.invars[i].aval.dtype) for i in runtime)
    inputs = [args[i] for i in runtime]
    run, source = _generate(jaxpr, steps, env, folded, runtime, floats)
    if not _agrees(run, inputs, expected, list(consts)):
        steps = [(eqn, _impl_kernel(eqn), False) for eqn, _, _ in steps]
        direct = 0
        run, source = _generate(jaxpr, steps, env, folded, runtime, floats)
        if not _agrees(run, inputs, expected, list(consts)):
            raise NotHosted("the generated program disagrees with the impl rules")
    return HostProgram(run, in_avals, len(steps), direct, seconds, list(sizes), source)


def _lazy_broadcasts(jaxpr: Jaxpr, steps, broadcasting, env):
    """A broadcast whose result only ufuncs read becomes a reshape to its expanded rank
    (``np.broadcast_to`` costs ~2.5 us; the ufuncs broadcast anyway), wherever each such
    ufunc's operands still broadcast to its recorded result shape."""
    readers: Dict[int, List[int]] = {}
    for k, (eqn, _, _) in enumerate(steps):
        for a in eqn.invars:
            if not isinstance(a, Literal):
                readers.setdefault(id(a), []).append(k)
    returned = {id(v) for v in jaxpr.outvars if not isinstance(v, Literal)}
    shapes = {}   # var -> its shape once lazy
    for k, (eqn, kernel, fresh) in enumerate(steps):
        out = eqn.outvars[0]
        if getattr(kernel, "lazy", None) is None or id(out) in returned:
            continue
        ks = readers.get(id(out), [])
        if ks and all(j in broadcasting for j in ks):
            shapes[id(out)] = kernel.lazy_shape
    changed = True
    while changed:   # drop a lazy broadcast where a reader would get the wrong shape
        changed = False
        for j in broadcasting:
            eqn = steps[j][0]
            ins = [shapes.get(id(a), np.shape(a.val if isinstance(a, Literal) else env[id(a)]))
                   for a in eqn.invars]
            try:
                ok = np.broadcast_shapes(*ins) == np.shape(env[id(eqn.outvars[0])])
            except ValueError:
                ok = False
            if not ok:
                lazy = [id(a) for a in eqn.invars if id(a) in shapes]
                for v in lazy:
                    del shapes[v]
                changed = changed or bool(lazy)
    return [(eqn, kernel.lazy if id(eqn.outvars[0]) in shapes else kernel, fresh)
            for eqn, kernel, fresh in steps]


def _generate(jaxpr: Jaxpr, steps, env, folded, runtime, floats: bool):
    """The Python function that runs ``steps`` (see ``build``), and its text."""
    names: Dict[int, str] = {}
    scope: Dict[str, Any] = {"_np_array": np.array}
    fresh_vars = set()

    def constant(value) -> str:
        name = f"c{len(scope)}"
        scope[name] = value
        return name

    def ref(a) -> str:
        if isinstance(a, Literal):
            return constant(np.asarray(a.val, a.aval.dtype))
        name = names.get(id(a))
        if name is None:   # a size, a constant or a value computed from them alone
            name = names[id(a)] = constant(env[id(a)])
        return name

    params, lines = [], []
    for k, i in enumerate(runtime):
        names[id(jaxpr.invars[i])] = f"a{k}"
        params.append(f"a{k}")
        aval = jaxpr.invars[i].aval
        if aval.shape == ():   # a Python scalar, or a 0-d array: a numpy scalar of the dtype
            lines.append(f"a{k} = {constant(np.dtype(aval.dtype).type)}(a{k})")
    for n, (eqn, kernel, fresh) in enumerate(steps):
        args = ", ".join(ref(a) for a in eqn.invars)
        outs = []
        for v in eqn.outvars:
            names[id(v)] = f"v{len(names)}"
            outs.append(names[id(v)])
            if fresh:
                fresh_vars.add(id(v))
        k = constant(kernel)
        target = outs[0] if not eqn.primitive.multiple_results else ", ".join(outs) + ("," if len(outs) == 1 else "")
        lines.append(f"{target} = {k}({args})")
    results, returned = [], set()
    for v in jaxpr.outvars:
        if isinstance(v, Literal):
            results.append(f"_np_array({ref(v)})")
            continue
        name = ref(v)
        if id(v) in fresh_vars and id(v) not in returned and v.aval.shape != ():
            results.append(name)   # a new array no other result holds
        else:
            results.append(f"_np_array({name}, {constant(np.dtype(v.aval.dtype))})")
        returned.add(id(v))
    body = lines + [f"return [{', '.join(results)}]"]
    quiet = _quiet_floats() if floats else None
    if quiet is not None:   # numpy would warn about inf - inf and the like; XLA never does
        scope["_set"], scope["_reset"], scope["_ignore"] = quiet
        body = ["_token = _set(_ignore)", "try:"] + ["    " + line for line in body] + \
            ["finally:", "    _reset(_token)"]
    source = f"def run({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, "<dynjax host program>", "exec"), scope)
    run = scope["run"]
    if floats and quiet is None:
        run = np.errstate(all="ignore")(run)   # (the decorator: a context per call, thread-safe)
    return run, source


_QUIET: List[Any] = []


def _quiet_floats():
    """(set, reset, state) of numpy's context variable of floating-point error handling,
    with every error ignored: what ``np.errstate(all="ignore")`` sets, for ~0.2 us a call
    instead of ~0.6 us. These are numpy internals: checked once (an overflow under them must
    not warn), else None and the generated function takes ``np.errstate``."""
    if not _QUIET:
        found = None
        try:
            import warnings
            from numpy._core._multiarray_umath import _make_extobj
            from numpy._core._ufunc_config import _extobj_contextvar as var
            state = _make_extobj(all="ignore")
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                token = var.set(state)
                try:
                    np.multiply(np.array([1e308]), 10.0)
                    np.divide(np.array([0.0]), 0.0)
                finally:
                    var.reset(token)
            found = (var.set, var.reset, state)
        except Exception:
            pass
        _QUIET.append(found)
    return _QUIET[0]


def _agrees(run, inputs, expected, consts) -> bool:
    """Whether ``run`` on ``inputs`` gives ``expected`` bit for bit, as new writable arrays."""
    try:
        got = run(*inputs)
    except Exception:
        return False
    if len(got) != len(expected):
        return False
    borrowed = [x for x in list(inputs) + consts if isinstance(x, np.ndarray)]
    for g, e in zip(got, expected):
        if type(g) is not np.ndarray or g.dtype != e.dtype or g.shape != e.shape or not g.flags.writeable:
            return False
        if g.tobytes() != e.tobytes():
            return False
        if any(np.may_share_memory(g, b) for b in borrowed):
            return False
        borrowed.append(g)
    return True
