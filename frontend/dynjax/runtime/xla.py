"""XLA:CPU through jaxlib -- the only dynjax module that touches jaxlib's private API.

* :func:`get_client` -- the lazily created CPU client (one per process).
* :func:`compile` -- static StableHLO (text or bytecode) -> :class:`Executable`.
* :func:`execute` / ``Executable.__call__`` -- numpy arrays in, numpy arrays out.
* :func:`serialize` / :func:`deserialize` -- executables as bytes (for the disk cache).
* :func:`hlo_text` -- the optimized HLO XLA actually runs.

Call path (measured on jaxlib 0.10.2, see ``bench/runtime_dispatch.py``): small
inputs (at most ``_STAGE_MAX_BYTES``) are copied into *staging buffers*: 64-byte
aligned host arrays that XLA reads in place through device arrays created once
with zero-copy ``batched_device_put`` (see ``_new_stage``); a copy of a few bytes
costs ~0.1 us where a ``batched_device_put`` costs ~2.5 us. Larger inputs get one
``batched_device_put`` each with a precomputed aval (zero-copy for 64-byte-aligned
inputs). Then ``execute_sharded`` and ``consume_with_handlers`` with precomputed
``array_result_handler`` s, and each output becomes a writable numpy array of its
own (``_host_outputs``: copied when small, else a writable view of the XLA buffer,
which only that result refers to; it waits for the run to finish). ``disassemble_into_single_device_arrays`` is avoided:
without ``jax`` installed it retries ``import jax`` on every call (~40 us).

XLA never aliases a parameter with an output unless asked to (we never ask:
no donation), so results are independent of later mutation of the inputs.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import platform
import re
import struct
import threading
import time
import weakref
from collections.abc import Sequence

import ml_dtypes
import numpy as np
import jaxlib
import jaxlib._jax as _jax
from jaxlib import xla_client as _xc

from . import runners
from .compile_options import compile_options, remember_flags
from .lapack import ensure_lapack_targets, needs_lapack

__all__ = [
    "Executable",
    "get_client",
    "compile",
    "execute",
    "serialize",
    "deserialize",
    "hlo_text",
    "backend_fingerprint",
    "StaleExecutableError",
    "active_runs",
    "compiler_started",
    "served_on_host",
    "wait_until_no_active_run",
]

# --------------------------------------------------------------------------
# client

_lock = threading.Lock()
_client = None
_device = None
_device_list = None
_devices = None
_sharding = None
_ZERO_COPY = _jax.HostBufferSemantics.ZERO_COPY
_bdp = _jax.batched_device_put
_result_handler = _jax.array_result_handler


def _patch_jaxlib() -> None:
    # jaxlib 0.10.2: batched_device_put calls this Python method, which jax
    # normally monkey-patches onto the C++ class.  Newer jaxlibs have it.
    if not hasattr(_jax.SingleDeviceSharding, "_to_xla_hlo_sharding"):
        replicated = _xc.HloSharding.replicate()
        _jax.SingleDeviceSharding._to_xla_hlo_sharding = lambda self, ndim: replicated


#: the distributed runtime's client options (``runtime/distributed.py``), set before the
#: client is made: empty for a process of its own
_distributed_options: dict = {}


def client_made() -> bool:
    """Whether the process-wide client exists (the distributed runtime must start before)."""
    return _client is not None


def _requested_devices():
    """``DYNJAX_NUM_CPU_DEVICES=N``: the number of CPU devices of the client (else XLA's
    default: one, or ``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS``)."""
    raw = os.environ.get("DYNJAX_NUM_CPU_DEVICES", "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"DYNJAX_NUM_CPU_DEVICES must be a positive integer, got {raw!r}")
    return n


def all_devices() -> list:
    """Every device of the process-wide client (of every process in a distributed run), in
    id order."""
    return sorted(get_client().devices(), key=lambda d: d.id)


def local_devices() -> list:
    """The devices of this process, in id order."""
    return sorted(get_client().local_devices(), key=lambda d: d.id)


def process_count() -> int:
    """The number of processes of a distributed run (1 alone)."""
    return len({d.process_index for d in get_client().devices()})


def process_index() -> int:
    """This process's index in a distributed run (0 alone)."""
    return int(get_client().process_index())


