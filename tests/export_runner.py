"""Child process of tests/test_export.py: load exported programs and call them, knowing
nothing of the functions they came from (this script imports only numpy and dynjax).

Usage: ``python export_runner.py manifest.json``. The manifest lists cases
``{"blob": path, "calls": [{"args": npz path, "out": npz path}]}``; each call's arguments
are the flat leaves ``a0, a1, ...`` in the args file (0-d arrays for scalars; the blob's
``in_tree`` gives them their structure), and its result's flat leaves
are written as ``r0, r1, ...`` to the out file. An exception is written as ``error`` (its
type and message) instead, so the parent can report it.
"""
import json
import sys

import numpy as np

import dynjax
from dynjax import export


def main(manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    assert not any(name.startswith("test_") for name in sys.modules), "the runner imported a test module"
    for case in manifest:
        with open(case["blob"], "rb") as f:
            exp = export.deserialize(f.read())
        for call in case["calls"]:
            with np.load(call["args"]) as data:
                leaves = [data[f"a{i}"] for i in range(len(data.files))]
            try:
                args, kwargs = exp.in_tree.unflatten(leaves)   # the structure the blob holds
                leaves, _ = dynjax.tree_flatten(exp.call(*args, **kwargs))
                np.savez(call["out"], **{f"r{i}": np.asarray(x) for i, x in enumerate(leaves)})
            except Exception as e:   # reported by the parent, with the case's name
                np.savez(call["out"], error=np.array(f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    main(sys.argv[1])
