"""Host-side checks of sizes before a program is compiled.

Once the baked integers of a segment are known, every foldable size can be computed on
the host with the numpy impl rules. ``check_sizes`` does that and rejects what XLA would
fail on obscurely (or hang on): negative sizes, zero ``for_loop`` steps, reshapes whose
element counts differ and slices larger than their axis. Errors name the argument or the
user's line.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..core.jaxpr import Jaxpr, Literal
from ..core.primitive import impl_rules
from .analysis import _FOLDABLE, dims_of, fixed_inputs, is_scalar, nested_jaxprs
from .analysis import is_int_scalar as _is_int_scalar


class SizeError(ValueError):
    pass


def check_sizes(jaxpr: Jaxpr, known: Dict[int, int], describe_input, input_pos: Dict[int, int]):
    """Evaluate the foldable integer scalars on the host and reject negative sizes and zero
    for_loop steps before anything is compiled (XLA would fail obscurely, or hang)."""
    from ..control_flow.primitives import for_loop_p

    def where(var, eqn=None):
        if id(var) in input_pos:
            return describe_input(input_pos[id(var)])
        if eqn is not None and eqn.source_info:
            f, line = eqn.source_info
            return f"the size computed at {f}:{line}"
        return "a size"

    def walk(jx, env):
        def value(a):
            if isinstance(a, Literal):   # only integers are sizes (a float literal may be NaN)
                kind = np.asarray(a.val).dtype.kind
                return int(a.val) if kind in "biu" else None
            return env.get(id(a))
        producer = {}
        for v in jx.invars:
            for d in dims_of(v.aval):
                if (env.get(id(d)) or 0) < 0:
                    raise SizeError(f"{where(d)} is used as a size but is negative ({env[id(d)]})")
        for eqn in jx.eqns:
            if eqn.primitive in _FOLDABLE and all(is_scalar(o) for o in eqn.outvars):
                vals = [value(a) for a in eqn.invars]
                if all(x is not None for x in vals):
                    out = np.asarray(impl_rules[eqn.primitive](*[np.asarray(x) for x in vals], **eqn.params))
                    if np.issubdtype(out.dtype, np.integer):
                        env[id(eqn.outvars[0])] = int(out)
                        producer[id(eqn.outvars[0])] = eqn
            for o in eqn.outvars:
                for d in dims_of(o.aval):
                    val = env.get(id(d))
                    if val is not None and val < 0:
                        raise SizeError(f"{where(d, producer.get(id(d), eqn))} is used as a size but is "
                                        f"negative ({val})")
            _check_shapes(eqn, lambda d: d if isinstance(d, int) else env.get(id(d)), top=jx is jaxpr)
            if eqn.primitive is for_loop_p and value(eqn.invars[eqn.params["body_nconsts"] + 2]) == 0:
                loc = f" (at {eqn.source_info[0]}:{eqn.source_info[1]})" if eqn.source_info else ""
                raise ValueError(f"for_loop: step must not be zero, the loop would never end{loc}")
            for sub, pairs in zip(nested_jaxprs(eqn), fixed_inputs(eqn)):
                inner = {}
                for k, j in pairs:
                    x = value(eqn.invars[j])
                    if x is not None and _is_int_scalar(sub.invars[k]):
                        inner[id(sub.invars[k])] = x
                walk(sub, inner)

    walk(jaxpr, dict(known))


def _at(eqn) -> str:
    return f" (at {eqn.source_info[0]}:{eqn.source_info[1]})" if eqn.source_info else ""


def _check_shapes(eqn, size, top: bool) -> None:
    """Shape facts only known at run time: a reshape whose element counts differ, and (in
    code that certainly runs, the top level) a slice larger than its axis. A ``ValueError``
    naming the shapes and the user's line, instead of XLA's verifier failing later."""
    from ..lax.primitives import dynamic_slice_p, reshape_p
    if eqn.primitive is reshape_p:
        src = [size(d) for d in eqn.invars[0].aval.shape]
        dst = [size(d) for d in eqn.outvars[0].aval.shape]
        if None not in src and None not in dst and int(np.prod(src)) != int(np.prod(dst)):
            raise ValueError(f"cannot reshape an array of shape {tuple(src)} ({int(np.prod(src))} elements) "
                             f"into shape {tuple(dst)} ({int(np.prod(dst))} elements){_at(eqn)}")
    elif eqn.primitive is dynamic_slice_p and top:
        src = [size(d) for d in eqn.invars[0].aval.shape]
        dst = [size(d) for d in eqn.outvars[0].aval.shape]
        for ax, (n, k) in enumerate(zip(src, dst)):
            if n is not None and k is not None and k > n:
                what = "an index into" if k == 1 else f"a slice of {k} elements of"
                raise ValueError(f"{what} axis {ax} of an array of shape {tuple(src)}, which has only "
                                 f"{n} elements{_at(eqn)}")