def get_client():
    """Return the process-wide XLA CPU client (created on first use, and again in a child
    process after ``fork``: see ``_after_fork_in_child``).

    The client is synchronous: a program runs on the thread that calls it (with the GIL
    released; XLA's own thread pool still runs its parallel loops and, on several devices,
    each device's share). An asynchronous client runs only programs it deems cheap that way
    and hands any other (one with a loop, for instance) to a worker thread, which the caller
    then waits for: every ``qjit`` call waits for its results at once, so the hand-over
    buys nothing and costs ~20-25 us a call (a 10-step loop on 557 floats: 40 us a call,
    12 us with this client)."""
    global _client, _device, _device_list, _devices, _sharding
    if _client is None:
        with _lock:
            if _client is None:
                _patch_jaxlib()
                remember_flags()
                client = _jax.get_tfrt_cpu_client(asynchronous=False, num_devices=_requested_devices(),
                                                  **_distributed_options)
                _device = client.local_devices()[0]
                _device_list = _jax.DeviceList((_device,))
                _devices = [_device]
                _sharding = _jax.SingleDeviceSharding(_device)
                _client = client
    return _client


# --------------------------------------------------------------------------
# fork
#
# Neither the client nor XLA's compiler survives fork(): the child has only the forking
# thread, so the client's thread pools have no workers (running an executable, even deleting
# the client, waits for them forever), and XLA's compiler schedules every compile on a
# process-wide "slow compilation" alarm whose thread waits on a condition variable in the
# parent: in a child, the first compile signals that variable and hangs or aborts (absl:
# "Mutex::Fer with pending CondVar queueing"). A fresh client works in a child, and so does
# deserializing an executable; compiling does not, once the parent has compiled anything.
# So, in a child: a new client is made on first use, the executables of the parent's client
# are retired (calling one raises StaleExecutableError; the caches of qjit functions drop
# them, see execution/tiers.py), nothing of the parent's client is ever destroyed (kept in
# _abandoned), and when the parent process had compiled, compiles run in a helper process
# (runtime/compile_server.py) and come back serialized.

#: +1 in every child process after fork: executables of an older generation are retired
generation = 0
_compiler_used = False      # XLA's compiler ran in this process (or in one it was forked from)
_compile_elsewhere = False  # compiles go to a compile server (a child of a process that compiled)
_abandoned: list = []       # the parent's client and what belongs to it: never destroyed here
_live: "weakref.WeakSet" = weakref.WeakSet()   # the executables of this process's client
_server = None              # the compile server process (compile_server.py), when in use
_server_lock = threading.Lock()


class StaleExecutableError(RuntimeError):
    """An executable compiled by the XLA client of a parent process, called after fork()."""


class _Retired:
    """The stage pool of a retired executable: taking a stage raises."""
    __slots__ = ()

    def pop(self):
        raise StaleExecutableError(
            "this executable was compiled by the XLA client of the parent process, which does "
            "not survive fork(); compile the module again in this process (qjit functions do so "
            "by themselves)")

    def append(self, stage):   # a stage returned by a run that started before the fork
        pass


def _after_fork_in_child() -> None:
    global _client, _device, _device_list, _devices, _sharding, _lock
    global generation, _compile_elsewhere, _server, _server_lock
    _abandoned.append((_client, _device, _device_list, _devices, _sharding, _server))
    _client = _device = _device_list = _devices = _sharding = _server = None
    _lock = threading.Lock()
    _server_lock = threading.Lock()
    _flight.clear()   # (runs of other threads did not survive the fork)
    generation += 1
    _compile_elsewhere = _compile_elsewhere or _compiler_used
    for exe in list(_live):
        exe._retire()
    _live.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _compile_in_server(static_module):
    """Compile in the compile server (started on first use) and load the result with this
    process's client; ValueError when XLA rejects the module."""
    global _server
    from . import compile_server
    text = static_module if isinstance(static_module, (bytes, bytearray)) else str(static_module).encode()
    with _server_lock:
        if _server is None or _server.poll() is not None:
            _server = compile_server.start()
        ok, payload = compile_server.request(_server, bytes(text))
    if not ok:
        raise ValueError(f"XLA failed to compile the module: {payload.decode(errors='replace')}")
    return deserialize(payload)


