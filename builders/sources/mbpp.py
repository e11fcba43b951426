"""MBPP (Austin et al. 2021): Mostly Basic Python Problems -> Code, function synthesis from a description."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

from phr.bench.records import BaseQuestion

from . import _common as c

NAME = "mbpp"
TITLE = "MBPP"
LICENSE = "CC-BY-4.0"  # Hub card; the google-research repository itself is Apache-2.0
HUB_ID = "google-research-datasets/mbpp"
PACKAGE: str | None = None
FILES = {"full": "mbpp.jsonl", "sanitized": "sanitized-mbpp.json"}
FORMAT = (
    "mbpp.jsonl (JSON Lines: text, code, task_id, test_setup_code, test_list, challenge_test_list) or "
    "sanitized-mbpp.json (one JSON array: prompt, code, task_id, test_imports, test_list)"
)


def _escape_doc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _parse(source: str) -> ast.Module:
    with warnings.catch_warnings():  # MBPP code has invalid escape sequences in plain strings
        warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
        return ast.parse(source)


def _tested_function(code: str, tests: list[str]) -> tuple[str, str]:
    """(entry point, 'def name(args):' line) of the top-level function the tests call."""
    try:
        defs = {n.name: n for n in _parse(code).body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    except SyntaxError:
        defs = {}
    called: list[str] = []
    for test in tests:
        try:
            nodes = ast.walk(_parse(test))
        except SyntaxError as e:
            raise c.RowProblem(f"test is not valid Python ({e.msg}): {test[:80]!r}") from None
        called += [n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    for name in called:
        node = defs.get(name)
        if node is not None:
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            return name, f"def {name}({ast.unparse(node.args)}){returns}:"
    for name in called:  # code that does not parse as Python 3: fall back to a regex
        m = re.search(rf"^def\s+{re.escape(name)}\s*\(([^)]*)\)\s*:", code, re.M)
        if m:
            return name, f"def {name}({m.group(1).strip()}):"
    raise c.RowProblem("cannot find the function the tests call among the solution's top-level functions")


def parse_row(row: dict, variant: str = "full") -> BaseQuestion:
    """One MBPP row (released file or Hub config 'full'/'sanitized') -> a code question."""
    task_id = c.text(row, "task_id")
    question = c.text(row, "text" if variant == "full" else "prompt")
    code = c.raw(row, "code").replace("\r\n", "\n")
    tests = row.get("test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
        raise c.RowProblem("field 'test_list' must be a non-empty list of assert strings")
    tests = [t.replace("\r\n", "\n").strip() for t in tests]
    entry_point, signature = _tested_function(code, tests)
    setup = str(row.get("test_setup_code") or "").replace("\r\n", "\n").strip()
    imports = [str(i).strip() for i in row.get("test_imports") or []]
    code_tests = "\n".join(x for x in (*imports, setup, *tests) if x) + "\n"
    prompt = f'{signature}\n    """{_escape_doc(question)}\n\n    Example:\n        {_escape_doc(tests[0])}\n    """\n'
    return c.code(
        code,
        prompt,
        code_tests,
        entry_point,
        source=NAME,
        source_row_id=task_id if variant == "full" else f"sanitized/{task_id}",
        license=LICENSE,
        question=question,
    )


def load(
    source_dir: str | Path | None = None, *, online: bool = False, variant: str | None = None
) -> list[BaseQuestion]:
    """MBPP problems: variant "full" (mbpp.jsonl, 974 upstream) or "sanitized" (sanitized-mbpp.json, 427).

    The default variant is "full", or the one a single file given as `source_dir` holds. Row ids: the
    task_id ("11"), or "sanitized/<task_id>" for the sanitized variant.
    """
    if variant is not None:
        c.check_option(variant, list(FILES), "MBPP variant")
    out: list[BaseQuestion] = []
    ids = c.RowIndex(TITLE)
    if source_dir is not None:
        wanted = [variant] if variant else None if Path(source_dir).is_file() else ["full"]
        for part, path in c.source_files(source_dir, FILES, wanted, key=NAME, on_missing=_missing):
            jsonl = ".jsonl" in path.suffixes
            part = part if part in FILES else "full" if jsonl else "sanitized"
            rows = c.jsonl_rows(path) if jsonl else c.json_array_rows(path)
            out += c.parse_rows(str(path), rows, lambda row, _i: parse_row(row, part), ids)
    elif online:
        variant = variant or "full"
        data = c.hub_load(HUB_ID, TITLE, name=variant)
        for split, rows in data.items():
            origin = f"hf://datasets/{HUB_ID} ({variant}/{split})"
            out += c.parse_rows(origin, c.hub_rows(rows), lambda row, _i: parse_row(row, variant), ids)
        out.sort(key=lambda q: int(q.source_row_id.rsplit("/", 1)[-1]))
    else:
        raise _missing()
    return c.check_unique(out, TITLE)


def _missing(detail: str = "") -> c.SourceNotFoundError:
    return c.not_found(TITLE, HUB_ID, " or ".join(FILES.values()), PACKAGE, detail)
