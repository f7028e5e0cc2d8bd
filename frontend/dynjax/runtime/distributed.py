"""Several processes as one computation: XLA's distributed runtime.

One process (``process_id == 0``) runs the coordination service at ``coordinator_address``;
every process connects a client to it, and the XLA CPU client of each process is then made
with that distributed client and gloo collectives over TCP, so that its devices are numbered
globally and a program partitioned over devices of several processes exchanges data between
them (XLA's collectives). Nothing here is dynjax's own networking: the service, the
heartbeats and the collectives are jaxlib's.

``initialize`` must run before the process first uses XLA (as ``jax.distributed.initialize``).
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import jaxlib._jax as _jax

from . import xla as _xla

_lock = threading.Lock()
_service = None
_client = None
_state: dict = {}


def initialize(coordinator_address: str, num_processes: int, process_id: int,
               local_device_ids: Optional[Sequence[int]] = None, initialization_timeout: int = 300,
               heartbeat_timeout: int = 10, shutdown_timeout: int = 30) -> None:
    """Join a distributed run of ``num_processes`` processes as process ``process_id``."""
    global _service, _client
    if not isinstance(coordinator_address, str) or ":" not in coordinator_address:
        raise ValueError(f"initialize: coordinator_address must be 'host:port', got {coordinator_address!r}")
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"initialize: num_processes must be a positive int, got {num_processes!r}")
    if not isinstance(process_id, int) or not 0 <= process_id < num_processes:
        raise ValueError(f"initialize: process_id must be in [0, {num_processes}), got {process_id!r}")
    if local_device_ids is not None:
        raise ValueError("initialize: local_device_ids selects accelerators; a CPU process uses its "
                         "own devices (set their number with DYNJAX_NUM_CPU_DEVICES)")
    with _lock:
        if _client is not None:
            raise RuntimeError("initialize: the distributed runtime is already initialized")
        if _xla.client_made():
            raise RuntimeError("initialize must be called before the process first uses XLA "
                               "(before any dynjax computation or dynjax.devices())")
        if process_id == 0:
            _service = _jax.get_distributed_runtime_service(
                coordinator_address, num_processes, heartbeat_timeout=heartbeat_timeout,
                shutdown_timeout=shutdown_timeout)
        client = _jax.get_distributed_runtime_client(
            coordinator_address, process_id, init_timeout=initialization_timeout,
            heartbeat_timeout=heartbeat_timeout, shutdown_timeout=shutdown_timeout,
            shutdown_on_destruction=False)
        try:
            client.connect()
        except Exception as e:
            if _service is not None:
                _service.shutdown()
                _service = None
            raise RuntimeError(f"initialize: could not join the coordinator at {coordinator_address}: {e}") from None
        _client = client
        _state.update(process_id=process_id, num_processes=num_processes)
        _xla._distributed_options.update(
            distributed_client=client, node_id=process_id, num_nodes=num_processes,
            collectives=_jax.make_gloo_tcp_collectives(client))


def is_initialized() -> bool:
    return _client is not None


def shutdown() -> None:
    """Leave the distributed run (waits for the other processes at the service's barrier)."""
    global _service, _client
    with _lock:
        if _client is not None:
            _client.shutdown()
            _client = None
        if _service is not None:
            _service.shutdown()
            _service = None
        _state.clear()
