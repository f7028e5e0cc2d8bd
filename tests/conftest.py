"""pytest configuration: report the lit suite's counts next to pytest's own summary (also when
pytest-xdist runs the tests in worker processes: the worker that ran the lit suite hands its
counts over); hypothesis
profiles (``ci``, the default, draws the same examples on every run, so a red build is
reproducible; ``HYPOTHESIS_PROFILE=explore`` draws new ones each time, ``quick`` a quarter of
the examples, ``thorough`` ten times as many, new ones each time)."""
import os
import sys

import pytest
from hypothesis import settings

# Speculative background compiles (the next size bucket of every program, queued after its
# first call) pay off for a program that meets many sizes; most tests call a program at one or
# two sizes, and those compiles were a third of the suite's CPU time. The tier tests turn them
# back on (the ``compile_ahead`` fixture); test_tiers also re-runs other suites padded.
os.environ.setdefault("DYNJAX_COMPILE_AHEAD", "0")

# A cheap program's new sizes run eagerly until their eager runs have taken as long as a compile
# (execution/tiers.py, DYNJAX_EAGER_UNTIL_PAID): which tier serves a call then depends on how
# fast the machine ran the earlier ones. Most tests check the compiled programs, and the tier
# tests the buckets, so the suite queues a bucket at its first size; test_tiers turns the rule
# on (the ``eager_until_paid`` fixture) with the price of a compile pinned.
os.environ.setdefault("DYNJAX_EAGER_UNTIL_PAID", "0")

# The host tier (execution/host_tier.py) runs programs too small for XLA as numpy calls, and
# most tests call their programs at a few elements: with it on, they would check numpy rather
# than the compiled program. So the suite compiles; test_host_tier turns the tier on, and the
# doc pages and the lit tests run with it, as a user's process does.
os.environ.setdefault("DYNJAX_HOST_TIER", "off")

# XLA's CPU fusion emitters (its default) spend 2-3x longer compiling a program of a few hundred
# ops than its older emitters (a test_grad group: 6.7 s against 2.1 s), and compiling is most of
# the suite's time, jax's compiles of expected values included. So the suite's processes compile
# with the older emitters (XLA reads XLA_FLAGS once per process, before any client exists);
# tests of ulp-level numerics take XLA's defaults back for dynjax's compiles (the ``xla_defaults``
# fixture, through ``DYNJAX_XLA_OPTIONS``), and the doc pages (tests/doc_pages.py), the benchmarks
# and the quick start run with XLA's defaults, as a user does. DYNJAX_TEST_XLA_DEFAULTS=1 runs
# the whole suite with XLA's defaults.
# LLVM's optimization passes and code generation are about half of a small program's compile;
# at optimization level 0 the suite's programs (a few elements to a few thousand) compile a
# third faster, and run a little slower, which they have time for.
SUITE_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0"
if os.environ.get("DYNJAX_TEST_XLA_DEFAULTS", "") in ("", "0") and \
        "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SUITE_XLA_FLAGS).strip()

# jax's compiles of expected values repeat: tests build the same jax function at the same
# shapes again and again (test_dims_through_transforms: 1,098 compiles of 418 distinct
# programs). jax's persistent compilation cache, in a directory private to this run and shared
# by its worker processes, compiles each once. The controller makes the directory (the workers
# inherit its name) and removes it at the end.
_JAX_CACHE_ENV = "DYNJAX_TEST_JAX_CACHE_DIR"
_OWN_JAX_CACHE = None
if not os.environ.get(_JAX_CACHE_ENV):
    import tempfile
    _OWN_JAX_CACHE = tempfile.mkdtemp(prefix="dynjax-test-jax-cache-")
    os.environ[_JAX_CACHE_ENV] = _OWN_JAX_CACHE

# The disk cache stays off: the suite's ~9,000 programs are all distinct, so it served no hits
# and its writes (serializing each executable, rescanning a directory of thousands of entries)
# cost about 4% of the run. The cache's own tests turn it on in a directory of their own, and
# the doc pages run with it as a user's process does.
os.environ.setdefault("DYNJAX_DISABLE_DISK_CACHE", "1")

# Each property test asks for ``examples(n)`` (tests/helpers.py): n scaled by the active
# profile's ``max_examples`` / 100, so one setting chooses the depth of the whole suite.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, max_examples=100)
settings.register_profile("quick", settings.get_profile("ci"), max_examples=25)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True, max_examples=100)
settings.register_profile("thorough", settings.get_profile("explore"), max_examples=1000)
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


def _use_jax_compilation_cache():
    try:
        import jax
    except ImportError:   # jax is a test extra; the tests that need it import it themselves
        return
    jax.config.update("jax_compilation_cache_dir", os.environ[_JAX_CACHE_ENV])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    if _OWN_JAX_CACHE is not None:
        import shutil
        shutil.rmtree(_OWN_JAX_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # the slow set first: its tests (up to a minute and a half each) then start while the
    # other worker takes the short ones, instead of one running alone at the end of the run
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_configure(config):
    _use_jax_compilation_cache()
    # every program checked by helpers.check_three_ways also runs compiled with qjit
    import helpers
    from compiled import run_compiled
    helpers.WAYS["compiled"] = run_compiled


@pytest.fixture(autouse=True, scope="module")
def _release_jax_executables():
    """After each test module, drop jax's compiled programs. The comparison tests call jax at
    many shapes and jax keeps every executable it compiled (test_fft alone left 472, ~600 MB):
    kept over a whole run, a worker grew to 5 GB. dynjax's own caches belong to the functions
    the tests make and go with them. No forced garbage collection after it: it cost ~0.35 s a
    module (~4% of the run), and the largest process peaked at 3.0 GB with it, 3.2 GB
    without."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()


@pytest.fixture
def exact_tier(monkeypatch):
    """Pin the exact-size tier (``DYNJAX_TIERS=exact``): for tests of its compile counts and
    executable caches, which the padded tier (one executable per size bucket) would change."""
    monkeypatch.setenv("DYNJAX_TIERS", "exact")


@pytest.fixture
def compile_ahead(monkeypatch):
    """Speculative bucket compiles on, as in a user's process (``DYNJAX_COMPILE_AHEAD``)."""
    monkeypatch.setenv("DYNJAX_COMPILE_AHEAD", "1")


@pytest.fixture
def eager_until_paid(monkeypatch):
    """Cheap new sizes run eagerly until that has cost a compile (``DYNJAX_EAGER_UNTIL_PAID``),
    as in a user's process; the returned function pins the price of a compile (seconds)."""
    from dynjax.execution.segment import Segment
    monkeypatch.setenv("DYNJAX_EAGER_UNTIL_PAID", "1")
    price = [None]
    real = Segment._compile_cost
    monkeypatch.setattr(Segment, "_compile_cost",
                        lambda self: real(self) if price[0] is None else price[0])

    def pin(seconds):
        price[0] = seconds
    return pin


@pytest.fixture
def xla_defaults(monkeypatch):
    """dynjax compiles with XLA's default emitters and optimization level, as in a user's
    process (the suite's XLA_FLAGS choose the older emitters and no LLVM optimization, which
    compile faster but may round some functions differently in the last bit)."""
    from helpers import XLA_DEFAULT_OPTIONS
    monkeypatch.setenv("DYNJAX_XLA_OPTIONS", ",".join(
        f"{name}={str(value).lower()}" for name, value in XLA_DEFAULT_OPTIONS.items()))
