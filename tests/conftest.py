"""pytest configuration: report the lit suite's counts next to pytest's own summary (also when
pytest-xdist runs the tests in worker processes: the worker that ran the lit suite hands its
counts over); hypothesis
profiles (``ci``, the default, draws the same examples on every run, so a red build is
reproducible; ``HYPOTHESIS_PROFILE=explore`` draws new ones each time)."""
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_sessionfinish(session):
    # in a pytest-xdist worker: hand the lit counts to the controller, which prints them
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        from test_lit import LIT_RESULTS
        if LIT_RESULTS:
            out["lit"] = dict(LIT_RESULTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    # pytest-xdist, in the controller: a worker finished; keep the lit counts it ran
    from test_lit import LIT_RESULTS
    lit = getattr(node, "workeroutput", {}).get("lit")
    if lit:
        LIT_RESULTS.update(lit)


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
