"""Compiles you can watch: the ``DYNJAX_LOG=compile`` lines (durations, sizes, reasons), the
progress line of a slow compile on stderr (once; never with ``DYNJAX_LOG=none``; nothing for
fast compiles), ``dynjax.explain(f)`` and the readable ``Stats`` / ``cache_info()``."""
import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import dynjax
import dynjax.numpy as jnp
from dynjax import qjit
from dynjax.execution import compile_log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECONDS = r"\d+\.\d+ s"


def _equations(jaxpr) -> int:
    """The test's own count: equations, and those of every nested jaxpr, recursively."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for p in eqn.params.values():
            for x in (p if isinstance(p, tuple) else (p,)):
                if isinstance(x, dynjax.Jaxpr):
                    n += _equations(x)
    return n


def _run(script: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "frontend"), ROOT]),
                DYNJAX_DISABLE_DISK_CACHE="1", **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full,
                          capture_output=True, text=True, timeout=300)


PROGRAM = """
    import numpy as np
    import dynjax, dynjax.numpy as jnp
    from dynjax import qjit
    from dynjax.execution import tiers

    @qjit(abstracted_axes={0: "n"})
    def step(x):
        def body(i, c):
            return c * 0.5 + jnp.sin(c)
        return jnp.sum(dynjax.lax.fori_loop(0, 3, body, x * 2.0))
