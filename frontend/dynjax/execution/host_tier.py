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

When: the segment is straight-line on its arguments (a loop or branch whose operands are
only sizes and constants is evaluated when building, within ``RECORD_EQUATIONS``, and folded
into a constant; the calls of custom derivative and batching rules and ``checkpoint`` are
inlined), its arguments,
constants and sizes hold at most ``MAX_ELEMENTS`` elements each (no value it computes more
than ``MAX_VALUE_ELEMENTS``, its folded constants at most ``MAX_HELD_BYTES``), and its
estimated time on the host (a fixed cost per equation, more for an impl rule than for a
direct call, plus a cost per element) is at most its estimated time on XLA (a fixed cost per
run, ``XLA_RUN_SECONDS``, plus a cost per element): the same decision on every run and
machine. Results are numpy's, as eager
dynjax's: transcendental functions within a few ulps of XLA's, subnormals kept where XLA's
CPU code flushes them (``tests/test_eager_vs_compiled.py``); they never share memory with
the arguments.

``DYNJAX_HOST_TIER``: ``auto`` (the default), ``off`` (``0``: always compile) or ``always``
(every straight-line segment, whatever its sizes: for tests).
"""
from __future__ import annotations

import contextvars
import functools
import itertools
import math
from typing import Any, Dict, List, Sequence

import numpy as np

from ..core.interpret import Interrupted, interruptible
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ..core.primitive import impl_rules
from . import host_reach   # (which reads this module's limits and estimates when used)
from .host_kernels import FLOATS, REGISTERED, dtypes_of, host_kernels, register_kernels
from .tiers import EnvChoice

#: a segment's arguments (and each of its constants) of at most this many elements may run
#: on the host; larger ones are XLA's. (Up to here numpy runs the programs measured in
#: ``bench/`` in 0.6-1.05x the time of XLA's executable where the estimates choose the host:
#: elementwise chains, reductions, small matrix products, a masked sum)
MAX_ELEMENTS = 1 << 14
#: and no value it computes (a broadcast, an outer product) more than this many (attention's
#: n x n scores beyond 128 rows ran 2x slower on numpy than on XLA)
MAX_VALUE_ELEMENTS = MAX_ELEMENTS
#: but a size is built for only where its arguments hold at most this many, unless the
#: program's host programs serve other sizes (``host_reach``) and it holds no loop or
#: branch: a build per size (an evaluation, a function generated and checked: 2-3 times a
#: run) costs more than the eager run or padded executable a size met once gets beyond it
#: (new sizes of 1,100-16,000 elements: 300-480 us against 200-235 us), and a loop on the
#: sizes, evaluated when building, grows with them (over 7,000 rows it took 0.2 s to reach
#: ``RECORD_EQUATIONS`` and be refused, at each new size)
MAX_BUILD_ELEMENTS = 1024
#: and the constants a host program holds (folded values) at most this many bytes
MAX_HELD_BYTES = 1 << 18
#: a build gives up when evaluating the program takes more equations than this (loops on
#: sizes are evaluated then, folded into constants; a count, not a time, so that the decision
#: is the same on every run)
RECORD_EQUATIONS = 20000
#: at most this many equations
MAX_EQUATIONS = 64
#: Which tier runs a program at given sizes is decided by two estimates of its run time, the
#: host's and XLA's, made from its equations and sizes: the host runs it when its estimate
#: is at most XLA's. Estimates rather than timings, so that the choice, and so the last bits
#: of the results, do not depend on the machine's load. Measured on a 2-core x86 machine.
#:
#: XLA: any run through the dispatch table costs this (putting the arguments, launching,
#: reading the results back; ~8-9 us for one addition of 10 floats) ...
XLA_RUN_SECONDS = 8e-6
#: ... and, fused into loops, each element an elementwise step writes (a transcendental
#: function ~1.3 ns, arithmetic next to nothing), each element a reduction reads (~2-4 ns:
#: XLA:CPU's reductions of a few thousand elements are slow) and each product of a matrix
#: product (~0.4 ns at 16-64 rows; more from ~32 x 32 x 32 on, where its thread pool joins)
XLA_ELEMENT_SECONDS = 0.1e-9
XLA_TRANSCENDENTAL_SECONDS = 1.3e-9
XLA_REDUCED_SECONDS = 2.5e-9
XLA_PRODUCT_SECONDS = 0.4e-9
#: the host: each equation costs a fixed time (a direct numpy call, a view: reshape, squeeze,
#: a broadcast that the ufuncs reading it do themselves, an impl rule) ...
DIRECT_SECONDS = 0.6e-6
VIEW_SECONDS = 0.2e-6
IMPL_SECONDS = 3e-6
#: ... and one per element it writes (or reads, for a reduction), more for a transcendental
#: function, and per product of a matrix product (BLAS)
ELEMENT_SECONDS = 0.5e-9
TRANSCENDENTAL_SECONDS = 2.5e-9
PRODUCT_SECONDS = 0.15e-9

POLICIES = ("auto", "off", "always")
#: ``$DYNJAX_HOST_TIER`` (``0`` / ``1`` mean off / auto)
policy = EnvChoice("DYNJAX_HOST_TIER", POLICIES, "auto", {"0": "off", "1": "auto"})


#: the primitives whose direct kernels are views, and the transcendental functions (estimates)
_VIEWS = {"reshape", "squeeze", "broadcast_in_dim", "transpose", "slice"}
_TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan",
                   "sinh", "cosh", "tanh", "atan2", "pow", "logistic"}


# ----------------------------------------------------------------------------------------------
# Building a host program
# ----------------------------------------------------------------------------------------------

class NotHosted(Exception):
    """This segment, at these sizes, is XLA's. ``estimate``: where the estimates decided it,
    the program's estimates at any sizes (a ``Reach``, see ``_estimate``), else None."""

    def __init__(self, message: str, estimate=None):
        super().__init__(message)
        self.estimate = estimate


