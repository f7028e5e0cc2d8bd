"""Primitives with an effect: ``debug_callback`` calls a Python function on run-time values.

An effectful equation has no results that anything uses, so two rules keep it alive and in
order: dead-code elimination never drops a primitive listed in
``core.primitive.effectful_primitives`` (``core/staging.py: live_equations``), and the
execution planner never compiles one into an XLA program (``execution/analysis.py``): it
runs as a host step, in program order, and a loop or conditional containing one is driven
from the host, so the callback sees each iteration's values.
"""
from __future__ import annotations

import numpy as np

from ..core.primitive import effectful_primitives
from .base import define


def _debug_callback_impl(*args, callback, name):
    callback(*[np.asarray(a) for a in args])
    return []


def _debug_callback_abstract(*args, callback, name):
    return []


debug_callback_p = define("debug_callback", _debug_callback_impl, _debug_callback_abstract,
                          multiple_results=True)
effectful_primitives.add(debug_callback_p)
