"""Jvp and transpose rules of the collectives (``dynjax.lax.collectives``), as JAX's.

``psum``, ``all_gather``, ``psum_scatter``, ``all_to_all`` and ``ppermute`` are linear: the
tangent goes through the same collective, and the cotangent through its transpose (``psum``
through ``psum``: every member's cotangent reaches every member's input; ``all_gather``
through ``psum_scatter`` and back; ``all_to_all`` through the one that swaps its split and
concat axes; ``ppermute`` through the inverse permutation). ``pmax`` and ``pmin`` have no
derivative in JAX, nor here. Every collective is applied through
``lax.collectives.bind_one``, which finds the trace that binds the axis name.
"""
from __future__ import annotations

from ...core.primitive import jvp_rules, transpose_rules
from ...lax import api as lax
from ...lax.collectives import (all_gather_p, all_to_all_p, axis_index_p, bind_one, pmax_p, pmin_p,
                                ppermute_p, psum_p, psum_scatter_p)
from . import Zero, _zero_tangents


def _linear(prim):
    def rule(primals, tangents, *, axis_name, axis_size, **params):
        (x,), (t,) = primals, tangents
        out = bind_one(prim, x, axis_name, **params)
        if isinstance(t, Zero):
            from ...core.trace import typeof
            return out, Zero(typeof(out))
        return out, bind_one(prim, t, axis_name, **params)
    return rule


for _p in (psum_p, all_gather_p, psum_scatter_p, all_to_all_p, ppermute_p):
    jvp_rules[_p] = _linear(_p)


def _no_derivative(prim):
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
    return rule


jvp_rules[axis_index_p] = _zero_tangents(axis_index_p)
jvp_rules[pmax_p] = _no_derivative(pmax_p)
jvp_rules[pmin_p] = _no_derivative(pmin_p)


def _psum_t(ct, x, *, axis_name, axis_size):
    return [None if ct is None else bind_one(psum_p, ct, axis_name)]


def _all_gather_t(ct, x, *, axis_name, axis_size, axis, tiled):
    if ct is None:
        return [None]
    out = bind_one(psum_scatter_p, ct, axis_name, scatter_dimension=axis, tiled=True)
    return [out if tiled else lax.squeeze(out, (axis,))]


def _psum_scatter_t(ct, x, *, axis_name, axis_size, scatter_dimension, tiled):
    if ct is None:
        return [None]
    return [bind_one(all_gather_p, ct, axis_name, axis=scatter_dimension, tiled=tiled)]


def _all_to_all_t(ct, x, *, axis_name, axis_size, split_axis, concat_axis, tiled):
    if ct is None:
        return [None]
    return [bind_one(all_to_all_p, ct, axis_name, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled)]


def _ppermute_t(ct, x, *, axis_name, axis_size, perm):
    if ct is None:
        return [None]
    return [bind_one(ppermute_p, ct, axis_name, perm=tuple((d, s) for s, d in perm))]


transpose_rules[psum_p] = _psum_t
transpose_rules[all_gather_p] = _all_gather_t
transpose_rules[psum_scatter_p] = _psum_scatter_t
transpose_rules[all_to_all_p] = _all_to_all_t
transpose_rules[ppermute_p] = _ppermute_t