_backend_fp: str | None = None


def backend_fingerprint() -> str:
    """jaxlib version + platform + CPU features: serialized executables are only valid on a match."""
    global _backend_fp
    if _backend_fp is None:
        client = get_client()
        flags = ""
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith(("flags", "Features")):
                        flags = " ".join(sorted(line.split(":", 1)[1].split()))
                        break
        except OSError:
            pass
        parts = [jaxlib.__version__, client.platform, str(client.platform_version),
                 platform.machine(), hashlib.sha256(flags.encode()).hexdigest()[:16]]
        _backend_fp = "|".join(parts)
    return _backend_fp


# --------------------------------------------------------------------------
# avals and types

class _Aval:
    """The duck-typed abstract value jaxlib's put/handlers need."""

    __slots__ = ("shape", "dtype", "weak_type", "ndim", "sharding", "size")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False
        self.ndim = len(self.shape)
        self.sharding = None
        self.size = int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return f"_Aval({self.shape}, {self.dtype})"


_ELEM = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
    "ui64": np.uint64, "ui32": np.uint32, "ui16": np.uint16, "ui8": np.uint8,
    "i1": np.bool_, "complex<f32>": np.complex64, "complex<f64>": np.complex128,
    "bf16": ml_dtypes.bfloat16,
}
_BF16 = np.dtype(ml_dtypes.bfloat16)

# Inputs of at most this many bytes are copied into staging buffers instead of being put on
# the device per call (a copy of 16 KiB takes about as long as one batched_device_put).
_STAGE_MAX_BYTES = 16384
# Scalars written into a 0-d staging buffer of that dtype without a conversion check: the
# write is exact (a Python int out of range raises, and is then reported by _slow_arg).
_SCALAR_TYPES = {np.dtype(np.float64): (float, np.float64), np.dtype(np.int64): (int, np.int64),
                 np.dtype(np.bool_): (bool, np.bool_)}
_TENSOR = re.compile(r"^tensor<((?:\d+x)*)([a-z0-9<>]+)>$")


def _aval_from_type(t: str) -> _Aval:
    m = _TENSOR.match(t.strip())
    if not m or m.group(2) not in _ELEM:
        raise ValueError(f"unsupported or non-static type for an XLA executable: {t}")
    dims = [int(d) for d in m.group(1).split("x") if d]
    return _Aval(dims, _ELEM[m.group(2)])


# --------------------------------------------------------------------------
# executables

