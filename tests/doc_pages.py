"""Reading the runnable examples of a documentation page (README.md, doc/*.md) and comparing
what they print with what the page shows; the conventions are in doc/writing_docs.md.

A page is a sequence of fenced blocks. Every ```python block runs, in page order, in one
fresh process per page; a fence with no language (or ```text) right after it (only blank
lines between) is its expected stdout. A python block whose first line is ``# not run:
<reason>`` is skipped; one whose first line is ``# raises: <ExceptionName>`` must raise
exactly that type, and its output block shows ``<ExceptionName>: <message>`` after what it
printed. ``...`` in an expected output is a wildcard: alone on a line it stands for any number
of lines, inside a line for any characters. The page's needs are declared in an HTML comment,
``<!-- doc-test: devices=4 -->``.
"""
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNNER = os.path.join(HERE, "doc_runner.py")

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<mark>```|~~~)(?P<lang>[^`~\s]*)\s*$")
NOT_RUN = re.compile(r"^#\s*not run:\s*(?P<reason>\S.*)$")
RAISES = re.compile(r"^#\s*raises:\s*(?P<name>[A-Za-z_][A-Za-z_0-9.]*)\s*$")
OPTIONS = re.compile(r"<!--\s*doc-test:(?P<body>.*?)-->", re.S)
OUTPUT_LANGS = ("", "text")


@dataclasses.dataclass
class Block:
    """One ```python block: its number on the page (1-based), the page line of its first
    source line, the source, what to do with it, and the output the page shows (or None)."""
    number: int
    line: int
    source: str
    skip_reason: str | None = None
    raises: str | None = None
    expected: list | None = None
    expected_line: int | None = None

    def to_json(self):
        return {"number": self.number, "line": self.line, "source": self.source,
                "skip": self.skip_reason is not None, "raises": self.raises}


def _fences(lines):
    """(lang, first content line index, closing line index, content lines) of every fenced
    block, in order; the content is dedented by the fence's own indentation (fences inside
    list items). A block opened by ~~~ ends at ~~~ and may hold ``` lines."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, mark, lang, start = m.group("indent"), m.group("mark"), m.group("lang").lower(), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != mark:
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: the ``` fence opened here is never closed")
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[start:j]]
        # a ~~~ fence shows markdown source (fences included): it is never run nor an output
        yield (lang if mark == "```" else "~~~" + lang), start, j, body
        i = j + 1


def page_options(text):
    """The page's ``<!-- doc-test: key=value ... -->`` settings, as a dict of strings."""
    opts = {}
    for m in OPTIONS.finditer(text):
        for item in m.group("body").split():
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"doc-test option {item!r}: write key=value")
            opts[key] = value
    unknown = set(opts) - {"devices"}
    if unknown:
        raise ValueError(f"unknown doc-test options {sorted(unknown)} (known: devices)")
    return opts


def parse_page(text):
    """The python blocks of a page, each with the output block that follows it (if any)."""
    lines = text.splitlines()
    blocks, last_python, last_end = [], None, None
    for lang, start, end, body in _fences(lines):
        between = lines[last_end + 1:start - 1] if last_end is not None else None
        follows_python = last_python is not None and between is not None and all(
            not ln.strip() for ln in between)
        if lang == "python":
            first = body[0].strip() if body else ""
            block = Block(number=len(blocks) + 1, line=start + 1, source="\n".join(body) + "\n")
            if m := NOT_RUN.match(first):
                block.skip_reason = m.group("reason")
            elif m := RAISES.match(first):
                block.raises = m.group("name")
            elif first.startswith("# not run") or first.startswith("# raises"):
                raise ValueError(f"line {start + 1}: write '# not run: <reason>' or "
                                 f"'# raises: <ExceptionName>', not {first!r}")
            blocks.append(block)
            last_python = block
        elif lang in OUTPUT_LANGS and follows_python and last_python.expected is None:
            last_python.expected = body
            last_python.expected_line = start + 1
            last_python = None
        else:
            last_python = None
        last_end = end
    return blocks


def _line_matches(pattern, actual):
    if "..." not in pattern:
        return pattern == actual
    regex = ".*".join(re.escape(part) for part in pattern.split("..."))
    return re.fullmatch(regex, actual, re.S) is not None


def output_matches(expected, actual):
    """Whether the printed lines `actual` are what the page shows (`expected`): equal after
    dropping trailing whitespace per line and trailing blank lines; ``...`` is a wildcard
    (a line of its own: any number of lines; inside a line: any characters)."""
    def clean(lines):
        lines = [ln.rstrip() for ln in lines]
        while lines and not lines[-1]:
            lines.pop()
        return lines
    exp, act = clean(expected), clean(actual)
    # reachable[j]: the expected lines so far can match the first j printed lines
    reachable = [True] + [False] * len(act)
    for pattern in exp:
        if pattern.strip() == "...":
            for j in range(1, len(act) + 1):
                reachable[j] = reachable[j] or reachable[j - 1]
        else:
            reachable = [False] + [reachable[j] and _line_matches(pattern, act[j])
                                   for j in range(len(act))]
    return reachable[len(act)]


