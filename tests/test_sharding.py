"""Shardings over four CPU devices (``dynjax.sharding``, sharded ``qjit``, ``device_put``):
the checks in ``sharding_cases.py`` run in a process of their own, since the number of
devices is fixed when a process first uses XLA."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import device_cases  # noqa: E402
import sharding_cases  # noqa: E402  (only its case names: the checks run in the subprocess)

# a four-device process running every sharding case: the slow set
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results():
    return device_cases.run(os.path.join(HERE, "sharding_cases.py"))


@pytest.mark.parametrize("name", list(sharding_cases.CASES))
def test_sharding_case(results, name):
    assert name in results, sorted(results)
    assert results[name] is None, results[name]

