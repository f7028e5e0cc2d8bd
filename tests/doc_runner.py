"""Runs the python blocks of one documentation page in this process, in page order, in one
namespace (started by doc_pages.run_blocks; usage: doc_runner.py BLOCKS.json RESULTS.jsonl).

Before each block it prints a marker line, so the parent can cut stdout into the blocks'
outputs; after each block it appends a report line to RESULTS.jsonl (written as it goes, so a
timeout still says which blocks ran). Tracebacks carry the page's file name and line numbers.
A top-level expression statement whose value is not None and that has a comment after it is
reported: that comment would show a value nobody checks.
"""
import ast
import io
import json
import linecache
import sys
import time
import tokenize
import traceback

MARK = "\x00DOCBLOCK {}\x00"


def comment_lines(source):
    """Line numbers (1-based, within the block) that end with a ``#`` comment."""
    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                lines.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


def record_expressions(tree):
    """Wrap each top-level expression statement in a call that records its value and line."""
    for k, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Expr):
            call = ast.Call(func=ast.Name("__doc_expression__", ast.Load()),
                            args=[stmt.value, ast.Constant(stmt.end_lineno)], keywords=[])
            tree.body[k] = ast.copy_location(ast.Expr(ast.copy_location(call, stmt.value)), stmt)
    return ast.fix_missing_locations(tree)


def run(spec_path, results_path):
    with open(spec_path) as f:
        spec = json.load(f)
    page = spec["page"]
    namespace = {"__name__": "__main__"}
    # the page's source as a "file" for inspect.getsource (autograph reads it) and tracebacks:
    # each block's lines at their page line numbers
    page_lines = []
    with open(results_path, "w") as results:
        for block in spec["blocks"]:
            if block["skip"]:
                continue
            number, first_line = block["number"], block["line"]
            # page line numbers in tracebacks: the source starts on its page line
            source = "\n" * (first_line - 1) + block["source"]
            block_lines = block["source"].splitlines(keepends=True)
            page_lines += ["\n"] * (first_line - 1 + len(block_lines) - len(page_lines))
            page_lines[first_line - 1:] = block_lines
            linecache.cache[page] = (sum(map(len, page_lines)), None, list(page_lines), page)
            commented = {first_line - 1 + k for k in comment_lines(block["source"])}
            shown = []

            def record(value, line, shown=shown, commented=commented):
                if value is not None and line in commented:
                    shown.append((line, repr(value)[:200]))

            namespace["__doc_expression__"] = record
            sys.stdout.flush()
            print(MARK.format(number), flush=True)
            report = {"number": number, "status": "ok"}
            started = time.perf_counter()
            try:
                code = compile(record_expressions(ast.parse(source, filename=page)), page, "exec")
                exec(code, namespace)
                if block["raises"]:
                    report["status"] = "no_raise"
            except BaseException as e:  # noqa: BLE001 - every outcome is reported
                name = type(e).__name__
                if block["raises"] and name == block["raises"].rsplit(".", 1)[-1]:
                    print(f"{name}: {e}")
                elif block["raises"]:
                    report.update(status="wrong_raise", error=traceback.format_exc())
                else:
                    report.update(status="error", error=traceback.format_exc())
            sys.stdout.flush()
            report["seconds"] = round(time.perf_counter() - started, 3)
            report["shown_values"] = shown
            results.write(json.dumps(report) + "\n")
            results.flush()
            if report["status"] in ("error", "wrong_raise") and not spec.get("keep_going"):
                break


if __name__ == "__main__":
    del sys.path[0]  # this script's directory (tests/): a page imports what a user would
    run(sys.argv[1], sys.argv[2])
