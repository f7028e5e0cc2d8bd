"""Running a trace's program on the arguments of a call: the one execution path that
``qjit`` functions and exported programs (``dynjax.export``) share -- the implicit dims
computed (shared sizes checked), the leaves coerced to the traced dtypes, the program run,
the results rebuilt -- and the dispatch table's plan for programs of several executables.
"""
from __future__ import annotations

import numpy as np

from ..core import pytree
from ..core.avals import is_inexact_dtype, is_integer_dtype
from ..tracing import TracedFunction, implicit_values


class ProgramCall:
    """The dispatch table's plan for a trace that is more than one executable (segments, host
    steps, or one capacity program): its arguments' shapes fix the implicit dims, so a call
    only converts scalars to the traced dtypes and runs the program."""
    __slots__ = ("program", "dims", "dtypes", "steady")

    def __init__(self, program, dims, dtypes):
        self.program = program
        self.dims = list(dims)
        self.dtypes = dtypes
        # a capacity program's direct run of repeated inputs: tried first, it is the whole call
        self.steady = program.capacity.run_steady if program.capacity is not None else None

    def call_exact(self, args):
        steady = self.steady
        if steady is not None:
            # the arguments as they are: the run converts what its executable does not take
            outs = steady(self.dims + list(args) if self.dims else args)
            if outs is not None:
                return outs
        dtypes = self.dtypes
        args = self.dims + [x if type(x) is np.ndarray else np.asarray(x, dtypes[i]) for i, x in enumerate(args)]
        return self.program.run(args)


def describe_input_fn(traced: TracedFunction):
    """``describe(i)``: how error messages name the i-th expanded input of a trace (an
    abstracted axis by its name and where it occurs, else the argument leaf)."""
    sig = traced.signature
    nimp = len(sig.dim_names)

    def describe(i):
        if i < nimp:
            name = sig.dim_names[i]
            label = name if isinstance(name, str) and not name.startswith("__aot") else "dynamic axis"
            li, ax = sig.dim_sources[i][0]
            return f"the size of {label} (axis {ax} of {sig.leaf_where[li]})"
        return sig.leaf_where[i - nimp]
    return describe


def entry_arguments(entry, leaves):
    """The program's arguments for the flat argument leaves of a trace: the implicit dims
    (the shared sizes checked: a ValueError naming the arguments), then the leaves coerced to
    the traced dtypes."""
    sig = entry.traced.signature
    leaves = [coerce_leaf(x, dt, sig.leaf_where[i]) for i, (x, dt) in enumerate(zip(leaves, entry.dtypes))]
    dims = implicit_values(sig, leaves) if sig.dim_names else []
    return dims, leaves


def run_entry(entry, leaves):
    """Run a trace on the flat argument leaves (the one execution path of ``qjit`` and of
    exported programs); returns the result and, when the trace is one executable, that
    executable (for the fast path)."""
    dims, leaves = entry_arguments(entry, leaves)
    program, args = entry.program, dims + leaves
    if program.single is not None:
        outs, exe = program.single.call(args)
    else:
        outs = program.run(args)
        exe = ProgramCall(program, dims, entry.dtypes)
    explicit = [outs[i] for i in entry.explicit]
    return pytree.tree_unflatten(entry.traced.out_tree, explicit), exe


def coerce_leaf(x, dtype, where: str):
    """An argument leaf as a numpy value of its traced ``dtype``: a TypeError naming it
    (``where``) when the cast is not safe, a ValueError when an integer does not fit."""
    t = type(x)
    if t is np.ndarray:
        if x.dtype == dtype:
            return x
        if not np.can_cast(x.dtype, dtype, "same_kind") and not (
                is_integer_dtype(x.dtype) and is_inexact_dtype(dtype)):
            raise TypeError(f"{where} has dtype {x.dtype}, which cannot be cast safely to {dtype}")
        return x.astype(dtype)
    if t in (int, float, bool) or isinstance(x, np.generic):
        if (t is int or isinstance(x, np.integer)) and dtype.kind in "iu":
            _check_int_range(x, dtype, where)
        return np.asarray(x, dtype=dtype)
    if isinstance(x, (list, tuple)):
        return np.asarray(x, dtype=dtype)
    if hasattr(x, "__array__"):
        return np.asarray(x, dtype=dtype)
    raise TypeError(f"{where} is a {type(x).__name__}, not an array or scalar")


class IntegerArgumentOverflow(OverflowError, ValueError):
    """An integer argument that does not fit its traced dtype: an OverflowError, as ``jax.jit``
    raises for it, and a ValueError (a bad argument value)."""


def _check_int_range(x, dtype, where):
    """An integer argument that does not fit its traced dtype (``np.uint64(2**64 - 1)`` for an
    ``i64`` size) is an error, not a silent wrap-around to a negative size."""
    v, info = int(x), np.iinfo(dtype)
    if not info.min <= v <= info.max:
        raise IntegerArgumentOverflow(f"{where} is {v}, too large for {np.dtype(dtype).name} (integer arguments "
                         f"and sizes must lie in [{info.min}, {info.max}])" if v > info.max else
                         f"{where} is {v}, below the smallest {np.dtype(dtype).name} ({info.min})")