"""


def test_compile_log_lines_have_durations_sizes_and_reasons():
    script = PROGRAM + """
    import os
    for n in (3, 3, 5):
        step(np.ones(n))
    step(np.ones(4, np.float32))
    # the automatic tiers: the first size's bucket and the next one compile in the background
    os.environ["DYNJAX_TIERS"] = "auto"
    os.environ["DYNJAX_COMPILE_AHEAD"] = "1"
    again = qjit(abstracted_axes={0: "n"})(step.fun)
    again(np.ones(3))
    tiers.wait_for_background()
    """
    out = _run(script, DYNJAX_LOG="compile", DYNJAX_TIERS="exact", DYNJAX_SLOW_COMPILE_SECONDS="-1")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("[dynjax.compile]")]
    assert len(lines) == len(out.stderr.splitlines()), out.stderr   # nothing else on stderr
    fg = [ln for ln in lines if "in the background" not in ln]
    traces = [ln for ln in fg if ln.startswith("[dynjax.compile] trace step")]
    lowers = [ln for ln in fg if ln.startswith("[dynjax.compile] lower step")]
    compiles = [ln for ln in fg if ln.startswith("[dynjax.compile] compile step")]
    assert len(traces) == 3 and len(lowers) == 3 and len(compiles) == 4, out.stderr
    assert re.fullmatch(rf"\[dynjax.compile\] trace step \[\(f64\[\?\]\)\]: {SECONDS}, \d+ equations; "
                        r"reason: first call", traces[0]), traces[0]
    assert re.fullmatch(rf"\[dynjax.compile\] trace step \[\(f32\[\?\]\)\]: {SECONDS}, \d+ equations; "
                        r"reason: argument 0 \(x\): dtype float64 -> float32", traces[1]), traces[1]
    assert re.fullmatch(rf"\[dynjax.compile\] lower step \[dynamic shapes\]: {SECONDS}, \d+ equations, "
                        r"\d+ StableHLO ops", lowers[0]), lowers[0]
    n = r"the size of n \(axis 0 of argument 0\)"
    assert re.fullmatch(rf"\[dynjax.compile\] compile step \[exact: {n} = 3\]: {SECONDS}, \d+ equations, "
                        rf"\d+ StableHLO ops; reason: first compile, {n} = 3", compiles[0]), compiles[0]
    assert re.fullmatch(rf"\[dynjax.compile\] compile step \[exact: {n} = 5\]: {SECONDS}, \d+ equations, "
                        rf"\d+ StableHLO ops; reason: {n} = 5 \(compiled before: 3\)", compiles[1]), compiles[1]
    # background compiles: which bucket, on which thread, and why
    background = [ln for ln in lines if ln.startswith("[dynjax.compile] compile step")
                  and "in the background" in ln]
    assert len(background) == 2, out.stderr
    for ln, bound in zip(sorted(background, key=lambda ln: int(re.search(r"<= (\d+)", ln).group(1))), (16, 32)):
        assert re.fullmatch(rf"\[dynjax.compile\] compile step \[bucket: {n} <= {bound}, in the background\]: "
                            rf"{SECONDS}, \d+ equations, \d+ StableHLO ops; reason: the next size bucket: "
                            rf"{n} <= {bound}", ln), ln
    # the trace's size is its equations counted through the loop body
    step = qjit(abstracted_axes={0: "n"})(lambda x: jnp.sum(dynjax.lax.fori_loop(
        0, 3, lambda i, c: c * 0.5 + jnp.sin(c), x * 2.0)))
    step(np.ones(3))
    expected = _equations(step.jaxpr.jaxpr)
    assert expected > len(step.jaxpr.jaxpr.eqns)   # a nested program is counted
    assert f", {expected} equations;" in traces[0]


def test_stablehlo_op_count():
    text = textwrap.dedent("""\
        module @m {
          func.func public @main(%arg0: tensor<3xf64>) -> tensor<f64> {
            %0 = stablehlo.sine %arg0 : tensor<3xf64>
            %cst = stablehlo.constant dense<0.0> : tensor<f64>
            %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
            %2:2 = "stablehlo.while"(%1, %1) ({
              stablehlo.return %1, %1 : tensor<f64>, tensor<f64>
            }) : (tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>)
            %3 = chlo.erf %1 : tensor<f64> -> tensor<f64>
            return %1 : tensor<f64>
          }
        }
        """)
    # sine, constant, reduce, while, return, erf: the ops a line starts with
    assert compile_log.count_ops(text) == 6
    assert compile_log.count_ops("") == 0


def test_unknown_log_categories_are_named(monkeypatch, capsys):
    from dynjax.execution import explain
    monkeypatch.setenv("DYNJAX_LOG", "compiles")
    explain._configure()
    err = capsys.readouterr().err
    assert "DYNJAX_LOG has unknown categories ['compiles'] (known: recompiles, tiers, compile, all, none)" in err


@pytest.fixture
def held_compile(monkeypatch):
    """XLA compiles wait until the progress line has been printed (at most 60 s), so that a
    compile is slow for sure, whatever the machine; the lines still go to stderr."""
    printed = threading.Event()
    real_print, real_compile = compile_log._print, dynjax.runtime.compile_cached

    def recording_print(line):
        real_print(line)
        if line.startswith("dynjax: compiling"):
            printed.set()

    def slow_compile(*args, **kwargs):
        printed.wait(60)
        return real_compile(*args, **kwargs)
    monkeypatch.setattr(compile_log, "_print", recording_print)
    monkeypatch.setattr(dynjax.runtime, "compile_cached", slow_compile)
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    return printed


def test_progress_line_of_a_slow_compile_once(held_compile, monkeypatch, capfd):
    monkeypatch.setenv("DYNJAX_SLOW_COMPILE_SECONDS", "0.2")

    @qjit(abstracted_axes={0: "n"})
    def slow(x):
        return jnp.cumsum(x) * 2.0

    x = np.arange(5.0)
    np.testing.assert_allclose(slow(x), np.cumsum(x) * 2.0)
    assert held_compile.is_set()
    err = capfd.readouterr().err
    started = [ln for ln in err.splitlines() if ln.startswith("dynjax: compiling slow")]
    finished = [ln for ln in err.splitlines() if ln.startswith("dynjax: compiled slow")]
    assert len(started) == 1 and len(finished) == 1, err
    assert re.fullmatch(r"dynjax: compiling slow \(exact: the size of n \(axis 0 of argument 0\) = 5, "
                        r"\d+ equations, \d+ StableHLO ops\) for \d+\.\d s; waiting for XLA \.\.\.",
                        started[0]), started[0]
    assert re.fullmatch(rf"dynjax: compiled slow in {SECONDS}", finished[0]), finished[0]
    assert err.index(started[0]) < err.index(finished[0])
    # a cache hit compiles nothing and prints nothing
    np.testing.assert_allclose(slow(x), np.cumsum(x) * 2.0)
    assert capfd.readouterr().err == ""


def test_progress_line_quiet_with_log_none(monkeypatch, capfd):
    monkeypatch.setenv("DYNJAX_SLOW_COMPILE_SECONDS", "0")
    monkeypatch.setenv("DYNJAX_LOG", "none")
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")
    real_compile = dynjax.runtime.compile_cached
    seen = []

    def slow_compile(*args, **kwargs):   # outlasts the threshold for sure: the watcher had its turn
        seen.append(compile_log._watcher().thread)
        threading.Event().wait(0.3)
        return real_compile(*args, **kwargs)
    monkeypatch.setattr(dynjax.runtime, "compile_cached", slow_compile)

    @qjit
    def quiet(x):
        return x * 3.0
    np.testing.assert_allclose(quiet(np.arange(4.0)), np.arange(4.0) * 3.0)
    assert seen and capfd.readouterr().err == ""


def test_fast_compiles_print_nothing(monkeypatch, capfd):
    monkeypatch.delenv("DYNJAX_SLOW_COMPILE_SECONDS", raising=False)
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")

    @qjit
    def fast(x):
        return x + 1.0
    np.testing.assert_allclose(fast(np.zeros(2)), np.ones(2))
    assert capfd.readouterr().err == ""


def test_bad_threshold_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DYNJAX_SLOW_COMPILE_SECONDS", "soon")
    with pytest.raises(ValueError, match="DYNJAX_SLOW_COMPILE_SECONDS must be a number of seconds, got 'soon'"):
        qjit(lambda x: x + 2.0)(np.zeros(2))


def test_explain_counts_what_happened(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    monkeypatch.setenv("DYNJAX_DISABLE_DISK_CACHE", "1")

    @qjit(abstracted_axes={0: "n"})
    def total(x):
        return jnp.sum(x * x)
    for n in (0, 1, 5, 5, 1):
        x = np.arange(float(n))
        np.testing.assert_allclose(total(x), np.sum(x * x))
    total(np.ones(3, np.float32))
    text = dynjax.explain(total)
    assert text == total.explain()
    lines = text.splitlines()
    n = "the size of n (axis 0 of argument 0)"
    assert lines[0] == "total: 6 calls, 2 traces, 2 cached:"
    assert re.fullmatch(r"  \(f64\[n\]\) -> f64\[\]: \d+ equations", lines[1]), lines[1]
    assert lines[2] == f"    exact sizes: 3 ({n} = 0, 1, 5)"
    assert lines[3] == "    padded size buckets: 0"
    assert re.fullmatch(r"  \(f32\[n\]\) -> f32\[\]: \d+ equations", lines[4]), lines[4]
    assert lines[5] == f"    exact sizes: 1 ({n} = 3)"
    assert lines[6] == "    padded size buckets: 0"
    assert lines[7] == "  compiled in the background: 0 (0 exact executables for recurring sizes; 0 waiting, 0 dropped)"
    assert re.fullmatch(rf"  time: tracing {SECONDS}, lowering {SECONDS}, XLA compiling {SECONDS}", lines[8]), lines[8]
    assert lines[9] == "  runs: 6 exact, 0 padded, 0 eager (numpy, while a bucket compiled)"
    assert lines[10] == "  trace cache: 4 hits, 2 misses"
    assert lines[11] == "  executable cache: 4 XLA compiles, 0 disk cache hits"
    assert len(lines) == 12
    s = total.stats
    assert s.compile_seconds > 0 and s.trace_seconds > 0 and s.lowering_seconds > 0
    with pytest.raises(TypeError, match="explain: f must be a function made by dynjax.qjit"):
        dynjax.explain(lambda x: x)


def test_explain_lists_padded_buckets(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "padded")

    @qjit(abstracted_axes={0: "n"})
    def double(x):
        return x * 2.0
    for n in (1, 5, 20):
        np.testing.assert_allclose(double(np.arange(float(n))), np.arange(float(n)) * 2.0)
    lines = double.explain().splitlines()
    assert lines[3] == "    padded size buckets: 2 (the size of n (axis 0 of argument 0) <= 16, 32)"
    assert lines[6] == "  runs: 0 exact, 3 padded, 0 eager (numpy, while a bucket compiled)"


def test_stats_and_cache_info_print_readably(monkeypatch):
    monkeypatch.setenv("DYNJAX_TIERS", "exact")
    f = qjit(lambda x: x - 1.0)
    f(np.zeros(2))
    f(np.zeros(2))
    info = f.cache_info()
    assert isinstance(info, dict) and info["calls"] == 2 and info["traces"] == 1 and info["exact_runs"] == 2
    assert repr(info).startswith("CacheInfo(calls=2, traces=1, inlined_traces=0, ")
    assert str(info).splitlines()[0] == "calls                    2"
    assert "exact_runs               2" in str(info).splitlines()
    assert repr(f.stats).startswith("Stats(<lambda>: lowerings=")
    lines = str(f.stats).splitlines()
    assert lines[0] == "compile statistics of <lambda>"
    assert "  exact_runs               2" in lines
    assert any(re.fullmatch(rf"  compile_seconds +{SECONDS}", ln) for ln in lines)


def test_progress_line_of_a_failing_compile(held_compile, monkeypatch, capfd):
    monkeypatch.setenv("DYNJAX_SLOW_COMPILE_SECONDS", "0.2")
    def failing_compile(*args, **kwargs):   # fails once the progress line is out
        held_compile.wait(60)
        raise ValueError("XLA failed to compile the module: out of memory")
    monkeypatch.setattr(dynjax.runtime, "compile_cached", failing_compile)

    @qjit
    def broken(x):
        return x * 4.0
    with pytest.raises(ValueError, match="out of memory"):
        broken(np.ones(2))
    err = capfd.readouterr().err.splitlines()
    assert [ln for ln in err if ln.startswith("dynjax: compiling broken")][0].endswith("waiting for XLA ...")
    failed = [ln for ln in err if "failed after" in ln]
    assert len(failed) == 1 and re.fullmatch(rf"dynjax: compiling broken failed after {SECONDS}", failed[0])