def _calls():
    """primitive -> the parameter holding the program it runs on its operands, for the
    primitives whose evaluation is their program's (custom derivative and batching rules,
    ``checkpoint``: their rules took effect at trace time). The host tier inlines them."""
    global _CALLS
    if _CALLS is None:
        from ..transforms.custom import custom_jvp_call_p, custom_vjp_call_p
        from ..transforms.custom_vmap import custom_vmap_call_p
        from ..transforms.remat import checkpoint_p
        _CALLS = {custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr",
                  custom_vmap_call_p: "call_jaxpr", checkpoint_p: "jaxpr"}
    return _CALLS


_CALLS = None


def _nested(eqn) -> bool:
    """Whether the equation holds a program of its own (a loop, a branch, a call)."""
    for p in eqn.params.values():
        if isinstance(p, (Jaxpr, ClosedJaxpr)) or (
                isinstance(p, (tuple, list)) and any(isinstance(q, (Jaxpr, ClosedJaxpr)) for q in p)):
            return True
    return False


def _inlined(jaxpr):
    """The equations of ``jaxpr``, those of the calls it makes (``_calls``) in their place."""
    for eqn in jaxpr.eqns:
        body = _calls().get(eqn.primitive)
        if body is None:
            yield eqn
        else:
            yield from _inlined(eqn.params[body])


def straight_line(jaxpr: Jaxpr) -> bool:
    """Whether the host tier may try ``jaxpr``: at most ``MAX_EQUATIONS`` equations (the
    programs of inlined calls counted), each with an impl rule. (A loop or branch must have
    only sizes and constants as operands, so that it folds into a constant: ``build``.)"""
    for count, eqn in enumerate(_inlined(jaxpr), 1):
        if eqn.primitive not in impl_rules or count > MAX_EQUATIONS:
            return False
    return True


def small(values: Sequence[Any], limit: int = 0) -> bool:
    """Whether every value holds at most ``limit`` elements (``MAX_ELEMENTS`` by default)."""
    limit = limit or MAX_ELEMENTS
    return all(np.size(v) <= limit for v in values)


def size_limit(jaxpr: Jaxpr) -> int:
    """The most elements an argument or size of ``jaxpr`` may have on the host:
    ``MAX_BUILD_ELEMENTS`` where it holds a loop or a branch (inlined calls looked into),
    else ``MAX_ELEMENTS`` (``MAX_BUILD_ELEMENTS`` too, for a build, until its host programs
    serve other sizes: ``Segment._host_program``)."""
    return MAX_BUILD_ELEMENTS if any(_nested(eqn) for eqn in _inlined(jaxpr)) else MAX_ELEMENTS


