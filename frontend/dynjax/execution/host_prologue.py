"""Integer arithmetic on sizes, done on the host before a padded program runs.

A padded program takes its sizes as run-time integer scalars (``padding.pad_jaxpr``), so the
arithmetic on them (``m = 9 * n // 10 + 1``, ``n - min(n, 1)``, the bounds of its loops) is
left in the module. XLA's CPU backend compiles each such scalar operation it does not fuse
into a kernel of its own, with LLVM: a loop program whose prologue was four scalar kernels
compiled in twice the time of the same loop with the sizes already computed. The host knows
the sizes, so those equations run there instead (with the primitives' own numpy
implementations, which agree with the lowering bit for bit) and their results become
inputs of the program. A run computes them once per distinct tuple of sizes.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ..lax import primitives as P
from .lru import BoundedCache

#: the scalar integer primitives the host evaluates (cheap, and exact in numpy)
HOSTED = {P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p, P.max_p, P.min_p, P.neg_p, P.abs_p,
          P.sign_p, P.and_p, P.or_p, P.xor_p, P.not_p, P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p,
          P.ge_p, P.select_n_p, P.convert_element_type_p, P.shift_left_p, P.shift_right_p,
          P.integer_pow_p}

#: how many tuples of sizes a program remembers the host values of
REMEMBERED = 64


def _integral_scalar(v) -> bool:
    return v.aval.shape == () and np.dtype(v.aval.dtype).kind in "iub"


class HostPrologue:
    """The equations of a program moved to the host: ``values(scalars)`` returns the extra
    inputs of the program for the values of its integer scalar inputs (in their order)."""

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.memo = BoundedCache(REMEMBERED)

    def values(self, scalars: Tuple[int, ...]) -> List[np.ndarray]:
        found = self.memo.get(scalars)
        if found is None:
            args = [np.asarray(x, v.aval.dtype) for x, v in zip(scalars, self.jaxpr.invars)]
            found = [np.asarray(x) for x in eval_jaxpr(self.jaxpr, self.consts, *args)]
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