class Executable:
    """A loaded XLA executable plus the static input/output types of its ``@main``.

    Call it with numpy arrays (or scalars); it returns a list of numpy arrays.
    """

    __slots__ = ("loaded", "in_types", "out_types", "in_avals", "out_avals", "bits", "_handlers", "_run",
                 "_via_copy", "_staged", "_scalars", "_stages", "generation", "wait_interruptibly", "blob",
                 "__weakref__")

    def __init__(self, loaded, in_types: Sequence[str], out_types: Sequence[str], bits: Sequence[int] = ()):
        get_client()
        self.generation = generation
        #: wait for the results on a helper thread, so that Ctrl-C interrupts the wait (set for
        #: runs that may be long: see ``_call_interruptibly``)
        self.wait_interruptibly = False
        #: the serialized form this executable was loaded from (``deserialize``), or None
        self.blob = None
        _live.add(self)
        self.loaded = loaded
        self.in_types = tuple(in_types)
        self.out_types = tuple(out_types)
        self.in_avals = tuple(_aval_from_type(t) for t in self.in_types)
        self.out_avals = tuple(_aval_from_type(t) for t in self.out_types)
        #: the bfloat16 results the loaded program returns as their int16 bits
        #: (``mlir_passes.bf16_results``); the host views them as bfloat16
        self.bits = tuple(bits)
        self._run = loaded.execute_sharded
        self._handlers = [_result_handler(_Aval(a.shape, np.int16) if k in self.bits else a, _sharding, True,
                                          _skip_checks=True) for k, a in enumerate(self.out_avals)]
        # how each result reaches the host as a writable array that only it owns (None: every
        # one is copied, the common case of small results; see _host_outputs)
        self._via_copy = _output_modes(self.out_avals, self.bits)
        # inputs passed through staging buffers, the scalar types written into them as they
        # are, and the free stages (None: no staging; without outputs a run cannot be awaited)
        # (not the dtypes numpy's buffer protocol lacks, bfloat16 and float8: telling whether
        # jaxlib reads such a buffer in place asks a jaxlib call that imports jax)
        self._staged = tuple(0 < a.size * a.dtype.itemsize <= _STAGE_MAX_BYTES and a.dtype.kind != "V"
                             for a in self.in_avals)
        self._scalars = tuple(_SCALAR_TYPES.get(a.dtype, (a.dtype.type,)) if a.shape == () else ()
                              for a in self.in_avals)
        self._stages = [] if any(self._staged) and self.out_avals else None

    def __call__(self, *args):
        return self.call(args)

    def call(self, args: Sequence) -> list:
        """Run on a sequence of arguments (numpy arrays, scalars, anything ``_slow_arg``
        converts exactly); return a list of writable numpy arrays (each owns its memory)."""
        avals = self.in_avals
        if len(args) != len(avals):
            raise TypeError(f"executable takes {len(avals)} arguments, got {len(args)}")
        for x, aval, scalars in zip(args, avals, self._scalars):
            t = type(x)
            if not (t in scalars or (t is np.ndarray and x.dtype == aval.dtype and x.shape == aval.shape)):
                args = [_checked_arg(x, aval, scalars, i)
                        for i, (x, aval, scalars) in enumerate(zip(args, avals, self._scalars))]
                break
        return self.call_exact(args)

    def call_exact(self, args: Sequence, interruptible=None) -> list:
        """``call`` for arguments the caller has checked: as many as the inputs, each a numpy
        array of exactly the input's shape and dtype or a scalar of one of ``scalar_types``.
        ``interruptible`` (default: ``wait_interruptibly``) says whether to wait for the run
        on a runner thread, so that Ctrl-C is heard during it. The run counts as in flight
        (``active_runs``) from its first transfer to its last output."""
        _flight_append(None)
        try:
            return self._call_exact(args, interruptible)
        finally:
            _flight_pop()

    def _call_exact(self, args: Sequence, interruptible) -> list:
        if interruptible is None:
            interruptible = self.wait_interruptibly
        if interruptible and threading.current_thread() is not threading.main_thread():
            interruptible = False   # Ctrl-C reaches the main thread alone: nothing to wait for
        stages = self._stages
        if stages is None:
            if interruptible:
                return _call_interruptibly(self, _put_all(args, self.in_avals), None)
            return _outputs(self, self._run(_put_all(args, self.in_avals)))
        try:
            stage = stages.pop()   # atomic: a stage serves one call at a time
        except IndexError:
            stage = _new_stage(self)
        hosts, devs, whole = stage
        try:
            if whole:
                try:
                    for x, host in zip(args, hosts):
                        host[()] = x
                    bufs = devs
                except (OverflowError, ValueError):   # a Python int out of range
                    bufs = _fill(self, args, hosts, devs)
            else:
                bufs = _fill(self, args, hosts, devs)
        except BaseException:
            stages.append(stage)   # nothing ran: the stage is free
            raise
        if interruptible:
            return _call_interruptibly(self, bufs, stage)
        outs = self._run(bufs).consume_with_handlers(self._handlers)
        # converting the outputs waits for them, so the run has finished reading the stage
        outs = _host_outputs(self, outs)
        stages.append(stage)
        return outs

    def scalar_types(self, i: int) -> tuple:
        """The Python and numpy scalar types input ``i`` takes as they are (it is 0-d and the
        value converts exactly), for ``call_exact``."""
        return self._scalars[i]

    def _retire(self):
        """After fork, in the child: this executable belongs to the parent's client."""
        _abandoned.append((self.loaded, self._stages, self._handlers))
        self._stages = _Retired()

    def __repr__(self):
        return f"Executable(({', '.join(self.in_types)}) -> ({', '.join(self.out_types)}))"


