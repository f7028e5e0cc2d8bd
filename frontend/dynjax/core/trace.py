"""The interpreter stack: traces, tracers and ``bind``.

Every primitive application goes through ``bind``. It picks the trace that must
interpret the application -- the innermost active staging trace, or a higher-level
trace (a future jvp / vmap trace) owning one of the operands -- raises the operands
into that trace and lets it process the primitive.

* ``EvalTrace`` (level 0, always at the bottom) evaluates with the numpy impl rules.
* Staging traces (``dynjax.core.staging.JaxprTrace``) record equations into a jaxpr.

New interpretations (jvp, vmap, ...) subclass ``Trace`` and push themselves with
``new_trace``; primitives need not change, only a rule table per interpretation.
"""
from __future__ import annotations

import contextlib
import threading
from typing import List

import numpy as np

from . import avals as _avals
from .primitive import Primitive, impl_rules


class Trace:
    """One interpreter on the stack. ``level`` orders traces: higher levels are inner."""

    def __init__(self, level: int):
        self.level = level
        self.active = True

    def pure(self, val):
        """Wrap a non-tracer value (Python scalar, numpy array) as a value of this trace."""
        raise NotImplementedError

    def lift(self, tracer):
        """Bring a tracer of a lower-level (outer) trace into this trace."""
        raise NotImplementedError

    def process_primitive(self, primitive: Primitive, tracers, params):
        raise NotImplementedError

    def full_raise(self, val):
        if not isinstance(val, Tracer):
            return self.pure(val)
        trace = val._trace
        if trace is self:
            return val
        if not trace.active:
            raise EscapedTracerError(val)
        if trace.level < self.level:
            return self.lift(val)
        raise EscapedTracerError(val)


class EscapedTracerError(TypeError):
    def __init__(self, tracer):
        super().__init__(
            f"a traced value of type {tracer.aval.str_short()} is used outside the function "
            "or loop body that created it (it was stored in a Python variable that outlived "
            "its trace); return it from the body instead")


class EvalTrace(Trace):
    """Evaluates primitives eagerly on numpy values with the impl rules."""

    def pure(self, val):
        return val

    def lift(self, tracer):  # pragma: no cover - nothing is below the eval trace
        raise EscapedTracerError(tracer)

    def full_raise(self, val):
        if isinstance(val, Tracer):
            raise EscapedTracerError(val)
        return val

    def process_primitive(self, primitive, values, params):
        try:
            rule = impl_rules[primitive]
        except KeyError:
            raise NotImplementedError(f"no eager implementation for primitive {primitive.name}") from None
        return rule(*values, **params)


_eval_trace = EvalTrace(0)


class _ThreadState(threading.local):
    """The interpreter stack of one thread. Tracing on one thread never sees another
    thread's traces: each thread starts with only the eval trace."""

    def __init__(self):
        self.stack: List[Trace] = [_eval_trace]
        # The innermost staging trace (or the eval trace): every bind is interpreted at least there.
        self.dynamic: List[Trace] = [_eval_trace]


_state = _ThreadState()


def current_trace() -> Trace:
    """The innermost staging trace of this thread (the eval trace when nothing is traced)."""
    return _state.dynamic[-1]


#: ``[k]``: the staging scopes open on all threads together. ``is_tracing`` and the dispatch
#: table's fast path read it first (``STAGING[0] == 0``: no thread traces, so neither does
#: this one) and the thread-local stack only when some thread traces: reading a
#: ``threading.local`` costs ~0.15 us, a tenth of a call. Read without the lock: a thread
#: sees its own scopes, and another thread's count only decides whether the exact check runs.
STAGING = [0]
_staging_lock = threading.Lock()


def is_tracing() -> bool:
    """Whether this thread is inside a staging scope (a jaxpr is being recorded)."""
    return STAGING[0] != 0 and _state.dynamic[-1] is not _eval_trace


#: ``is_tracing()`` spelled out without a call, for the dispatch table's fast path (a call of
#: ~1 us, of which a Python frame is ~5%): ``STAGING[0] != 0 and thread_state.dynamic[-1] is
#: not EVAL_TRACE``
thread_state = _state
EVAL_TRACE = _eval_trace


def next_level() -> int:
    return len(_state.stack)


