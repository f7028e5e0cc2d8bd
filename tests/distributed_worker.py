"""One process of the two-process test (``tests/test_distributed.py``): joins the run,
computes a sharded program over the four devices of both processes, prints its results as
JSON. Usage: ``distributed_worker.py ADDRESS NUM_PROCESSES PROCESS_ID [die]``: with ``die``,
process 1 exits abruptly after joining, and process 0 must fail, not hang."""
import json
import os
import sys

os.environ["DYNJAX_NUM_CPU_DEVICES"] = "2"
os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")

import numpy as np  # noqa: E402

import dynjax  # noqa: E402
import dynjax.numpy as jnp  # noqa: E402
from dynjax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402


def main(address, num_processes, process_id, die=False):
    dynjax.distributed.initialize(address, num_processes, process_id, initialization_timeout=60,
                                  heartbeat_timeout=5)
    if die and process_id == 1:
        os._exit(3)
    out = {"process_index": dynjax.process_index(), "process_count": dynjax.process_count(),
           "devices": [d.id for d in dynjax.devices()], "local": [d.id for d in dynjax.local_devices()]}
    mesh = dynjax.make_mesh((4,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    rng = np.random.default_rng(0)          # the same arrays in both processes
    w = rng.standard_normal((3, 5))
    f = dynjax.qjit(lambda x, w: (x @ w, jnp.sum(x ** 2)), abstracted_axes=({0: "n"}, {}),
                    in_shardings=(rows, None))
    for n in (1, 8, 13):
        x = rng.standard_normal((n, 3))
        y, s = f(x, w)
        out[f"matmul_{n}"] = bool(np.allclose(y, x @ w, rtol=1e-12))
        out[f"sum_{n}"] = bool(np.allclose(s, np.sum(x ** 2), rtol=1e-12))
    # a shard_map whose psum crosses the processes: rows over both processes, columns within one
    mesh2 = dynjax.make_mesh((2, 2), ("proc", "dev"))
    mm = dynjax.shard_map(lambda x, w: dynjax.lax.psum(x @ w, "dev"), mesh=mesh2,
                          in_specs=(P("proc", "dev"), P("dev", None)), out_specs=P("proc", None))
    g = dynjax.qjit(mm, abstracted_axes=({0: "n"}, {}),
                    in_shardings=(NamedSharding(mesh2, P("proc", "dev")), None))
    w2 = rng.standard_normal((4, 3))
    for n in (2, 10):
        x = rng.standard_normal((n, 4))
        out[f"shard_map_{n}"] = bool(np.allclose(g(x, w2), x @ w2, rtol=1e-12))
    total = dynjax.qjit(lambda x: dynjax.shard_map(lambda b: dynjax.lax.psum(b.sum(), ("proc", "dev")), mesh=mesh2,
                                                   in_specs=P(("proc", "dev")), out_specs=P())(x),
                        in_shardings=NamedSharding(mesh2, P(("proc", "dev"))))
    v = np.arange(8.0)
    out["psum_all"] = float(total(v)) == 28.0
    dynjax.distributed.shutdown()
    sys.stdout.write("\nRESULT " + json.dumps(out) + "\n")   # gloo prints to stdout too


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), die=sys.argv[4:] == ["die"])
