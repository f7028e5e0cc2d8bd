"""One training step on 1, 2 and 4 CPU devices and in 2 processes (issue 24).

    pip install -e ".[bench]" && python bench/devices.py [--steps 20]

The program: the gradient of a 2-layer MLP's squared loss (512 -> 512 -> 10, float32...
float64 here, as dynjax's default) and an SGD update, on a batch of 8,192 rows and on a
*dynamic* batch of 8,191 (which 2 and 4 devices do not divide: dynjax pads it per device and
masks it). The batch is split over the devices (``in_shardings``), the weights replicated.
Each configuration runs in a process of its own (the device count is fixed when a process
first uses XLA), beside ``jax.jit`` with the same shardings where jax is installed (jax
needs a batch the devices divide: it gets 8,192). The same step written per device with
``shard_map`` (each device's gradient of its share of the loss, ``psum``-ed: a per-device
program with an ``all_reduce``) runs on the dynamic batch at 8,192 and at 8,191 (blocks of
2,048 rows, the last one 2,047 on 4 devices), checked equal to the plain step. Printed: milliseconds per step (median of
``--steps``) and the ratio to one device. On this 2-core machine more devices cannot be
faster; the number to read is the overhead of partitioning at the same core count.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
IN, HID, OUT = 512, 512, 10


def _params(rng, np):
    return (rng.standard_normal((IN, HID)) / IN ** 0.5, rng.standard_normal((HID, OUT)) / HID ** 0.5)


def _loss(jnp, params, x, y):
    w1, w2 = params
    return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)


def _time(fn, steps):
    fn()
    fn()
    ts = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def worker(devices: int, steps: int, address=None, process_id=0, processes=1):
    """Run in a fresh process: the step times for this device count, as JSON on stdout."""
    os.environ["DYNJAX_NUM_CPU_DEVICES"] = str(devices)
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")
    import numpy as np
    import dynjax
    import dynjax.numpy as dnp
    from dynjax.sharding import NamedSharding, PartitionSpec as P
    if processes > 1:
        dynjax.distributed.initialize(address, processes, process_id, initialization_timeout=60)
    rng = np.random.default_rng(0)
    params = _params(rng, np)
    out = {}
    mesh = dynjax.make_mesh((dynjax.device_count(),), ("batch",))
    rows = NamedSharding(mesh, P("batch"))

    def dj_step(params, x, y):
        g = dynjax.grad(lambda p: _loss(dnp, p, x, y))(params)
        return tuple(w - 0.01 * gw for w, gw in zip(params, g))
    shard = dynjax.device_count() > 1
    step = dynjax.qjit(dj_step, abstracted_axes=({}, {0: "n"}, {0: "n"}),
                       in_shardings=(None, rows, rows) if shard else None)
    for n in (8192, 8191):
        x, y = rng.standard_normal((n, IN)), rng.standard_normal((n, OUT))
        out[f"dynjax_{n}"] = _time(lambda: step(params, x, y), steps)

    def device_grads(params, x, y):
        # one device's rows (blocks of ceil(n / devices) rows, the last ones shorter): the
        # gradient of its share of the mean over every row, summed over the devices
        n = dynjax.lax.psum(x.shape[0], "batch")

        def share(p):
            w1, w2 = p
            return dnp.sum((dnp.tanh(x @ w1) @ w2 - y) ** 2) / (n * OUT)
        return tuple(dynjax.lax.psum(gw, "batch") for gw in dynjax.grad(share)(params))
    grads = dynjax.shard_map(device_grads, mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())

    def sm_step(params, x, y):
        return tuple(w - 0.01 * gw for w, gw in zip(params, grads(params, x, y)))
    sm = dynjax.qjit(sm_step, abstracted_axes=({}, {0: "n"}, {0: "n"}),
                     in_shardings=(None, rows, rows) if shard else None)
    agree = True
    for n in (8192, 8191):
        x, y = rng.standard_normal((n, IN)), rng.standard_normal((n, OUT))
        out[f"shard_map_{n}"] = _time(lambda: sm(params, x, y), steps)
        agree &= bool(all(np.allclose(a, b, rtol=1e-9) for a, b in zip(sm(params, x, y), step(params, x, y))))
    out["shard_map_agrees"] = agree
    if processes == 1:
        try:
            import jax
            import jax.numpy as jjnp
            from jax.sharding import NamedSharding as JNS, PartitionSpec as JP
        except ImportError:
            jax = None
        if jax is not None:
            jax.config.update("jax_enable_x64", True)
            jmesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
            jrows, jrep = JNS(jmesh, JP("batch")), JNS(jmesh, JP())

            def jx_step(params, x, y):
                g = jax.grad(lambda p: _loss(jjnp, p, x, y))(params)
                return tuple(w - 0.01 * gw for w, gw in zip(params, g))
            jstep = jax.jit(jx_step, in_shardings=((jrep, jrep), jrows, jrows))
            x, y = rng.standard_normal((8192, IN)), rng.standard_normal((8192, OUT))
            xs, ys = jax.device_put(x, jrows), jax.device_put(y, jrows)
            ps = jax.device_put(params, jrep)
            out["jax_8192"] = _time(lambda: jax.block_until_ready(jstep(ps, xs, ys)), steps)
            got = step(params, x, y)
            ref = jstep(ps, xs, ys)
            out["agree"] = bool(all(np.allclose(a, np.asarray(b), rtol=1e-9) for a, b in zip(got, ref)))
    if processes > 1:
        dynjax.distributed.shutdown()
    sys.stdout.write("\nRESULT " + json.dumps(out) + "\n")


def _run(args, env=None):
    p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, capture_output=True, text=True,
                       timeout=900, env=env)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if p.returncode != 0 or not line:
        raise RuntimeError(f"{args} failed:\n{p.stderr[-3000:]}")
    return json.loads(line[-1][len("RESULT "):])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--address", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--process", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--processes", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.worker, a.steps, a.address, a.process, a.processes)
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    rows = {}
    for d in (1, 2, 4):
        rows[f"{d} device(s)"] = _run(["--worker", str(d), "--steps", str(a.steps)])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "1", "--steps", str(a.steps),
                               "--address", address, "--process", str(k), "--processes", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    line = [x for x in outs[0][0].splitlines() if x.startswith("RESULT ")]
    if line:
        rows["2 processes x 1 device"] = json.loads(line[-1][len("RESULT "):])
    else:
        print("the two-process run failed:", outs[0][1][-2000:])
    base = rows["1 device(s)"]
    print("| configuration | dynjax, batch 8192 | ratio | dynjax, batch 8191 (dynamic) | ratio | "
          "shard_map, 8192 (dynamic) | ratio | shard_map, 8191 (dynamic) | ratio | jax.jit, 8192 | ratio | "
          "dynjax = jax |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in rows.items():
        j = r.get("jax_8192")
        print(f"| {name} | {r['dynjax_8192']:.1f} ms | {r['dynjax_8192'] / base['dynjax_8192']:.2f}x | "
              f"{r['dynjax_8191']:.1f} ms | {r['dynjax_8191'] / base['dynjax_8191']:.2f}x | "
              f"{r['shard_map_8192']:.1f} ms | {r['shard_map_8192'] / base['shard_map_8192']:.2f}x | "
              f"{r['shard_map_8191']:.1f} ms | {r['shard_map_8191'] / base['shard_map_8191']:.2f}x | "
              + (f"{j:.1f} ms | {j / base['jax_8192']:.2f}x | {r.get('agree')} |" if j else "— | — | — |"))
    print("shard_map step = the plain step:", all(r.get("shard_map_agrees") for r in rows.values()))
    print(f"\nload average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