@contextlib.contextmanager
def new_trace(trace: Trace, dynamic: bool = False):
    """Push ``trace`` on this thread's stack for the duration of the block (and make it the
    dynamic trace when ``dynamic``: staging traces capture every bind)."""
    state = _state
    state.stack.append(trace)
    if dynamic:
        with _staging_lock:
            STAGING[0] += 1
        state.dynamic.append(trace)
    try:
        yield trace
    finally:
        trace.active = False
        if dynamic:
            state.dynamic.pop()
            with _staging_lock:
                STAGING[0] -= 1
        state.stack.pop()


_NATIVE_OPERANDS = frozenset({np.ndarray, int, float, bool, complex})

#: primitive -> ``fn(params)`` giving the trace that binds the primitive's named axis (the
#: collectives of ``lax.collectives``): ``bind`` interprets it at least there, so that a
#: collective reaches the ``vmap`` of its axis whatever its operands (even none)
named_axis_binders: dict = {}


def bind(primitive: Primitive, *args, **params):
    """Apply ``primitive`` to ``args`` under the appropriate interpreter."""
    top = _state.dynamic[-1]
    if primitive in named_axis_binders:   # a collective: the trace binding its axis name
        axis_trace = named_axis_binders[primitive](params)
        if axis_trace.level > top.level:
            top = axis_trace
    foreign = False
    for a in args:
        if isinstance(a, Tracer):
            if a._trace.level > top.level:
                if not a._trace.active:   # a tracer kept after its trace ended
                    raise EscapedTracerError(a)
                top = a._trace
        elif a.__class__ not in _NATIVE_OPERANDS and _avals.is_foreign_array(a):
            foreign = True
    if foreign:   # a jax.Array or another __array__ object: its numpy value
        args = tuple(_avals.from_foreign_array(a) if not isinstance(a, Tracer) and _avals.is_foreign_array(a)
                     else a for a in args)
        return bind(primitive, *args, **params)
    if top is _eval_trace:
        for a in args:
            if isinstance(a, Tracer):
                raise EscapedTracerError(a)
        return _eval_trace.process_primitive(primitive, args, params)
    tracers = [top.full_raise(a) for a in args]
    return top.process_primitive(primitive, tracers, params)


class ConcretizationError(TypeError):
    pass


# numpy's own indexing (``x[i]`` with ``x`` a numpy array or a list) converts the index with
# ``__index__`` / ``__array__`` and offers no way to see a traced index
_INDEX_HINT = (". numpy's own indexing cannot take a traced index: to index a numpy array x "
               "with a traced value i, write jnp.getitem(x, i) (or, under qjit, "
               "jnp.asarray(x)[i]), and jnp.at(x)[i].set(v) for an update")


class Tracer:
    """A value under tracing. Supports the numpy array protocol of operators and methods."""
    __slots__ = ("_trace", "aval")
    __array_priority__ = 1000

    def __init__(self, trace: Trace, aval):
        self._trace = trace
        self.aval = aval

    # --- shape information -------------------------------------------------------------------
    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        from .. import numpy as jnp
        return jnp.size(self)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of a 0-d traced array")
        d = self.aval.shape[0]
        if isinstance(d, int):
            return d
        raise ConcretizationError(
            "len() of an array with a dynamic leading dimension: use x.shape[0], which is a "
            "traced integer, instead")

    def as_dim(self):
        return self

    # --- conversions that need a concrete value -------------------------------------------------
    def _concrete_error(self, what, hint=""):
        return ConcretizationError(
            f"{what} needs a concrete value, but this is a traced value of type "
            f"{self.aval.str_short()}. Python control flow on traced values is not possible; "
            "use dynjax.cond / for_loop / while_loop (or dynjax.lax.cond ...) instead" + hint)

    def __bool__(self):
        raise self._concrete_error("bool(x) (e.g. `if x:` or `while x:`)")

    def __int__(self):
        raise self._concrete_error("int(x)")

    def __float__(self):
        raise self._concrete_error("float(x)")

    def __index__(self):
        raise self._concrete_error("using a traced value as a Python index (x.__index__)", _INDEX_HINT)

    def __array__(self, dtype=None, copy=None):
        raise self._concrete_error("converting a traced value to a numpy array", _INDEX_HINT)

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        n = self.aval.shape[0]
        if not isinstance(n, int):
            raise ConcretizationError("cannot iterate over an array whose leading dimension is dynamic")
        return (self[i] for i in range(n))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>"

    # --- numpy methods ---------------------------------------------------------------------------
    def astype(self, dtype):
        from .. import numpy as jnp
        return jnp.astype(self, dtype)

    def reshape(self, *shape, **kw):
        from .. import numpy as jnp
        if len(shape) == 1:   # x.reshape((2, 3)), x.reshape(n), x.reshape(shape_array)
            shape = shape[0]
        return jnp.reshape(self, shape, **kw)

    @property
    def T(self):
        from .. import numpy as jnp
        return jnp.transpose(self)

    def transpose(self, *axes):
        from .. import numpy as jnp
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return jnp.transpose(self, axes or None)

    def ravel(self):
        from .. import numpy as jnp
        return jnp.ravel(self)

    def flatten(self):
        return self.ravel()

    def squeeze(self, axis=None):
        from .. import numpy as jnp
        return jnp.squeeze(self, axis)


