"""pytest configuration: report the lit suite's counts next to pytest's own summary."""


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
