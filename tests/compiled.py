"""The fourth way of running a test program: compiled with ``qjit`` (registered in conftest).

With abstracted axes the function must trace (and lower) once for all sizes whose
non-abstracted structure is the same; XLA compiles per concrete signature.
"""
import dynjax
import numpy as np


def run_compiled(f, arg_sets, abstracted_axes, static_argnums):
    g = dynjax.qjit(f, static_argnums=static_argnums or None, abstracted_axes=abstracted_axes)
    results = []
    for args in arg_sets:
        outs, _ = dynjax.tree_flatten(g(*args))
        for o in outs:
            assert isinstance(o, np.ndarray), f"compiled result is a {type(o).__name__}"
        results.append(outs)
    if abstracted_axes is not None:
        kinds = {tuple((np.asarray(a).dtype, np.ndim(a)) for a in dynjax.tree_flatten(list(args))[0])
                 for args in arg_sets}
        if len(kinds) == 1 and not static_argnums:
            info = g.cache_info()
            assert info["traces"] <= 1 + _static_shape_variants(arg_sets, abstracted_axes), info
    return results


def _static_shape_variants(arg_sets, abstracted_axes):
    """How many distinct shapes the non-abstracted axes take (each one is a new trace)."""
    from helpers import _arg_specs, _named_axes
    seen = set()
    for args in arg_sets:
        key = []
        for a, spec in zip(args, _arg_specs(abstracted_axes, len(args))):
            shape = list(np.shape(a))
            for ax, _ in _named_axes(spec, len(shape)):
                shape[ax] = None
            key.append(tuple(shape))
        seen.add(tuple(key))
    return len(seen) - 1
