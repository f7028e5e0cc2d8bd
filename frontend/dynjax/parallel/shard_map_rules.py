"""The ``shard_map`` primitive and its rules.

``shard_map[jaxpr body body_inputs in_specs out_specs mesh mapped]`` (bound by
``parallel.shard_map.bind_shard_map``): ``jaxpr`` takes the equation's operands in order and
computes the whole results (the vmap interpretation); ``body`` is the per-device program,
taking the operands at positions ``body_inputs``, each cut in blocks as its
``in_specs`` entry says (a PartitionSpec over ``mesh``), its results put together as
``out_specs`` say. ``mapped`` are the mesh axes the body maps over.

* evaluating, typing, padding with dynamic sizes, costing: ``jaxpr``, as a call;
* lowering: the per-device ``body`` in a manual-sharding region when the program is
  partitioned over the mesh's devices, else ``jaxpr`` inlined (``lowering/shard_map.py``);
* ``jvp``: a ``shard_map`` of the jvp of the body (tangents split as their primals), so a
  forward derivative stays a per-device program;
* linearizing (partial evaluation) and transposing: per-device ``shard_map`` s of the body's
  known and linear parts and of its transpose (``parallel/shard_map_ad.py``), or, for a
  body that cannot be split that way, ``jaxpr`` inlined;
* batching: ``jaxpr``, inlined: the whole-array program's rules give the same values (its
  collectives were already turned into operations over the mapped axes).
"""
from __future__ import annotations

import numpy as np

from ..core.avals import is_inexact_dtype, make_aval
from ..core.expansion import shape_from_operands
from ..core.interpret import eval_jaxpr
from ..core.staging import source_note
from ..core.primitive import (Primitive, abstract_eval_rules, impl_rules, jvp_rules, partial_eval_rules,
                              transpose_rules)
from ..core.trace import typeof
from ..lowering.core import register_lowering
from ..lowering.shard_map import lower_shard_map
from ..transforms.batching import batching_rules, vmap_flat
from ..transforms.jvp import Zero, instantiate, jvp_flat
from ..transforms.partial_eval import _Split, dependence, dependence_rules
from ..transforms.transpose import backward_pass

shard_map_p = Primitive("shard_map", multiple_results=True)


def _impl(*operands, jaxpr, **params):
    return [np.asarray(x) for x in eval_jaxpr(jaxpr, [], *operands)]


def _abstract(*operands, jaxpr, **params):
    if len(jaxpr.invars) != len(operands):
        raise TypeError(f"shard_map: the program takes {len(jaxpr.invars)} inputs, got {len(operands)}")
    pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
    outs = []
    for k, v in enumerate(jaxpr.outvars):
        shape = shape_from_operands(v.aval, pos, operands, lambda: TypeError(
            f"shard_map: result {k} has a size computed inside the mapped function"))
        outs.append(make_aval(shape, v.aval.dtype, v.aval.weak_type))
    return outs


impl_rules[shard_map_p] = _impl
abstract_eval_rules[shard_map_p] = _abstract
register_lowering(shard_map_p, lower_shard_map)


def _jvp(primals, tangents, *, jaxpr, body, body_inputs, in_specs, out_specs, mesh, mapped):
    """A shard_map of the body's jvp: the nonzero tangents enter split as their primals,
    the outputs' tangents leave as the outputs do."""
    from .shard_map import bind_shard_map
    ins = [primals[i] for i in body_inputs]
    nz = [not isinstance(tangents[i], Zero) and is_inexact_dtype(typeof(primals[i]).dtype) for i in body_inputs]
    live = [tangents[i] for i, f in zip(body_inputs, nz) if f]
    n = len(ins)
    out_inexact = [is_inexact_dtype(v.aval.dtype) for v in body.outvars]

    def jvp_body(*xs):
        ps, ts = list(xs[:n]), iter(xs[n:])
        full = [next(ts) if f else Zero(typeof(p)) for p, f in zip(ps, nz)]
        p_out, t_out = jvp_flat(lambda *a: eval_jaxpr(body, [], *a), ps, full)
        return list(p_out) + [instantiate(t) for t, f in zip(t_out, out_inexact) if f]

    specs = list(in_specs) + [s for s, f in zip(in_specs, nz) if f]
    t_specs = [s for s, f in zip(out_specs, out_inexact) if f]
    outs = bind_shard_map(jvp_body, ins + live, specs, mesh, mapped, lambda _: list(out_specs) + t_specs)
    nout = len(out_specs)
    p_out, t_iter = outs[:nout], iter(outs[nout:])
    return p_out, [next(t_iter) if f else Zero(typeof(p).strip_weak_type()) for p, f in zip(p_out, out_inexact)]


jvp_rules[shard_map_p] = _jvp
dependence_rules[shard_map_p] = lambda eqn, flags: dependence(eqn.params["jaxpr"], flags)


def _partial_eval(eqn, known, flags):
    """Linearizing: two per-device shard_maps (``parallel/shard_map_ad.py``), or else the
    whole-array program split into its known and unknown parts."""
    from .shard_map_ad import NotSplit, split_linearize
    try:
        return split_linearize(eqn, known, flags)
    except NotSplit:
        pass
    from .shard_map import WHOLE_ARRAY_NOTE
    with source_note(WHOLE_ARRAY_NOTE):
        split = _Split(eqn.params["jaxpr"], known, flags)
        known_outs = split.known_outputs()

    def stage(vals):
        with source_note(WHOLE_ARRAY_NOTE):
            return split.stage([x for x, f in zip(vals, flags) if f])
    return known_outs, stage


partial_eval_rules[shard_map_p] = _partial_eval


def _transpose(cts, *operands, jaxpr, **params):
    """A shard_map of the body's transpose (``parallel/shard_map_ad.py``), or else the
    whole-array program's."""
    from .shard_map_ad import NotSplit, split_transpose
    try:
        return split_transpose(list(cts), list(operands), params)
    except NotSplit:
        from .shard_map import WHOLE_ARRAY_NOTE
        with source_note(WHOLE_ARRAY_NOTE):
            return backward_pass(jaxpr, list(operands), list(cts))


transpose_rules[shard_map_p] = _transpose


def _batch(size, vals, dims, *, jaxpr, **params):
    from .shard_map import WHOLE_ARRAY_NOTE
    with source_note(WHOLE_ARRAY_NOTE):
        outs, out_dims, _ = vmap_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), size, list(vals), list(dims))
    return outs, out_dims


batching_rules[shard_map_p] = _batch


def _register_with_execution():
    """The planner sees ``jaxpr`` as a call (its inputs are the operands; the body's are the
    leading ones it takes); padding keeps the equation when every shape is static (its
    per-device body is then lowered as it is) and pads the body per device otherwise
    (``execution/padding_shard_map.py``);
    the cost is the whole-array program's."""
    from ..cost_model import _WHOLE, cost_rules, jaxpr_cost
    from ..execution import analysis
    from ..execution.padding import bound_hint_rules, padding_rules
    from ..execution.padding_shard_map import length_hints, pad_shard_map

    def fixed_inputs(eqn):
        p = eqn.params
        return [[(k, k) for k in range(len(eqn.invars))], [(j, i) for j, i in enumerate(p["body_inputs"])]]
    analysis.fixed_input_rules[shard_map_p] = fixed_inputs

    padding_rules[shard_map_p] = pad_shard_map
    bound_hint_rules[shard_map_p] = length_hints
    cost_rules[shard_map_p] = lambda eqn, sz: jaxpr_cost(eqn.params["jaxpr"], sz)
    _WHOLE.add(shard_map_p)


_register_with_execution()


__all__ = ["shard_map_p"]