class _Aval:
    """An input's shape and dtype, as ``runtime.Executable.in_avals`` gives them."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)


class HostProgram:
    """A segment at one call's exact sizes as numpy calls (see the module docstring); called
    like ``runtime.Executable``: ``call_exact(runtime arguments)`` returns the list of
    results, each a new writable array.

    ``run(*args)`` is the generated function. ``fast(*args)`` computes the same in less time,
    for the dispatch table's fast path: where every step is a direct numpy call, it runs the
    function's lines alone inside a ``contextvars.Context`` of the program's own, which holds
    numpy's error state with every error ignored (entering it costs less than setting and
    resetting that state, as ``run`` does). A context admits one thread at a time: when
    another thread, or a call nested in this one, is inside it, ``fast`` raises RuntimeError
    before running anything, and the caller calls ``run``. Elsewhere ``fast`` is ``run``."""

    __slots__ = ("run", "fast", "in_avals", "_scalars", "equations", "direct", "seconds",
                 "sizes", "source", "compiled", "reach", "estimate", "__weakref__")
    wait_interruptibly = False

    def __init__(self, run, fast, in_avals, equations, direct, seconds, sizes, source):
        self.run = run
        self.fast = fast
        self.in_avals = in_avals
        # a 0-d input takes its numpy scalar type, and the Python scalar of float64, int64
        # and bool (the generated function converts it; an int out of range is numpy's
        # OverflowError)
        self._scalars = tuple((a.dtype.type,) + _PYTHON_SCALARS.get(a.dtype, ()) if a.shape == () else ()
                              for a in in_avals)
        self.equations = equations   # how many equations a call runs, how many as direct calls
        self.direct = direct
        self.seconds = seconds       # its estimated run time
        self.sizes = sizes           # the call's arguments as sizes and shapes (introspection)
        self.source = source         # the generated function's text
        self.compiled = None         # (executable, specialized text) of these sizes, when asked
        self.reach = None            # the other sizes it serves as it is (``Reach``), if any
        self.estimate = None         # its estimates at any sizes (``_estimate``), if known

    def at(self, in_avals, sizes) -> "HostProgram":
        """This program as one of other sizes that its ``reach`` admits (the same function)."""
        program = HostProgram(self.run, self.fast, in_avals, self.equations, self.direct,
                              self.seconds, sizes, self.source)
        program.reach, program.estimate = self.reach, self.estimate
        return program

    def at_arguments(self, args: Sequence[Any], runtime: Sequence[int], sizes) -> "HostProgram":
        """``at`` the shapes of a segment's arguments (``runtime``: the positions that stay
        arguments; ``sizes``: as ``Segment._sizes`` gives them)."""
        return self.at(tuple(_Aval(np.shape(args[i]), v.dtype) for i, v in zip(runtime, self.in_avals)), sizes)

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


_PYTHON_SCALARS = {np.dtype(np.float64): (float,), np.dtype(np.int64): (int,), np.dtype(bool): (bool,)}


def _impl_kernel(eqn):
    impl, params = impl_rules[eqn.primitive], eqn.params
    return (lambda *xs: impl(*xs, **params)) if params else impl


class _Step:
    """One equation a host program runs: its kernel, and the slots it reads and writes."""
    __slots__ = ("eqn", "kernel", "fresh", "ins", "outs", "direct")

    def __init__(self, eqn, kernel, fresh, ins, outs, direct):
        self.eqn, self.kernel, self.fresh, self.ins, self.outs = eqn, kernel, fresh, ins, outs
        self.direct = direct   # a direct numpy call (else the impl rule: any Python code)


class _Record:
    """The recorded run: a value per slot (a slot is a value of the program, wherever the
    jaxprs of inlined calls name it), which slots are known when building (sizes, constants,
    literals and values computed from them alone), and the steps that run at each call."""

    def __init__(self):
        self.values: List[Any] = []
        self.known: List[bool] = []
        self.sized: List[bool] = []   # whether a known slot's value depends on a size
        self.sizes: Dict[int, int] = {}   # the slots of the size arguments -> their positions
        self.dims: Dict[int, int] = {}    # id of a dynamic length in a type -> its size's position
        self.static_dims = set()      # every static length in the program's types
        self.polymorphic = True       # whether every length in its types is static or a size argument
        #: known slots that broadcast a value independent of the sizes to a shape of them:
        #: slot -> (the value's slot, broadcast_dimensions)
        self.broadcasts: Dict[int, Any] = {}
        self.steps: List[_Step] = []
        self.broadcasting = set()   # the steps whose kernel is a ufunc (it broadcasts)
        self.seconds = 0.0          # the estimated run time
        self.xla_seconds = 0.0      # and XLA's, beyond any run's cost
        self.direct = 0             # steps with a direct numpy call
        self.floats = False         # whether a step computes with floats

    def slot(self, value, known: bool, sized: bool = False) -> int:
        self.values.append(value)
        self.known.append(known)
        self.sized.append(sized)
        return len(self.values) - 1

    def see_types(self, variables, scope: Dict[int, int]) -> None:
        """Note the lengths in the types of ``variables``: static ones, and whether each
        dynamic one is a size argument itself (not a length computed from sizes)."""
        for v in variables:
            for d in getattr(getattr(v, "aval", None), "shape", ()):
                if isinstance(d, (int, np.integer)):
                    self.static_dims.add(int(d))
                elif scope.get(id(d)) in self.sizes:
                    self.dims[id(d)] = self.sizes[scope[id(d)]]
                else:
                    self.polymorphic = False

    def shape_of(self, v) -> tuple:
        """The shape of a variable's type in a polymorphic program: each length static, or
        ``(i,)`` for the size argument at position ``i``."""
        return tuple(int(d) if isinstance(d, (int, np.integer)) else (self.dims[id(d)],)
                     for d in getattr(getattr(v, "aval", None), "shape", ()))


def build(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], runtime: Sequence[int],
          sizes: Sequence[Any], force: bool = False) -> HostProgram:
    """The host program of ``jaxpr`` at these arguments (``runtime``: the positions that stay
    arguments; the others are sizes, baked in), or ``NotHosted`` when it would not pay
    (``force``: whatever it costs). ``sizes``: the arguments as sizes and shapes."""
    if not REGISTERED:
        register_kernels()
    rec = _Record()
    runtime_set = set(runtime)
    scope = {id(v): rec.slot(c, True) for v, c in zip(jaxpr.constvars, consts)}
    inputs = []
    for i, (v, a) in enumerate(zip(jaxpr.invars, args)):
        scope[id(v)] = rec.slot(a, i not in runtime_set, i not in runtime_set)
        if i in runtime_set:
            inputs.append(scope[id(v)])
        else:
            rec.sizes[scope[id(v)]] = i
    evaluated = itertools.count()
    try:
        with np.errstate(all="ignore"), interruptible(
                lambda: not force and next(evaluated) > RECORD_EQUATIONS):
            results = _record(jaxpr, scope, rec, force)
    except Interrupted:   # a loop on sizes that runs long: XLA's
        raise NotHosted(f"evaluating it takes more than {RECORD_EQUATIONS} equations") from None
    xla_seconds = XLA_RUN_SECONDS + rec.xla_seconds
    if not force and rec.seconds > xla_seconds:
        raise NotHosted(f"estimated {rec.seconds * 1e6:.1f} us on the host, "
                        f"{xla_seconds * 1e6:.1f} us on XLA", _estimate(rec, args, runtime_set))
    host_reach.unsized_broadcasts(rec, results)
    _lazy_views(rec, results)
    anywhere = host_reach.hold_anywhere(rec, results)
    expected = [np.asarray(rec.values[k]) for k in results]
    in_avals = tuple(_Aval(np.shape(args[i]), jaxpr.invars[i].aval.dtype) for i in runtime)
    arguments = [args[i] for i in runtime]
    out_avals = [v.aval for v in jaxpr.outvars]
    run, fast, source = _generate(rec, inputs, results, out_avals)
    direct = rec.direct
    if not _agrees((run, fast), arguments, expected, list(consts)):
        for step in rec.steps:
            step.kernel, step.fresh, step.direct = _impl_kernel(step.eqn), False, False
        direct = 0
        anywhere = host_reach.hold_anywhere(rec, results)
        run, fast, source = _generate(rec, inputs, results, out_avals)
        if not _agrees((run, fast), arguments, expected, list(consts)):
            raise NotHosted("the generated program disagrees with the impl rules")
    program = HostProgram(run, fast, in_avals, len(rec.steps), direct, rec.seconds, list(sizes), source)
    program.estimate = _estimate(rec, args, runtime_set)
    if anywhere and program.estimate is not None and program.estimate.changing:
        program.reach = program.estimate   # (every length static or a size argument)
        program.reach.extend_ceiling()
    return program


def _estimate(rec: _Record, args, runtime_set) -> "host_reach.Reach | None":
    """The program's ``Reach`` from the build's lengths: its estimates and the element counts
    of its values as polynomials of the sizes (``Reach.chosen_at``: whether the host tier
    would take given sizes, without a build there), where every length in its types is
    static or a size argument; else None."""
    if not rec.polymorphic:
        return None
    host = xla = 0.0
    values = {}
    try:
        for step in rec.steps:
            first_in = host_reach.symbolic(rec.shape_of(step.eqn.invars[0])) if step.eqn.invars else ()
            outs = [host_reach.symbolic(rec.shape_of(v)) for v in step.eqn.outvars]
            h, x = _estimates(step.eqn.primitive.name, step.eqn.params, step.direct, first_in, outs)
            host, xla = host + h, xla + x
            for shape in outs:   # a count is one term: the largest of each kind
                for k, c in host_reach.Polynomial.of(math.prod(shape)).terms.items():
                    values[k] = max(values.get(k, 0.0), c)
    except KeyError:   # a length in a type it has not seen (a constant's)
        return None
    return host_reach.Reach(host_reach.lengths(args, runtime_set), host_reach.spans(args, runtime_set),
                            rec.static_dims, host, xla,
                            [host_reach.Polynomial({k: c}) for k, c in values.items()])


def _record(jaxpr: Jaxpr, scope: Dict[int, int], rec: _Record, force: bool) -> List[int]:
    """Evaluate ``jaxpr`` with the impl rules on the slots ``scope`` gives its inputs,
    recording a step per equation that depends on the arguments (the programs of calls
    inlined); returns the slots of its outputs."""
    def slot(a) -> int:
        if isinstance(a, Literal):
            return rec.slot(np.asarray(a.val, a.aval.dtype), True)
        return scope[id(a)]

    rec.see_types(jaxpr.invars, scope)
    for eqn in jaxpr.eqns:
        in_slots = [slot(a) for a in eqn.invars]
        body = _calls().get(eqn.primitive)
        if body is not None:   # the call's program, inlined
            program = eqn.params[body]
            inner = {id(v): k for v, k in zip(program.invars, in_slots)}
            out_slots = _record(program, inner, rec, force)
            scope.update({id(v): k for v, k in zip(eqn.outvars, out_slots)})
            continue
        ins = [rec.values[k] for k in in_slots]   # (literals as 0-d arrays of their dtype)
        known = all(rec.known[k] for k in in_slots)   # computed from sizes and constants alone
        if not known and _nested(eqn):
            raise NotHosted(f"a {eqn.primitive.name} on the arguments")
        outs = impl_rules[eqn.primitive](*ins, **eqn.params)
        outs = list(outs) if eqn.primitive.multiple_results else [outs]
        if not force and not all(np.size(x) <= MAX_VALUE_ELEMENTS for x in outs):
            raise NotHosted(f"a value of more than {MAX_VALUE_ELEMENTS} elements")
        sized = known and any(rec.sized[k] for k in in_slots)
        out_slots = [rec.slot(x, known, sized) for x in outs]
        scope.update({id(v): k for v, k in zip(eqn.outvars, out_slots)})
        rec.see_types(eqn.outvars, scope)
        if known:
            if sized and eqn.primitive.name == "broadcast_in_dim" and not rec.sized[in_slots[0]]:
                rec.broadcasts[out_slots[0]] = (in_slots[0], tuple(eqn.params["broadcast_dimensions"]))
            continue
        rule = None if eqn.primitive.multiple_results else host_kernels.get(eqn.primitive)
        try:
            chosen = rule(ins, outs, eqn.params, [rec.known[k] for k in in_slots]) \
                if rule is not None else None
        except Exception:
            chosen = None
        if chosen is None:
            rec.steps.append(_Step(eqn, _impl_kernel(eqn), False, in_slots, out_slots, False))
        else:
            rec.steps.append(_Step(eqn, chosen[0], chosen[1], in_slots, out_slots, True))
            if len(chosen) > 2 and chosen[2]:
                rec.broadcasting.add(len(rec.steps) - 1)
            rec.direct += 1
        host, xla = _estimates(eqn.primitive.name, eqn.params, chosen is not None,
                               np.shape(ins[0]) if ins else (), [np.shape(x) for x in outs])
        rec.seconds += host
        rec.xla_seconds += xla
        rec.floats = rec.floats or any(np.asarray(x).dtype.kind in "fcV" for x in ins + outs)
    return [slot(a) for a in jaxpr.outvars]


def _estimates(name: str, params, direct: bool, first_in: tuple, outs: Sequence[tuple]):
    """The estimated times of one step on the host and, beyond a run's fixed cost, on XLA,
    from the shapes of its first operand and of its results: the host's a fixed cost and one
    per element it writes (or reads, for a reduction), or per product of a matrix product;
    XLA's per element or product alone (its steps fuse)."""
    fixed = IMPL_SECONDS if not direct else VIEW_SECONDS if name in _VIEWS else DIRECT_SECONDS
    written = sum(math.prod(shape) for shape in outs)
    if name in _VIEWS:
        return fixed, 0.0
    if name.startswith("reduce_"):
        read = math.prod(first_in)
        return fixed + (read + written) * ELEMENT_SECONDS, read * XLA_REDUCED_SECONDS
    if name == "dot_general" and first_in:
        (contracting, _), _ = params["dimension_numbers"]
        products = written * math.prod(first_in[i] for i in contracting)
        return fixed + products * PRODUCT_SECONDS + written * ELEMENT_SECONDS, products * XLA_PRODUCT_SECONDS
    if name in _TRANSCENDENTAL:
        return fixed + written * TRANSCENDENTAL_SECONDS, written * XLA_TRANSCENDENTAL_SECONDS
    return fixed + written * ELEMENT_SECONDS, written * XLA_ELEMENT_SECONDS


