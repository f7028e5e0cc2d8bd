"""Checks that need several XLA devices: they run in a process of their own (the number of
devices is fixed when a process first uses XLA). A cases module (``sharding_cases.py``,
``shard_map_uneven_cases.py``) defines ``CASES`` (name -> function) and ends with
``device_cases.main(CASES)``; its test module's fixture calls ``run`` on it and gets, per
case, None or the traceback of its failure."""
import json
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def run(script: str, timeout: float = 600) -> dict:
    """Run the cases module ``script`` in a fresh process; its results by case name."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(HERE), "frontend"),
                                          os.path.dirname(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def main(cases: dict, devices: int = 4) -> None:
    """In the cases module's process: ``devices`` CPU devices, every case run, the results
    written to stdout as JSON."""
    os.environ["DYNJAX_NUM_CPU_DEVICES"] = str(devices)   # before the first use of XLA here
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + f" --xla_force_host_platform_device_count={devices}")
    os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")
    results = {}
    for name, fn in cases.items():
        try:
            fn()
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc()
    sys.stdout.write(json.dumps(results))
