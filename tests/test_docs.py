"""Every python block of README.md and doc/*.md runs as written, top to bottom per page, and
prints exactly what the page shows (the conventions: doc/writing_docs.md). One test per page,
each page in a fresh process; and tests of the checker itself, so that it can fail."""
import glob
import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from doc_pages import ROOT, compare, output_matches, pages, parse_page, run_blocks, run_page  # noqa: E402

PAGE_TIMEOUT = 300


@pytest.mark.parametrize("page", [os.path.relpath(p, ROOT) for p in pages()])
def test_page_runs_and_prints_what_it_shows(page):
    failures = run_page(os.path.join(ROOT, page), timeout=PAGE_TIMEOUT)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("script", sorted(os.path.relpath(p, ROOT) for p in
                                           glob.glob(os.path.join(ROOT, "examples", "*.py"))))
def test_example_script_runs(script):
    """The scripts in examples/ (README's quick start runs one) run to the end."""
    with tempfile.TemporaryDirectory(prefix="dynjax-example-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DYNJAX_")}
        env["DYNJAX_CACHE_DIR"] = os.path.join(tmp, "cache")
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "frontend"), ROOT])
        proc = subprocess.run([sys.executable, os.path.join(ROOT, script)], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=PAGE_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "the example printed nothing"


FAKE = '''# A page

<!-- doc-test: devices=2 -->

```python
x = 1 + 1
print(x)
```

```
2
```

```python
# not run: it needs a GPU
import nothing_such

# every page in a fresh process: the slow set (pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow
```

```python
# raises: ZeroDivisionError
print("before")
1 / 0
```
```
before
ZeroDivisionError: division by zero
```

- a list item:
  ```python
  print(x * 21)
  ```
  ```text
  42
  ```
'''


def test_the_parser_finds_blocks_outputs_and_markers():
    blocks = parse_page(FAKE)
    assert [b.number for b in blocks] == [1, 2, 3, 4]
    assert blocks[0].expected == ["2"] and blocks[0].line == 6
    assert blocks[1].skip_reason == "it needs a GPU" and blocks[1].expected is None
    assert blocks[2].raises == "ZeroDivisionError"
    assert blocks[2].expected == ["before", "ZeroDivisionError: division by zero"]
    assert blocks[3].source == "print(x * 21)\n" and blocks[3].expected == ["42"]


def test_a_right_page_passes():
    assert run_blocks("fake.md", parse_page(FAKE), {}) == []


def _one_failure(page):
    failures = run_blocks("fake.md", parse_page(page), {})
    assert len(failures) == 1, failures
    return failures[0]


def test_a_wrong_output_fails_and_says_where():
    failure = _one_failure("text\n\n```python\nprint(2 + 2)\n```\n```\n5\n```\n")
    assert "fake.md, block 1 (line 4)" in failure and "print(2 + 2)" in failure
    assert "--- the page shows:\n5\n--- it printed:\n4" in failure


def test_output_without_an_output_block_fails():
    assert "no output block follows" in _one_failure("```python\nprint(3)\n```\n")


def test_a_raises_block_that_does_not_raise_fails():
    failure = _one_failure("```python\n# raises: ValueError\nx = 1\n```\n")
    assert "expected to raise ValueError, but did not" in failure


def test_a_raises_block_with_another_exception_fails():
    failure = _one_failure("```python\n# raises: ValueError\n1 / 0\n```\n")
    assert "expected to raise ValueError" in failure and "ZeroDivisionError" in failure


def test_an_error_reports_the_page_line():
    failure = _one_failure("# t\n\n```python\nx = 1\ny = x / 0\n```\n")
    assert 'File "fake.md", line 5' in failure and "ZeroDivisionError" in failure


def test_not_run_blocks_are_skipped_and_later_blocks_see_earlier_names():
    page = ("```python\nx = 5\n```\n\n```python\n# not run: needs two processes\nraise SystemExit(3)\n"
            "```\n\n```python\nprint(x)\n```\n```\n5\n```\n")
    assert run_blocks("fake.md", parse_page(page), {}) == []


def test_a_value_shown_in_a_comment_fails():
    failure = _one_failure("```python\nx = 3\nx * 2      # 6\n```\n")
    assert "line 3 evaluates to 6 and has a comment after it" in failure
    # prose comments and expressions whose value is None are fine
    assert run_blocks("fake.md", parse_page("```python\n# a comment\nprint(1)  # shows 1\n```\n```\n1\n```\n"), {}) == []


def test_the_wildcard():
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "...", "b"], ["a", "b"])
    assert output_matches(["took ... ms"], ["took 3.2 ms"])
    assert not output_matches(["a", "...", "d"], ["a", "b", "c"])
    assert not output_matches(["x = 1"], ["x = 2"])
    assert output_matches(["x = 1   "], ["x = 1", "", ""])


def test_a_crash_is_reported():
    failures = compare("fake.md", parse_page("```python\nx = 1\n```\n"), "", {}, "Segmentation fault")
    assert len(failures) == 1 and "died" in failures[0] and "Segmentation fault" in failures[0]


def test_a_tilde_fence_is_shown_not_run():
    page = "~~~markdown\n```python\nraise SystemExit(1)\n```\n~~~\n\n```python\nprint(1)\n```\n```\n1\n```\n"
    blocks = parse_page(page)
    assert len(blocks) == 1 and blocks[0].source == "print(1)\n"
    assert run_blocks("fake.md", blocks, {}) == []


def test_page_options():
    from doc_pages import page_options
    assert page_options(FAKE) == {"devices": "2"}
    with pytest.raises(ValueError, match="unknown doc-test options"):
        page_options("<!-- doc-test: gpus=1 -->")
