"""The devices dynjax runs on: JAX's ``devices()``, ``device_count()`` and friends.

dynjax runs on XLA's CPU client. It has one device unless the process asks for more before
dynjax's first use: ``DYNJAX_NUM_CPU_DEVICES=N`` or XLA's own
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (each device then runs its part of a
sharded program on the host's cores). The objects returned are the client's devices (``id``,
``platform``, ``device_kind``, ``process_index``), as ``jax.devices()`` returns them.
"""
from __future__ import annotations

from typing import List, Optional

from ..runtime import xla as _xla


def _check_backend(backend, who: str) -> None:
    if backend is not None and backend != "cpu":
        raise RuntimeError(f"{who}: unknown backend {backend!r}: dynjax runs on 'cpu'")


def devices(backend: Optional[str] = None) -> List:
    """Every device, in id order."""
    _check_backend(backend, "devices")
    return _xla.all_devices()


def device_count(backend: Optional[str] = None) -> int:
    """The number of devices."""
    return len(devices(backend))


def local_devices(process_index: Optional[int] = None, backend: Optional[str] = None, host_id=None) -> List:
    """The devices of this process (or of process ``process_index``)."""
    _check_backend(backend, "local_devices")
    want = process_index if process_index is not None else host_id
    if want is None:
        return _xla.local_devices()
    return [d for d in devices(backend) if d.process_index == want]


def local_device_count(backend: Optional[str] = None) -> int:
    """The number of devices of this process."""
    return len(local_devices(backend=backend))


def process_index(backend: Optional[str] = None) -> int:
    """This process's index among the processes of a distributed run (0 alone)."""
    _check_backend(backend, "process_index")
    return _xla.process_index()


def process_count(backend: Optional[str] = None) -> int:
    """The number of processes of a distributed run (1 alone)."""
    _check_backend(backend, "process_count")
    return _xla.process_count()


def default_backend() -> str:
    """The platform dynjax compiles for: ``"cpu"``."""
    return "cpu"
