"""A bounded, thread-safe cache whose misses are filled once.

Every in-memory cache of a ``qjit`` function (traces, executables, the dispatch table)
is a ``BoundedCache``:

* **bounded**: at most ``maxsize`` entries; the least recently used one is evicted, so a
  process calling a function at thousands of sizes keeps a fixed number of executables;
* **filled once**: when several threads miss on the same key at the same time, one of
  them runs ``make`` (traces, compiles) and the others wait for its result instead of
  compiling the same thing again. If ``make`` raises, the waiting threads try again
  themselves (so each gets its own error, with its own traceback);
* **lock-free hits**: ``get`` is a dict lookup plus a recency update, both atomic under
  the GIL; only fills and evictions take the lock.

The default size is ``DEFAULT_CACHE_SIZE`` (64), or ``$DYNJAX_CACHE_SIZE`` when set;
``qjit(cache_size=...)`` chooses it per function.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, Optional

DEFAULT_CACHE_SIZE = 64


def default_cache_size() -> int:
    """``$DYNJAX_CACHE_SIZE`` if set (a positive integer), else ``DEFAULT_CACHE_SIZE``."""
    text = os.environ.get("DYNJAX_CACHE_SIZE", "").strip()
    if not text:
        return DEFAULT_CACHE_SIZE
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"DYNJAX_CACHE_SIZE must be a positive integer, got {text!r}") from None
    return check_cache_size(n, "DYNJAX_CACHE_SIZE")


def check_cache_size(n, what: str = "cache_size") -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    return n


class _Fill:
    """A fill in progress: the thread running ``make`` and an event the others wait on."""
    __slots__ = ("owner", "done", "value", "ok")

    def __init__(self):
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.value = None
        self.ok = False


class BoundedCache:
    """An LRU mapping of at most ``maxsize`` entries with once-only fills (module docstring)."""

    def __init__(self, maxsize: Optional[int] = None, executables: bool = False):
        self.maxsize = default_cache_size() if maxsize is None else check_cache_size(maxsize)
        self._data: "OrderedDict[Hashable, Any]" = OrderedDict()
        #: ``peek(key, default=None)``: the cached value without refreshing its recency (the
        #: dict's own ``get``: for lookups on a hot call path; ``get`` keeps the LRU order)
        self.peek = self._data.get
        #: a shortcut its owner may keep to one value (``qjit``: the latest one-array call's
        #: plan, as ``(shape, dtype, plan)``); emptied (``NO_MEMO``) whenever the mapping
        #: changes, after the change. An owner that sets it reads ``generation`` before its
        #: lookup and empties the memo again if the generation moved by the time it is set.
        self.memo = NO_MEMO
        self.generation = 0
        self._fills: Dict[Hashable, _Fill] = {}
        self._lock = threading.Lock()
        self.evictions = 0
        #: whether the values hold XLA executables (emptied in a child process after fork)
        self.executables = executables
        _caches.add(self)

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data

    def values(self):
        return list(self._data.values())

    def keys(self):
        return list(self._data.keys())

    def get(self, key, default=None):
        """The cached value (refreshing its recency), or ``default``."""
        data = self._data
        value = data.get(key, _MISSING)
        if value is _MISSING:
            return default
        try:
            data.move_to_end(key)
        except KeyError:   # evicted by another thread in between: the value is still valid
            pass
        return value

    def put(self, key, value) -> None:
        with self._lock:
            self._store(key, value)

    def _store(self, key, value):
        data = self._data
        data[key] = value
        data.move_to_end(key)
        while len(data) > self.maxsize:
            data.popitem(last=False)
            self.evictions += 1
        self._changed()

    def _changed(self):
        self.generation += 1
        self.memo = NO_MEMO

    def get_or_fill(self, key, make: Callable[[], Any]):
        """The value for ``key``, computed by ``make()`` once however many threads ask."""
        while True:
            value = self.get(key, _MISSING)
            if value is not _MISSING:
                return value
            with self._lock:
                value = self._data.get(key, _MISSING)
                if value is not _MISSING:
                    return value
                fill = self._fills.get(key)
                mine = fill is None
                if mine:
                    fill = self._fills[key] = _Fill()
            if mine:
                return self._run_fill(key, fill, make)
            if fill.owner == threading.get_ident():
                raise RuntimeError("a cache fill asked for its own result (recursive compilation)")
            fill.done.wait()
            if fill.ok:
                return fill.value
            # the filling thread failed: try again (this thread may become the filler)

    def _run_fill(self, key, fill: _Fill, make):
        try:
            value = make()
        except BaseException:
            with self._lock:
                del self._fills[key]
            fill.done.set()
            raise
        with self._lock:
            self._store(key, value)
            del self._fills[key]
        fill.value, fill.ok = value, True
        fill.done.set()
        return value


_MISSING = object()
#: the empty memo: matches no array (no shape equals None)
NO_MEMO = (None, None, None)
_caches: "weakref.WeakSet[BoundedCache]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """In a child process after fork (called by ``tiers._after_fork_in_child``): every cache
    gets a free lock and forgets the fills of the parent's other threads (no one would finish
    them), and the caches of executables are emptied: the parent's XLA client does not work in
    the child (``runtime.xla._after_fork_in_child``), so its executables are compiled again,
    or loaded from the disk cache. Traces stay."""
    for cache in list(_caches):
        cache._lock = threading.Lock()
        cache._fills = {}
        if cache.executables:
            cache._data.clear()
            cache._changed()
