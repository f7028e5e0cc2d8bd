"""pytest configuration: report the lit suite's counts next to pytest's own summary."""


def pytest_terminal_summary(terminalreporter):
    from test_lit import LIT_RESULTS
    if LIT_RESULTS:
        terminalreporter.write_line(
            f"lit: {LIT_RESULTS['passed']} passed, {LIT_RESULTS['failed']} failed")
        terminalreporter.write_line(f"{LIT_RESULTS['passed']} passed, {LIT_RESULTS['failed']} failed")