def _method(name):
    def method(self, *args, **kwargs):
        from .. import numpy as jnp
        return getattr(jnp, name)(self, *args, **kwargs)
    method.__name__ = name
    return method


for _name in ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "cumsum", "dot", "clip", "diagonal",
              "trace", "repeat"):
    setattr(Tracer, _name, _method(_name))


def _binop(name, reflected=False):
    def op(self, other):
        from .. import numpy as jnp
        fn = getattr(jnp, name)
        return fn(other, self) if reflected else fn(self, other)
    return op


for _dunder, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"), ("mod", "remainder"),
                     ("pow", "power"), ("matmul", "matmul"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                     ("rshift", "right_shift")]:
    setattr(Tracer, f"__{_dunder}__", _binop(_fn))
    setattr(Tracer, f"__r{_dunder}__", _binop(_fn, reflected=True))

for _dunder, _fn in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                     ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")]:
    setattr(Tracer, f"__{_dunder}__", _binop(_fn))


def _unop(name):
    def op(self):
        from .. import numpy as jnp
        return getattr(jnp, name)(self)
    return op


Tracer.__neg__ = _unop("negative")
Tracer.__pos__ = lambda self: self
Tracer.__abs__ = _unop("abs")
Tracer.__invert__ = _unop("invert")


def _getitem(self, idx):
    from ..numpy import indexing
    return indexing.getitem(self, idx)


Tracer.__getitem__ = _getitem


def _setitem(self, idx, value):
    raise TypeError("dynjax arrays are immutable: instead of x[idx] = y, write x = x.at[idx].set(y) "
                    "(or .add, .multiply, .min, .max, ...)")


Tracer.__setitem__ = _setitem


def _at(self):
    from ..numpy import indexing
    return indexing.IndexUpdateHelper(self)


Tracer.at = property(_at, doc="``x.at[idx].set(v)`` and friends: functional updates (see dynjax.numpy.at)")


def _nonzero_method(self, *, size=None, fill_value=None):
    from ..numpy import selection
    return selection.nonzero(self, size=size, fill_value=fill_value)


Tracer.nonzero = _nonzero_method


_avals.not_foreign_types.append(Tracer)   # a tracer's __array__ is its concretization error


def is_concrete(x) -> bool:
    return not isinstance(x, Tracer)


def is_array_value(x) -> bool:
    """Whether ``x`` is a value dynjax computes with (a tracer, an array or a scalar), as
    opposed to a Python object passed along unchanged (a string, None, a dtype)."""
    if isinstance(x, Tracer):
        return True
    try:
        _avals.aval_of_value(x)
    except TypeError:
        return False
    return True


def typeof(x):
    """The abstract value of a tracer or concrete value."""
    if isinstance(x, Tracer):
        return x.aval
    return _avals.aval_of_value(x)


def leaf_avals(leaves, message) -> list:
    """The abstract value of each of ``leaves``; for the first one that is not an array or a
    scalar, ``TypeError(message(k, leaf))``: an API names its argument in ``message``."""
    out = []
    for k, x in enumerate(leaves):
        try:
            out.append(typeof(x))
        except TypeError:
            raise TypeError(message(k, x)) from None
    return out