class _Waiting:
    """A run on a helper thread that the calling thread waits for (``_call_interruptibly``)."""
    __slots__ = ("done", "outs", "error", "abandoned")

    def __init__(self):
        self.done = threading.Event()
        self.outs = self.error = None
        self.abandoned = False


# the active runs: between their first transfer and their last output, on any thread (one
# entry each); background work waits for none to be (``wait_until_no_active_run``,
# ``core.cooperative``). (``runners.runs_in_flight`` counts only the runs on runner threads.)
# A deque, whose append, pop and len are atomic: ~0.1 us a run, where a lock and a condition
# variable cost 1.4 us on a 8 us run.
_flight: "collections.deque" = collections.deque()
_flight_append, _flight_pop = _flight.append, _flight.pop


def active_runs() -> int:
    """How many runs of compiled programs are active now, on any thread
    (``Executable.call_exact``)."""
    return len(_flight)


class _ServedOnHost:
    """``with served_on_host:`` counts the block as an active run (``active_runs``), as a
    compiled program's run is from its first transfer to its last output: for the work of a
    call that runs on the host (the eager tier's numpy evaluation, padding inputs and cutting
    results), which background Python work would otherwise hold the GIL from for its switch
    interval (5 ms) at each numpy call (``core.cooperative``)."""
    __slots__ = ()

    def __enter__(self):
        _flight_append(None)

    def __exit__(self, *exc):
        _flight_pop()


served_on_host = _ServedOnHost()


def wait_until_no_active_run(timeout: float) -> bool:
    """Wait until no run is active, or ``timeout`` seconds (polling every 0.2 ms, the GIL
    released meanwhile); whether none is."""
    end = time.perf_counter() + timeout
    while _flight:
        if time.perf_counter() >= end:
            return False
        time.sleep(0.0002)
    return True


def _call_interruptibly(exe: Executable, bufs, stage) -> list:
    """Run ``exe`` on a helper thread and wait for its outputs on an Event, so that Python's
    signal handlers (Ctrl-C: KeyboardInterrupt) run on the calling thread while XLA computes.

    XLA:CPU runs a program inside ``execute_sharded`` on the calling thread (with the GIL
    released), and nothing in Python runs until it returns; an 8 s loop would hear Ctrl-C 8 s
    late. The hand-over to a runner (``runners.py``) costs a few microseconds more than a
    direct call, so only executables whose runs may be long wait this way
    (``wait_interruptibly``: set by the execution layer from the cost model).
    When the wait is interrupted, the run is abandoned: it finishes on the runner (XLA cannot
    stop it), its outputs are dropped, and its stage goes back to the pool only then, since
    XLA reads the inputs from it until the end. A process that exits meanwhile waits for it
    at exit."""
    job = _Waiting()
    runners.submit(lambda: _finish_run(exe, bufs, stage, job))
    try:
        job.done.wait()
    except BaseException:
        job.abandoned = True
        raise
    if job.error is not None:
        raise job.error
    return job.outs


def _finish_run(exe: Executable, bufs, stage, job: _Waiting) -> None:
    try:
        job.outs = _outputs(exe, exe._run(bufs))   # converting waits for the run to finish
    except BaseException as e:   # reported on the calling thread
        job.error = e
    if stage is not None:
        exe._stages.append(stage)
    if job.abandoned:
        job.outs = job.error = None
    job.done.set()


def _main_types(module) -> tuple[list[str], list[str]]:
    from mlir_passes.specialize import main_signature

    return main_signature(module)


