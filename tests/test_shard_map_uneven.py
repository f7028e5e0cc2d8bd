"""``shard_map`` over a dynamic dimension its blocks do not divide (blocks of ceil(n / t)
rows, the last ones shorter or empty): the checks in ``shard_map_uneven_cases.py`` run in a
four-device process of their own (the number of devices is fixed when a process first uses
XLA), about 10 s."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import device_cases  # noqa: E402
import shard_map_uneven_cases  # noqa: E402  (only its case names: the checks run in the subprocess)

# a four-device process of its own, as the other multi-device tests: the slow set
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results():
    return device_cases.run(os.path.join(HERE, "shard_map_uneven_cases.py"))


@pytest.mark.parametrize("name", list(shard_map_uneven_cases.CASES))
def test_uneven_case(results, name):
    assert name in results, sorted(results)
    assert results[name] is None, results[name]