def execute(path, blocks, options, timeout=300, keep_going=False):
    """Run the blocks of one page in a fresh process (cwd and DYNJAX_CACHE_DIR in a temporary
    directory): (stdout, the per-block reports, stderr, whether it timed out). With
    `keep_going`, blocks after one that failed still run (for a writer fixing a page)."""
    with tempfile.TemporaryDirectory(prefix="dynjax-doc-") as tmp:
        spec = os.path.join(tmp, "blocks.json")
        results = os.path.join(tmp, "results.jsonl")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        with open(spec, "w") as f:
            json.dump({"page": path, "blocks": [b.to_json() for b in blocks],
                       "keep_going": keep_going}, f)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("DYNJAX_") and k != "XLA_FLAGS"}
        env["DYNJAX_CACHE_DIR"] = os.path.join(tmp, "cache")
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(ROOT, "frontend"), ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        if "devices" in options:
            env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={int(options['devices'])}"
        timed_out = False
        try:
            proc = subprocess.run([sys.executable, RUNNER, spec, results], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            stdout, stderr = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            timed_out = True
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        reports = {}
        if os.path.exists(results):
            with open(results) as f:
                for line in f:
                    r = json.loads(line)
                    reports[r["number"]] = r
    return stdout, reports, stderr, timed_out


def run_blocks(path, blocks, options, timeout=300):
    """Run the blocks of one page and return a list of failure descriptions (empty when the
    page is right)."""
    stdout, reports, stderr, timed_out = execute(path, blocks, options, timeout)
    return compare(path, blocks, stdout, reports, stderr, timed_out, timeout)


def split_stdout(stdout):
    """The stdout of each block, keyed by block number (the runner prints a marker line
    before each block)."""
    outputs, current = {}, None
    for line in stdout.splitlines():
        m = re.fullmatch(r"\x00DOCBLOCK (\d+)\x00", line)
        if m:
            current = int(m.group(1))
            outputs[current] = []
        elif current is not None:
            outputs[current].append(line)
    return outputs


def _describe(path, block, what):
    src = "\n".join(f"  {block.line + k:4d} | {ln}" for k, ln in enumerate(block.source.splitlines()))
    return f"{path}, block {block.number} (line {block.line}): {what}\n{src}"


def _diff(expected, actual):
    return ("--- the page shows:\n" + "\n".join(expected) +
            "\n--- it printed:\n" + "\n".join(actual))


def compare(path, blocks, stdout, reports, stderr="", timed_out=False, timeout=None):
    """Failure descriptions for a page run: blocks that raised, did not raise as declared,
    printed something else than the page shows, showed a value in a comment, or never ran."""
    outputs = split_stdout(stdout)
    failures = []
    for block in blocks:
        if block.skip_reason is not None:
            continue
        report = reports.get(block.number)
        if report is None:
            why = (f"timed out after {timeout} s" if timed_out and block.number in outputs
                   else "did not run (an earlier block failed)" if failures
                   else "did not run: the page's process died\n" + stderr[-3000:])
            failures.append(_describe(path, block, why))
            break
        actual = outputs.get(block.number, [])
        if report["status"] == "error":
            failures.append(_describe(path, block, "raised\n" + report["error"]))
            break
        if report["status"] == "no_raise":
            failures.append(_describe(path, block, f"was expected to raise {block.raises}, "
                                                   "but did not"))
            continue
        if report["status"] == "wrong_raise":
            failures.append(_describe(path, block, f"was expected to raise {block.raises}, but "
                                                   f"raised\n{report['error']}"))
            break
        for line, value in report.get("shown_values", []):
            failures.append(_describe(
                path, block, f"line {line} evaluates to {value} and has a comment after it: a "
                "value shown in a comment is not checked; print it and show the output in a "
                "block after the code (or move a prose comment to its own line)"))
        expected = block.expected if block.expected is not None else []
        if not output_matches(expected, actual):
            where = (f"output block at line {block.expected_line}" if block.expected is not None
                     else "no output block follows, but it printed")
            failures.append(_describe(path, block, f"{where}\n{_diff(expected, actual)}"))
    return failures


def run_page(path, timeout=300):
    """Parse and run one page; a list of failure descriptions."""
    with open(path) as f:
        text = f.read()
    return run_blocks(os.path.relpath(path, ROOT), parse_page(text), page_options(text), timeout)


def pages():
    """README.md and every doc/*.md, found by globbing (new pages are picked up)."""
    import glob
    found = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "doc", "*.md")))
    return [p for p in found if os.path.exists(p)]
