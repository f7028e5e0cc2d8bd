"""dynjax runtime: compile static StableHLO with XLA:CPU and run it on numpy arrays.

* :func:`specialize` (from ``mlir_passes``) turns the lowering's dynamic
  module into a static one for concrete argument shapes / dimension values.
* :func:`compile` / :func:`compile_cached` build an :class:`Executable`
  (the latter through the on-disk cache, see :mod:`dynjax.runtime.cache`).
* ``exe(*numpy_args)`` / :func:`execute` run it: numpy in, numpy out.
* :func:`serialize` / :func:`deserialize` / :func:`hlo_text` for AOT use and
  inspection.

Only :mod:`dynjax.runtime.xla` touches jaxlib's private API.
"""

import os as _os
import threading as _threading

from mlir_passes import SpecializationError, specialize, static_type_string

from .cache import (
    DEFAULT_MAX_BYTES,
    cache_dir,
    cache_stats,
    clear_disk_cache,
    compile_cached,
    disk_cache_enabled,
    disk_cache_max_bytes,
    last_cache_hit,
)
from . import cache as _cache
from .lapack import ensure_lapack_targets
from .xla import (
    Executable,
    StaleExecutableError,
    compile,
    deserialize,
    execute,
    get_client,
    hlo_text,
    active_runs,
    compiler_started,
    served_on_host,
    wait_until_no_active_run,
    xla_cost_analysis,
    xla_memory_analysis,
    serialize,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Executable",
    "SpecializationError",
    "StaleExecutableError",
    "cache_dir",
    "cache_stats",
    "clear_disk_cache",
    "compile",
    "compile_cached",
    "deserialize",
    "ensure_lapack_targets",
    "disk_cache_enabled",
    "disk_cache_max_bytes",
    "execute",
    "get_client",
    "hlo_text",
    "active_runs",
    "compiler_started",
    "served_on_host",
    "wait_until_no_active_run",
    "xla_cost_analysis",
    "xla_memory_analysis",
    "last_cache_hit",
    "serialize",
    "specialize",
    "static_type_string",
]


def _after_fork_in_child() -> None:
    """The disk cache's locks may have been held by another thread of the parent at fork
    time: the child starts with free ones (the client itself: ``xla._after_fork_in_child``),
    and with no evictor thread (the parent's is not in the child): its first write rescans."""
    _cache._stats_lock = _threading.Lock()
    _cache._evict_lock = _threading.Lock()
    _cache._evictor_idle = _threading.Condition(_cache._evict_lock)
    _cache._hurry = _threading.Event()
    _cache._evictor = None
    _cache._scans_due.clear()
    _cache._scanning.clear()
    _cache._last_written.clear()
    _cache._dir_state.clear()


_os.register_at_fork(after_in_child=_after_fork_in_child)
