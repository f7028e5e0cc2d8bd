"""Integer arithmetic on sizes, done on the host before and after a padded program runs.

A padded program takes its sizes as run-time integer scalars (``padding.pad_jaxpr``), so the
arithmetic on them (``m = 9 * n // 10 + 1``, ``n - min(n, 1)``, the bounds of its loops) is
left in the module. XLA's CPU backend compiles each such scalar operation it does not fuse
into a kernel of its own, with LLVM: a loop program whose prologue was four scalar kernels
compiled in twice the time of the same loop with the sizes already computed. The host knows
the sizes, so those equations run there instead (in Python ints where that is exact, else
with the primitives' own numpy implementations, which agree with the lowering bit for bit:
``int_folds.ScalarProgram``) and their results become inputs of the program. A run
computes them once per distinct tuple of sizes.

The same holds after the program: the sizes and loop reports a padded program returns (its
*meta* values: the logical lengths of its outputs, whether a resizing loop stopped for want of
room and the sizes it needed) are mostly integer arithmetic on a loop's final counters and the
inputs (``i < m``, ``i + min(i, 1)``). The device returns the scalars that arithmetic starts
from (``hoist_epilogue``) and the host finishes it, once per distinct tuple of those scalars:
a loop program whose packed reports were five small kernels compiled in 1.3-1.6x the time of the
same loop returning its counter.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal
from ..lax import primitives as P
from .int_folds import ScalarProgram
from .lru import BoundedCache

#: the scalar integer primitives the host evaluates (cheap, and exact in numpy)
HOSTED = {P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p, P.max_p, P.min_p, P.neg_p, P.abs_p,
          P.sign_p, P.and_p, P.or_p, P.xor_p, P.not_p, P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p,
          P.ge_p, P.select_n_p, P.convert_element_type_p, P.shift_left_p, P.shift_right_p,
          P.integer_pow_p}

#: how many tuples of sizes a program remembers the host values of
REMEMBERED = 64

#: the epilogue's device scalars come back as outputs of their own up to this many; more are
#: packed in one i64 vector. Each output of a run costs the host about 2.3 µs a call, a scalar
#: as much as a vector (bench.py's row 13: 13.6 µs with two scalars besides the array, 11.5 µs
#: with them packed, 8.9 µs with the array alone); the packing is a kernel for XLA to compile
#: once.
SEPARATE_SCALARS = 1


def _integral_scalar(v) -> bool:
    return v.aval.shape == () and np.dtype(v.aval.dtype).kind in "iub"


class HostPrologue:
    """The equations of a program moved to the host: ``values(scalars)`` returns the extra
    inputs of the program for the values of its integer scalar inputs (in their order)."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.memo = BoundedCache(REMEMBERED)
        self.program = ScalarProgram(jaxpr)   # (in Python ints: 0.2-0.5 us an equation)
        self.dtypes = [np.dtype(v.aval.dtype) for v in jaxpr.outvars]

    def values(self, scalars: Tuple[int, ...]) -> List[np.ndarray]:
        found = self.memo.get(scalars)
        if found is None:
            found = [np.asarray(x, dt) for x, dt in zip(self.program(self.consts, scalars), self.dtypes)]
            self.memo.put(scalars, found)
        return found


def hoist_prologue(closed: ClosedJaxpr) -> Tuple[ClosedJaxpr, Optional[HostPrologue], List[int]]:
    """Split ``closed`` (a static padded program) into the scalar integer equations the host
    computes from its integer scalar inputs, and the rest. Returns the program taking those
    results as extra trailing inputs, the prologue (None when there is nothing to move) and
    the positions of the integer scalar inputs the prologue reads."""
    jaxpr = closed.jaxpr
    scalar_at = [i for i, v in enumerate(jaxpr.invars) if _integral_scalar(v)]
    on_host = {id(jaxpr.invars[i]) for i in scalar_at}
    for v, c in zip(jaxpr.constvars, closed.consts):
        if _integral_scalar(v):
            on_host.add(id(v))
    hosted, kept = [], []
    for eqn in jaxpr.eqns:
        if (eqn.primitive in HOSTED and all(_integral_scalar(v) for v in eqn.outvars)
                and all(isinstance(a, Literal) or id(a) in on_host for a in eqn.invars)):
            hosted.append(eqn)
            on_host.update(id(v) for v in eqn.outvars)
        else:
            kept.append(eqn)
    if not hosted:
        return closed, None, []
    produced = {id(v): v for e in hosted for v in e.outvars}
    wanted: Dict[int, Any] = {}
    for e in kept:
        for a in e.invars:
            if id(a) in produced:
                wanted.setdefault(id(a), a)
    for a in jaxpr.outvars:
        if id(a) in produced:
            wanted.setdefault(id(a), a)
    extra = list(wanted.values())
    device = Jaxpr(jaxpr.constvars, jaxpr.invars + extra, kept, jaxpr.outvars)
    host = Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in scalar_at], hosted, extra)
    return ClosedJaxpr(device, closed.consts), HostPrologue(host, closed.consts), scalar_at


