"""The package's size at git revisions: every line, and the code lines alone.

    python benchmarks/package_lines.py [REV ...]        (default: HEAD)

For each revision, the ``.py`` files under ``langmem_edge/`` as committed there (``git
show``): ``lines`` counts every line (what ``find langmem_edge -name "*.py" | xargs cat |
wc -l`` gives on a checkout), ``code`` leaves out blank lines, comments and docstrings (the
first string statement of a module, class or function), so a change that only rewrites
prose does not move it.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize

from _common import table


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def code_lines(source: str) -> int:
    """Lines holding a token that is not a comment, outside every docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                end = body[0].end_lineno or body[0].lineno
                docstrings.update(range(body[0].lineno, end + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.ENCODING}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def measure(rev: str) -> tuple[int, int, int]:
    """``(files, lines, code lines)`` of the package at ``rev``."""
    paths = [p for p in _git("ls-tree", "-r", "--name-only", rev, "langmem_edge").split()
             if p.endswith(".py")]
    total = code = 0
    for path in paths:
        source = _git("show", f"{rev}:{path}")
        total += source.count("\n") + (0 if source.endswith("\n") or not source else 1)
        code += code_lines(source)
    return len(paths), total, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revs", nargs="*", default=["HEAD"])
    args = parser.parse_args()
    rows = []
    for rev in args.revs:
        files, total, code = measure(rev)
        rows.append([rev, _git("rev-parse", "--short", rev).strip(), files, f"{total:,}",
                     f"{code:,}"])
    print(table(["revision", "commit", "files", "lines", "code lines"], rows))


if __name__ == "__main__":
    main()
