"""The derivative and batching rules of ``custom_linear_solve`` (``control_flow/linear_solve.py``).

* **jvp**: ``x = solve(matvec, b)``; ``x' = solve(matvec, b' - matvec'(x))``, a second
  equation of the same primitive applied to the tangent right-hand side. ``matvec'(x)`` is
  the forward derivative of the matvec program with respect to its constants (the values
  it closes over) at ``x``; the constants of ``solve`` / ``transpose_solve`` are not
  differentiated (a solver's iterations never are).
* **transpose**: linear in the vector only. The cotangent of ``b`` for the cotangent of
  ``x`` is the same primitive with the roles swapped: ``(vecmat, matvec, tsolve, solve)``,
  i.e. ``transpose_solve(vecmat, ct)``; it is again differentiable and transposable.
  Without ``transpose_solve`` (and not ``symmetric``) this is JAX's ``TypeError``.
* **vmap**: every nested program evaluated under ``vmap`` (the vector and the results are
  batched, batch axis first; constants keep their own batching), so the batched equation
  is again a ``custom_linear_solve`` and differentiating it later still solves.
"""
from __future__ import annotations

from ..control_flow.linear_solve import (bind_linear_solve, custom_linear_solve_p,
                                        register_with_the_planner_and_cost_model, split_operands)
from ..core.expansion import trace_nested
from ..core.interpret import eval_jaxpr
from ..core.primitive import jvp_rules, transpose_rules
from ..core.trace import typeof
from ..lax import primitives as P
from .batching import _eval_batched, _front_all, batching_rules
from .custom_batching import dims_of_args
from .jvp import Zero, instantiate, jvp_flat
from .transpose import is_undefined, zeros

_MATVEC, _VECMAT, _SOLVE, _TSOLVE, _VECTOR = range(5)


def _jvp(primals, tangents, *, const_lengths, jaxprs, num_aux):
    outs = custom_linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs, num_aux=num_aux)
    blocks, t_blocks = split_operands(primals, const_lengths), split_operands(tangents, const_lengths)
    b, b_dot = blocks[_VECTOR], t_blocks[_VECTOR]
    nb = len(b)
    x = list(outs[:nb])
    aux_zero = [Zero(typeof(a)) for a in outs[nb:]]
    rhs = list(b_dot)
    mv_dot = t_blocks[_MATVEC]
    if any(not isinstance(t, Zero) for t in mv_dot):
        mv = jaxprs[_MATVEC]
        _, dmv = jvp_flat(lambda *a: eval_jaxpr(mv, [], *a), blocks[_MATVEC] + x,
                          list(mv_dot) + [Zero(typeof(v)) for v in x])
        rhs = [r if isinstance(d, Zero) else
               (P.neg_p.bind(d) if isinstance(r, Zero) else P.sub_p.bind(r, d)) for r, d in zip(rhs, dmv)]
    if all(isinstance(r, Zero) for r in rhs):
        return list(outs), [Zero(typeof(v)) for v in x] + aux_zero
    rhs = [instantiate(r) for r in rhs]
    consts = [c for blk in blocks[:_VECTOR] for c in blk]
    t_outs = custom_linear_solve_p.bind(*consts, *rhs, const_lengths=const_lengths, jaxprs=jaxprs, num_aux=num_aux)
    return list(outs), list(t_outs[:nb]) + aux_zero


def _transpose(cts, *operands, const_lengths, jaxprs, num_aux):
    blocks = split_operands(operands, const_lengths)
    if any(is_undefined(c) for blk in blocks[:_VECTOR] for c in blk):
        raise NotImplementedError("custom_linear_solve: transposing with respect to the values matvec or "
                                  "solve close over is not supported; it is linear in b only")
    b = blocks[_VECTOR]
    nb = len(b)
    nconsts = len(operands) - nb
    if all(c is None for c in cts[:nb]):
        return [None] * len(operands)
    if jaxprs[_TSOLVE] is None:
        raise TypeError("transpose_solve required for backward mode automatic differentiation of "
                        "custom_linear_solve")
    ct_x = [zeros(v.aval) if c is None else c for c, v in zip(cts[:nb], b)]
    mv, vm, s, ts = jaxprs
    ct_b = bind_linear_solve((vm, mv, ts, s), (blocks[_VECMAT], blocks[_MATVEC], blocks[_TSOLVE], blocks[_SOLVE]),
                             ct_x, len(ts.outvars) - nb)
    return [None] * nconsts + list(ct_b[:nb])


def _batch(size, vals, dims, *, const_lengths, jaxprs, num_aux):
    nb = len(vals) - sum(const_lengths)
    flags = [d is not None for d in dims]
    flags[len(vals) - nb:] = [True] * nb          # the vector (so the results) is batched
    vals = _front_all(vals, dims, size, flags)
    blocks, f_blocks = split_operands(vals, const_lengths), split_operands(flags, const_lengths)
    funs, consts = [], []
    for k, jx in enumerate(jaxprs):
        if jx is None:
            funs.append(None)
            consts.append([])
            continue
        ins = blocks[k] + blocks[_VECTOR]
        in_flags = f_blocks[k] + [True] * nb

        def batched(*xs, jx=jx, in_flags=in_flags):
            return _eval_batched(jx, size, dims_of_args(jx, xs, in_flags), in_flags, [True] * len(jx.outvars))
        prog = trace_nested(batched, tuple((typeof(v), True) for v in ins), lambda r: (list(r), None),
                            expand=False)
        funs.append(prog.jaxpr)
        consts.append(list(prog.consts) + blocks[k])   # the vector stays the programs' last inputs
    outs = bind_linear_solve(funs, consts, blocks[_VECTOR], num_aux)
    return list(outs), [0] * len(outs)


jvp_rules[custom_linear_solve_p] = _jvp
transpose_rules[custom_linear_solve_p] = _transpose
batching_rules[custom_linear_solve_p] = _batch
register_with_the_planner_and_cost_model()