def _lazy_views(rec: _Record, results: Sequence[int]) -> None:
    """A step whose kernel has a lazy form (``kernel.lazy``) and whose result only ufuncs
    read runs that form: a broadcast becomes a reshape to its expanded rank
    (``np.broadcast_to`` costs ~2.5 us; the ufuncs broadcast anyway), wherever each such
    ufunc's operands still broadcast to its recorded result shape; a transpose or a slice
    becomes a view instead of a copy."""
    readers: Dict[int, List[int]] = {}
    for k, step in enumerate(rec.steps):
        for slot in step.ins:
            readers.setdefault(slot, []).append(k)
    shapes = {}   # slot -> its shape once lazy
    for step in rec.steps:
        slot = step.outs[0]
        if getattr(step.kernel, "lazy", None) is None or slot in results:
            continue
        ks = readers.get(slot, [])
        if ks and all(j in rec.broadcasting for j in ks):
            shapes[slot] = step.kernel.lazy_shape
    changed = True
    while changed:   # drop a lazy broadcast where a reader would get the wrong shape
        changed = False
        for j in rec.broadcasting:
            step = rec.steps[j]
            try:
                ok = np.broadcast_shapes(*[shapes.get(k, np.shape(rec.values[k])) for k in step.ins]) \
                    == np.shape(rec.values[step.outs[0]])
            except ValueError:
                ok = False
            if not ok:
                lazy = [k for k in step.ins if k in shapes]
                for k in lazy:
                    del shapes[k]
                changed = changed or bool(lazy)
    for step in rec.steps:
        if step.outs[0] in shapes:
            step.kernel, step.fresh = step.kernel.lazy, False


