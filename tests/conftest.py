"""pytest configuration: report the lit suite's counts next to pytest's own summary; hypothesis
profiles (``ci``, the default, draws the same examples on every run, so a red build is
reproducible; ``HYPOTHESIS_PROFILE=explore`` draws new ones each time)."""
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter):
    from test_lit import LIT_RESULTS
    if LIT_RESULTS:
        terminalreporter.write_line(
            f"lit: {LIT_RESULTS['passed']} passed, {LIT_RESULTS['failed']} failed")
        terminalreporter.write_line(f"{LIT_RESULTS['passed']} passed, {LIT_RESULTS['failed']} failed")


def pytest_configure(config):
    # every program checked by helpers.check_three_ways also runs compiled with qjit
    import helpers
    from compiled import run_compiled
    helpers.WAYS["compiled"] = run_compiled


@pytest.fixture
def exact_tier(monkeypatch):
    """Pin the exact-size tier (``DYNJAX_TIERS=exact``): for tests of its compile counts and
    executable caches, which the padded tier (one executable per size bucket) would change."""
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