def compiler_started() -> bool:
    """Whether XLA's compiler has run in this process (or in the one it was forked from):
    the first compile also pays for starting it (0.2-0.6 s on top of the program's own
    compile), so the execution layer does not take its time as what a compile costs."""
    return _compiler_used


def compile(static_module) -> Executable:
    """Compile a module with a fully static ``@main`` (MLIR text or bytecode).

    In a child process forked after the parent compiled, the compile runs in a compile
    server process (XLA's compiler does not survive fork: see ``_after_fork_in_child``)."""
    global _compiler_used
    if _compile_elsewhere:
        return _compile_in_server(static_module)
    client = get_client()
    _compiler_used = True
    if needs_lapack(static_module):
        ensure_lapack_targets()
    in_types, out_types = _main_types(static_module)
    for t in in_types:
        _aval_from_type(t)  # raises ValueError for dynamic / unsupported types
    bits = ()
    if any(_aval_from_type(t).dtype == _BF16 for t in out_types):   # (the same check for the results)
        from mlir_passes.bf16_results import results_as_bits
        static_module, bits = results_as_bits(static_module)
    try:
        loaded = client.compile_and_load(static_module, _device_list, compile_options())
    except _jax.JaxRuntimeError as e:
        raise ValueError(f"XLA failed to compile the module: {e}") from None
    return Executable(loaded, in_types, out_types, bits)


def _kind(dtype) -> str:
    """numpy's dtype kind letter, with bfloat16 (kind ``V`` for numpy) as a float."""
    return "f" if dtype == _BF16 else dtype.kind


def _slow_arg(x, aval: _Aval, i: int):
    """Convert a non-exact argument (python scalar, list, other dtype kind, strided...)."""
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
        if x.dtype != aval.dtype and x.shape == aval.shape:
            # python scalars / lists: accept a lossless conversion of the same kind
            have, want = _kind(x.dtype), _kind(aval.dtype)
            if have == want or (have in "iu" and want in "iuf") or (have == "f" and want in "fc"):
                y = x.astype(aval.dtype)
                if np.array_equal(y, x):
                    x = y
    elif x.dtype != aval.dtype and x.dtype.newbyteorder("=") == aval.dtype:
        x = x.astype(aval.dtype)  # non-native byte order
    if x.shape != aval.shape or x.dtype != aval.dtype:
        raise TypeError(
            f"argument {i}: expected an array of shape {aval.shape} and dtype {aval.dtype}, "
            f"got shape {x.shape} and dtype {x.dtype}")
    return x


def execute(exe: Executable, args: Sequence) -> list[np.ndarray]:
    """Run ``exe`` on numpy arguments; return a list of writable numpy arrays of their own."""
    return exe.call(args)


def _checked_arg(x, aval: _Aval, scalars: tuple, i: int):
    """``x`` as ``call_exact`` takes it: as it is when exact, else converted by ``_slow_arg``."""
    t = type(x)
    if t in scalars or (t is np.ndarray and x.dtype == aval.dtype and x.shape == aval.shape):
        return x
    return _slow_arg(x, aval, i)


def _fill(exe: Executable, args, hosts, devs) -> list:
    """The device arrays for a run on checked arguments when not every input is staged, or
    a Python int is out of range (then the TypeError of ``_slow_arg``)."""
    bufs = []
    for i, (x, aval, host) in enumerate(zip(args, exe.in_avals, hosts)):
        if host is None:
            if type(x) is not np.ndarray:
                x = _slow_arg(x, aval, i)
            bufs.append(_bdp(aval, _sharding, [x], _devices, True, False, _ZERO_COPY, True))
            continue
        try:
            host[()] = x
        except (OverflowError, ValueError):
            host[()] = _slow_arg(x, aval, i)
        bufs.append(devs[i])
    return bufs


def _put_all(args, avals) -> list:
    """One ``batched_device_put`` per argument."""
    bufs = []
    append = bufs.append
    for x, aval in zip(args, avals):
        if type(x) is not np.ndarray or x.dtype != aval.dtype or x.shape != aval.shape:
            x = _slow_arg(x, aval, len(bufs))
        # strided arrays are fine: batched_device_put copies them
        append(_bdp(aval, _sharding, [x], _devices, True, False, _ZERO_COPY, True))
    return bufs


