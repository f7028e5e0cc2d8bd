"""Runs the lit + FileCheck suite (lit_tests/) as one pytest test.

The per-test counts are reported by conftest.py as a plain ``N passed, N failed`` line.
"""
import os
import re
import subprocess
import sys
import pytest

# the lit suite, one process per file: the slow set (pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIT_RESULTS = {}


def test_lit_suite():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([sys.executable, "-c", "import lit.main; lit.main.main()", "-v",
                           os.path.join(ROOT, "lit_tests")],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    passed = len(re.findall(r"^PASS: ", out, re.M))
    failed = len(re.findall(r"^(?:FAIL|XPASS|UNRESOLVED): ", out, re.M))
    LIT_RESULTS.update(passed=passed, failed=failed)
    assert passed > 0, out
    assert proc.returncode == 0 and failed == 0, out