class HostEpilogue:
    """The meta values of a padded program finished on the host: ``values(inputs, outs)``
    returns them (Python ints, in order) from the run's inputs and outputs."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], input_at: Sequence[int], first_out: int,
                 packed: bool):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.input_at = tuple(input_at)   # the run's inputs the host equations read
        self.first_out = first_out        # the run's outputs from here on are the scalars they read
        self.packed = packed              # ... or one i64 vector of them
        self.memo = BoundedCache(REMEMBERED)
        self._memo_hit = self.memo.peek   # a lookup without the recency update (every run)
        self.program = ScalarProgram(jaxpr)

    def values(self, inputs: Sequence[Any], outs: Sequence[Any]) -> List[int]:
        device = outs[self.first_out].tolist() if self.packed else [int(o) for o in outs[self.first_out:]]
        key = (*[int(inputs[i]) for i in self.input_at], *device)
        found = self._memo_hit(key)
        if found is None:
            found = self.program(self.consts, key)
            self.memo.put(key, found)
        return found


def hoist_epilogue(closed: ClosedJaxpr, n_data: int) -> Tuple[ClosedJaxpr, HostEpilogue]:
    """Split ``closed``, whose outputs from ``n_data`` on are its meta values (integer
    scalars), into the device program and the scalar integer equations the host evaluates
    after it: those whose results reach only meta values, from integer scalars only. The device
    program returns its ``n_data`` data outputs, then the scalars the host equations read that
    only the device has (each once); the epilogue reads the others from the run's inputs."""
    jaxpr = closed.jaxpr
    on_device = {id(v) for v in jaxpr.outvars[:n_data] if not isinstance(v, Literal)}
    moved, kept = [], []
    for eqn in reversed(jaxpr.eqns):
        if (eqn.primitive in HOSTED and all(_integral_scalar(v) for v in eqn.outvars)
                and all(isinstance(a, Literal) or _integral_scalar(a) for a in eqn.invars)
                and not any(id(v) in on_device for v in eqn.outvars)):
            moved.append(eqn)
        else:
            kept.append(eqn)
            on_device.update(id(a) for a in eqn.invars if not isinstance(a, Literal))
    moved.reverse()
    kept.reverse()
    host_known = {id(v) for v in jaxpr.constvars}
    input_at = {id(v): i for i, v in enumerate(jaxpr.invars)}
    made_on_host = {id(v) for e in moved for v in e.outvars}
    reads: Dict[int, Any] = {}
    for a in [a for e in moved for a in e.invars] + list(jaxpr.outvars[n_data:]):
        if not isinstance(a, Literal) and id(a) not in made_on_host and id(a) not in host_known:
            reads.setdefault(id(a), a)
    from_inputs = [v for v in reads.values() if id(v) in input_at]
    from_device = [v for v in reads.values() if id(v) not in input_at]
    returned = from_device
    packed = len(from_device) > SEPARATE_SCALARS and all(
        np.dtype(v.aval.dtype).kind in "ib" for v in from_device)   # i64 holds each exactly
    if packed:
        packing, returned = _packing(from_device)
        kept = kept + packing
    device = Jaxpr(jaxpr.constvars, jaxpr.invars, kept, list(jaxpr.outvars[:n_data]) + returned)
    host = Jaxpr(jaxpr.constvars, from_inputs + from_device, moved, list(jaxpr.outvars[n_data:]))
    epilogue = HostEpilogue(host, closed.consts, [input_at[id(v)] for v in from_inputs], n_data, packed)
    return ClosedJaxpr(device, closed.consts), epilogue


def _packing(scalars: Sequence[Any]):
    """The equations packing ``scalars`` (integer or bool) into one i64 vector, on the
    variables themselves, and that vector's variable (as a list)."""
    from .. import lax
    from ..core.avals import ShapedArray
    from ..tracing import trace_flat

    def pack(*xs):
        return [lax.concatenate([lax.broadcast_in_dim(lax.convert_element_type(x, np.int64), (1,), ())
                                 for x in xs], 0)], None
    closed, _ = trace_flat(pack, [(ShapedArray((), v.aval.dtype), True) for v in scalars])
    packer = closed.jaxpr
    assert not packer.constvars, packer
    rename = {id(p): v for p, v in zip(packer.invars, scalars)}
    eqns = [JaxprEqn(e.primitive, [rename.get(id(a), a) for a in e.invars], e.outvars, e.params,
                     e.source_info) for e in packer.eqns]
    return eqns, [rename.get(id(v), v) for v in packer.outvars]