def _outputs(exe: Executable, results) -> list[np.ndarray]:
    """The results of a run as numpy arrays (waits for the run to finish)."""
    return _host_outputs(exe, results.consume_with_handlers(exe._handlers))


# Results are writable numpy arrays, as numpy's own are, and each owns its memory: no other
# result, input or constant shares it. A result of at most this many bytes is copied out of
# XLA's buffer (0.4 us for a few bytes, 3 us for 16 KiB); a larger one becomes a writable
# view of the buffer itself (2.3 us more than the read-only view jaxlib gives, whatever the
# size, where a copy of 1 MiB costs 25-70 us). XLA gives every output of a run a buffer of its
# own: outputs never alias parameters (nothing is donated), and its copy insertion gives
# constants, parameters and values returned twice their own output buffers. The buffer lives
# as long as the view (through ``_OutputBuffer``), and nothing else refers to it: the jaxlib
# array made for this output by ``consume_with_handlers`` is dropped here.
_VIEW_MIN_BYTES = 16384
_COPY, _VIEW, _COPY_BF16, _BF16_BITS = 0, 1, 2, 3


def _output_modes(avals, bits=()) -> tuple | None:
    """Per output, how ``_host_outputs`` brings it to the host; None when all are copied.
    ``bits``: the bfloat16 outputs the program returns as int16 bits."""
    modes = tuple(_BF16_BITS if k in bits else _COPY_BF16 if a.dtype == _BF16
                  else _VIEW if a.size * a.dtype.itemsize > _VIEW_MIN_BYTES else _COPY
                  for k, a in enumerate(avals))
    return None if all(m == _COPY for m in modes) else modes


class _OutputBuffer:
    """What a writable view of an XLA output buffer is made from: numpy reads the buffer's
    address, shape and strides from ``__array_interface__`` (those of jaxlib's read-only
    view, marked writable) and keeps this object -- and through ``array`` that read-only
    view, its memoryview and the jaxlib array owning the buffer -- alive as the view's base."""
    __slots__ = ("array", "__array_interface__")


def _host_outputs(exe: Executable, outs) -> list[np.ndarray]:
    """The jaxlib arrays of a run as writable numpy arrays of their own (waits for the run)."""
    modes = exe._via_copy
    if modes is None:
        return [np.array(o) for o in outs]
    res = []
    for o, mode in zip(outs, modes):
        if mode == _COPY:
            res.append(np.array(o))
        elif mode == _VIEW:
            owner = _OutputBuffer()
            owner.array = a = np.asarray(o)   # waits for the run
            iface = a.__array_interface__
            iface["data"] = (iface["data"][0], False)
            owner.__array_interface__ = iface
            res.append(np.asarray(owner))
        elif mode == _BF16_BITS:   # int16 bits, read as bfloat16
            res.append(np.array(o).view(_BF16))
        else:   # numpy's buffer protocol does not know bfloat16: jaxlib copies it out
            a = o._single_device_array_to_np_array_did_copy()[0]
            res.append(a if a.flags.writeable and a.base is None else np.array(a))
    return res


def _address(dev) -> int:
    """The address of a CPU device array's buffer, through the buffer protocol (staged inputs
    have dtypes it knows). jaxlib's ``unsafe_buffer_pointer`` imports jax when it is installed:
    0.4 s at a process's first call."""
    return np.asarray(memoryview(dev)).ctypes.data


