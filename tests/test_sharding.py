"""Shardings over four CPU devices (``dynjax.sharding``, sharded ``qjit``, ``device_put``):
the checks in ``sharding_cases.py`` run in a process of their own, since the number of
devices is fixed when a process first uses XLA."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sharding_cases  # noqa: E402  (only its case names: the checks run in the subprocess)

# a four-device process running every sharding case: the slow set
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(HERE), "frontend"),
                                          os.path.dirname(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, os.path.join(HERE, "sharding_cases.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", list(sharding_cases.CASES))
def test_sharding_case(results, name):
    assert name in results, sorted(results)
    assert results[name] is None, results[name]