#: ufuncs whose Python operator on two numpy float scalars of one dtype computes the same
#: IEEE operation (numpy's scalar arithmetic, with the same error state) in ~0.04 us, where
#: calling the ufunc on 0-d operands takes ~0.3-0.5 us
_SCALAR_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}


def _scalar_operator(step: _Step, rec: _Record):
    """The operator that computes ``step`` when its kernel is one of ``_SCALAR_OPERATORS``
    and its operands and result are 0-d, of one float dtype (a 0-d argument enters the
    program as a numpy scalar, a 0-d constant is bound as one); else None. (Integers are
    left to the ufunc: numpy's integer scalars warn on overflow where arrays wrap.)"""
    if not isinstance(step.kernel, np.ufunc) or len(step.ins) != 2 or len(step.outs) != 1:
        return None
    symbol = _SCALAR_OPERATORS.get(step.kernel)
    if symbol is None:
        return None
    values = [rec.values[k] for k in step.ins] + [rec.values[step.outs[0]]]
    if any(np.shape(v) != () for v in values):
        return None
    dtypes = dtypes_of(values)
    return symbol if dtypes[0] in FLOATS and all(d == dtypes[0] for d in dtypes) else None


def _generate(rec: _Record, inputs: Sequence[int], results: Sequence[int], out_avals):
    """The Python function that runs the recorded steps on the runtime arguments (the slots
    ``inputs``) and returns the slots ``results`` as new arrays, and its text."""
    names: Dict[int, str] = {}
    scope: Dict[str, Any] = {"_np_array": np.array}

    def constant(value) -> str:
        name = f"c{len(scope)}"
        scope[name] = value
        return name

    held = [0]   # bytes of the constants the function holds

    def ref(slot: int) -> str:
        name = names.get(slot)
        if name is None:   # a size, a constant or a value computed from them alone
            value = rec.values[slot]
            held[0] += getattr(value, "nbytes", 0)
            if held[0] > MAX_HELD_BYTES:
                raise NotHosted(f"its constants take more than {MAX_HELD_BYTES} bytes")
            name = names[slot] = constant(value)
        return name

    params, lines = [], []
    for k, slot in enumerate(inputs):
        names[slot] = f"a{k}"
        params.append(f"a{k}")
        if np.shape(rec.values[slot]) == ():   # a Python scalar or a 0-d array: a numpy scalar
            lines.append(f"a{k} = {constant(np.asarray(rec.values[slot]).dtype.type)}(a{k})")
    scalars: Dict[int, str] = {}   # a known 0-d operand of an operator, as a numpy scalar

    def scalar_ref(slot: int) -> str:
        if slot in names:
            return names[slot]
        name = scalars.get(slot)
        if name is None:
            name = scalars[slot] = constant(np.asarray(rec.values[slot])[()])
        return name

    fresh = set()
    for step in rec.steps:
        for slot in step.outs:
            names[slot] = f"v{slot}"
            if step.fresh:
                fresh.add(slot)
        target = names[step.outs[0]] if not step.eqn.primitive.multiple_results else \
            ", ".join(names[k] for k in step.outs) + ("," if len(step.outs) == 1 else "")
        symbol = _scalar_operator(step, rec)
        if symbol is not None:
            lines.append(f"{target} = {scalar_ref(step.ins[0])} {symbol} {scalar_ref(step.ins[1])}")
        else:
            lines.append(f"{target} = {constant(step.kernel)}({', '.join(ref(k) for k in step.ins)})")
    returned, seen = [], set()
    for slot, aval in zip(results, out_avals):
        name = ref(slot)
        if slot in fresh and slot not in seen and aval.shape != ():
            returned.append(name)   # a new array no other result holds
        else:
            returned.append(f"_np_array({name}, {constant(np.dtype(aval.dtype))})")
        seen.add(slot)
    body = lines + [f"return [{', '.join(returned)}]"]
    quiet = _quiet_floats() if rec.floats else None
    entered = quiet is not None and all(step.direct for step in rec.steps)
    text = []
    if entered:   # the lines alone, to run inside a prepared context (see HostProgram)
        text.append(f"def body({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body))
    if quiet is not None:   # numpy would warn about inf - inf and the like; XLA never does
        scope["_set"], scope["_reset"], scope["_ignore"] = quiet
        body = ["_token = _set(_ignore)", "try:"] + ["    " + line for line in body] + \
            ["finally:", "    _reset(_token)"]
    text.append(f"def run({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body))
    source = "\n".join(text)
    exec(compiled(source, "<dynjax host program>"), scope)   # (other sizes: the same text)
    run = scope.pop("run")   # (a function its own globals held would be a cycle)
    if rec.floats and quiet is None:
        run = np.errstate(all="ignore")(run)   # (the decorator: a context per call, thread-safe)
    if entered:
        context = contextvars.Context()
        context.run(quiet[0], quiet[2])
        return run, functools.partial(context.run, scope.pop("body")), source
    return run, run, source


def compiled(source: str, filename: str):
    """The code object of generated text, compiled once (compiling costs ~80-150 us, an
    ``exec`` of the code ~5 us): generated functions of the same text share it."""
    code = _CODE.get(source)
    if code is None:
        code = compile(source, filename, "exec")
        if len(_CODE) >= 256:
            _CODE.clear()
        _CODE[source] = code
    return code


_CODE: Dict[str, Any] = {}   # generated text -> its code object
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


def _agrees(runs, inputs, expected, consts) -> bool:
    """Whether each of ``runs`` on ``inputs`` gives ``expected`` bit for bit, as new writable
    arrays."""
    return all(_gives(run, inputs, expected, consts) for run in runs)


def _gives(run, inputs, expected, consts) -> bool:
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
