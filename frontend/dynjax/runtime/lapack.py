"""jaxlib's CPU LAPACK kernels as XLA custom-call targets, for ``dynjax.numpy.linalg`` and
``dynjax.lax.linalg``: registered once per process, before the first module that calls one
is compiled or loaded (``xla.compile``, ``xla.deserialize``) and by the linalg lowering rules."""
from __future__ import annotations

import os
import threading

import jaxlib
import jaxlib._jax as _jax

_lapack_lock = threading.Lock()
_lapack_ready = False


def ensure_lapack_targets() -> None:
    """Register jaxlib's CPU LAPACK kernels (``lapack_dgetrf_ffi``, ``lapack_dpotrf_ffi``, ...)
    as typed-FFI custom-call targets of XLA:CPU, once per process.

    ``jaxlib.cpu._lapack.registrations()`` maps each target name to a ``PyCapsule`` holding the
    FFI handler; they are registered for platform ``"cpu"`` with api version 1 (typed FFI)
    in XLA's process-wide registry, so they serve every client. ``_lapack.initialize()`` loads
    the LAPACK/BLAS routines the kernels call: jaxlib takes them from scipy's
    ``cython_lapack``/``cython_blas`` (scipy is a dependency of the jaxlib wheel). Called by
    the linalg lowering rules and before compiling or loading a module that uses a
    ``lapack_*`` target; costs about 0.2 s the first time, nothing afterwards.
    """
    global _lapack_ready
    if _lapack_ready:
        return
    with _lapack_lock:
        if _lapack_ready:
            return
        try:
            from jaxlib.cpu import _lapack
        except ImportError as e:  # pragma: no cover - jaxlib built without the CPU kernels
            raise RuntimeError(f"this jaxlib ({jaxlib.__version__}) has no CPU LAPACK kernels: {e}") from None
        try:
            _lapack.initialize()
        except ImportError as e:  # pragma: no cover - scipy missing
            raise RuntimeError(
                "jaxlib's LAPACK kernels need scipy (jaxlib takes the LAPACK routines from "
                f"scipy.linalg.cython_lapack): {e}") from None
        for name, capsule in _lapack.registrations().items():
            _jax.register_custom_call_target(name, capsule, "cpu", 1)
        _lapack_ready = True


def lapack_target_names() -> list:
    """The names of the LAPACK custom-call targets this jaxlib provides."""
    from jaxlib.cpu import _lapack
    return sorted(_lapack.registrations())


def needs_lapack(module) -> bool:
    """Whether a module (MLIR text or bytecode) calls a LAPACK target."""
    if isinstance(module, str):
        return "lapack_" in module
    if isinstance(module, (bytes, bytearray, memoryview)):
        return b"lapack_" in bytes(module)
    return False


def _after_fork_in_child() -> None:
    """fork() keeps only the calling thread: the lock may be held by a thread that is gone.
    (The registrations live in XLA's process-wide registry, which the child has.)"""
    global _lapack_lock
    _lapack_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