def _new_stage(exe: Executable):
    """A set of staging buffers for ``exe``: ``(hosts, devs, whole)`` with, per staged input,
    a 64-byte-aligned host array and the device array that reads it in place (zero copy),
    None for the other inputs, and whether every input is staged.

    A call writes its arguments into the host arrays, runs, and waits for the outputs before
    the stage serves another call, so XLA never reads a buffer while it is being written.
    Outputs never alias inputs (nothing is donated). An input XLA would not read in place
    (its device buffer is not the host memory) is put per call instead."""
    hosts, devs = [], []
    for aval, staged in zip(exe.in_avals, exe._staged):
        host = dev = None
        if staged:
            nbytes = aval.size * aval.dtype.itemsize
            raw = np.zeros(nbytes + 64, np.uint8)
            off = -raw.ctypes.data % 64
            host = raw[off:off + nbytes].view(aval.dtype).reshape(aval.shape)
            dev = _bdp(aval, _sharding, [host], _devices, True, False, _ZERO_COPY, True)
            if _address(dev) != host.ctypes.data:
                host = dev = None
        hosts.append(host)
        devs.append(dev)
    return hosts, devs, all(h is not None for h in hosts)


_MAGIC = b"DYNJAX-XLA-EXE\x001\n"


def serialize(exe: Executable) -> bytes:
    """Serialize an executable (XLA blob plus our input/output types). An executable that
    was itself deserialized gives back the bytes it came from: XLA's CPU client serializes a
    deserialized executable without its compiled functions, and loading that blob in another
    process fails at run time ("Function ... not found"). A forked child's compiles come from
    the compile server this way, and its disk-cache writes must stay loadable."""
    if exe.blob is not None:
        return exe.blob
    payload = get_client().serialize_executable(exe.loaded)
    header = json.dumps({"in": list(exe.in_types), "out": list(exe.out_types), "bits": list(exe.bits)}).encode()
    return _MAGIC + struct.pack("<I", len(header)) + header + payload


def deserialize(blob: bytes) -> Executable:
    """Inverse of :func:`serialize`.  Only load blobs this process/cache wrote:
    jaxlib documents that loading untrusted executables is unsafe."""
    client = get_client()
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 4:
        raise ValueError("not a serialized dynjax executable")
    (n,) = struct.unpack_from("<I", blob, len(_MAGIC))
    start = len(_MAGIC) + 4
    try:
        header = json.loads(blob[start:start + n].decode())
    except (UnicodeDecodeError, ValueError):
        raise ValueError("corrupted serialized executable header") from None
    payload = blob[start + n:]
    if needs_lapack(payload):
        ensure_lapack_targets()
    try:
        loaded = client.deserialize_executable(payload, _device_list, _jax.CompileOptions())
    except _jax.JaxRuntimeError as e:
        raise ValueError(f"cannot deserialize executable: {e}") from None
    exe = Executable(loaded, header["in"], header["out"], header.get("bits", ()))
    exe.blob = bytes(blob)
    return exe


def hlo_text(exe: Executable) -> str:
    """The optimized HLO module(s) XLA compiled."""
    loaded = exe.loaded
    if hasattr(loaded, "get_hlo_text"):
        return loaded.get_hlo_text()
    return "\n".join(m.to_string() for m in loaded.hlo_modules())


def xla_cost_analysis(exe: Executable) -> dict:
    """XLA's own cost estimate of a compiled executable (``flops``, ``transcendentals``,
    ``bytes accessed``, ...), or an empty dict where this jaxlib does not report one."""
    try:
        out = exe.loaded.cost_analysis()
    except Exception:   # not every jaxlib build or backend implements it
        return {}
    if isinstance(out, (list, tuple)):
        out = out[0] if out else {}
    return dict(out or {})


def xla_memory_analysis(exe: Executable) -> dict:
    """XLA's buffer assignment of a compiled executable, in bytes: ``argument``, ``output``,
    ``alias``, ``temp`` (the buffers live during a run besides arguments and outputs, e.g.
    the values stored for a backward pass) and ``generated_code``; empty where this jaxlib
    does not report it. (``bench/remat_memory.py`` reports it.)"""
    try:
        st = exe.loaded.get_compiled_memory_stats()
    except Exception:   # not every jaxlib build or backend implements it
        return {}
    return {k: int(getattr(st, f"{k}_size_in_bytes"))
            for k in ("argument", "output", "alias", "temp", "generated_code")
            if hasattr(st, f"{k}_size_in_bytes")}
