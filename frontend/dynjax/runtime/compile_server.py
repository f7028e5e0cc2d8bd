"""A process that compiles for a forked child (see ``xla._after_fork_in_child``).

XLA's compiler keeps a process-wide alarm thread for slow compilations; after ``fork`` the
child has the alarm's condition variable but not its thread, and its first compile hangs or
aborts. A child of a process that compiled therefore sends each module to a server: a fresh
Python process (``python -m dynjax.runtime.compile_server``, started by ``start`` on the
child's first compile and ending when the child closes its pipe) that compiles it with its
own client and answers with the serialized executable, which the child loads with its own
client (loading works after fork; compiling does not).

Protocol, on the server's stdin / stdout: a request is ``b"C"``, the module's length (u64
little endian) and the module (MLIR text or bytecode); the answer is ``b"K"`` or ``b"E"``,
a length and the serialized executable (``xla.serialize``) or the error message.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys

_LEN = struct.Struct("<Q")


def start() -> subprocess.Popen:
    """Start a compile server that imports dynjax from the same places as this process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    return subprocess.Popen([sys.executable, "-m", "dynjax.runtime.compile_server"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)


def request(server: subprocess.Popen, module: bytes):
    """Send one module; returns ``(True, serialized executable)`` or ``(False, message)``."""
    try:
        server.stdin.write(b"C" + _LEN.pack(len(module)) + module)
        server.stdin.flush()
        kind = _read(server.stdout, 1)
        payload = _read(server.stdout, _LEN.unpack(_read(server.stdout, _LEN.size))[0])
    except (OSError, EOFError) as e:
        raise RuntimeError(f"the compile server of this forked process failed: {e}") from None
    return kind == b"K", payload


def _read(stream, n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise EOFError("the compile server closed its pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def main() -> None:
    """Serve compile requests until stdin closes."""
    from . import xla
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            kind = _read(inp, 1)
            module = _read(inp, _LEN.unpack(_read(inp, _LEN.size))[0])
        except EOFError:
            return
        if kind != b"C":
            return
        if not module.startswith(b"ML\xefR"):   # MLIR text, not bytecode
            module = module.decode()
        try:
            answer = b"K", xla.serialize(xla.compile(module))
        except Exception as e:   # reported to the client, which raises it
            answer = b"E", str(e).encode()
        out.write(answer[0] + _LEN.pack(len(answer[1])) + answer[1])
        out.flush()


if __name__ == "__main__":
    main()
