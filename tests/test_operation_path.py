"""Issue 27's structural guarantees: every bound command has an operation (config -> plan -> run), the CLI only
binds and prints (no function over 40 lines, no private name of another package), and each run-setting default
listed in the issue (and issue 33's `fuzzy`, `table`, `k`) is written once in the library."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from phr.config import ops
from phr.config.base import OpConfig

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = [ROOT / d for d in ("phr", "builders", "eval", "training", "validation", "cards")]


def _configs() -> list[type[OpConfig]]:
    return [c for c in vars(ops).values() if isinstance(c, type) and issubclass(c, OpConfig) and c.command]


@pytest.mark.parametrize("cls", _configs(), ids=lambda c: " ".join(c.command))
def test_every_command_config_has_its_module_in_phr_ops_with_plan_and_run(cls):
    from phr.api import module_name

    name = module_name(cls)
    assert name == "phr.ops." + "_".join(cls.command).replace("-", "_"), f"{cls.__name__} names {name}"
    module = importlib.import_module(name)
    assert callable(getattr(module, "plan", None)) and callable(getattr(module, "run", None)), name


def test_phr_ops_holds_operations_only_and_design_lists_every_one():
    """One home: each public module of phr/ops is a command's operation (shared code is private, ``_name``,
    or the plan base); docs/DESIGN.md names every operation's module."""
    commands = {"_".join(c.command).replace("-", "_"): " ".join(c.command) for c in ops.OPERATIONS}
    modules = {p.stem for p in (ROOT / "phr" / "ops").glob("*.py") if not p.stem.startswith("_")} - {"plan"}
    assert modules == set(commands), (sorted(modules - set(commands)), sorted(set(commands) - modules))
    assert set(commands) == {"_".join(c.command).replace("-", "_") for c in _configs()}
    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    unlisted = [f"{cmd} (phr/ops/{m}.py)" for m, cmd in commands.items() if f"`{m}`" not in design]
    assert not unlisted, f"docs/DESIGN.md does not list: {unlisted}"


def _cli_functions():
    for path in sorted((ROOT / "phr" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.name, node


def test_no_cli_function_is_over_40_lines():
    long = [f"{f}:{n.name} ({n.end_lineno - n.lineno + 1} lines)" for f, n in _cli_functions()
            if n.end_lineno - n.lineno + 1 > 40]  # fmt: skip
    assert not long, long


def test_the_cli_imports_no_private_name_of_another_package():
    private = []
    for path in sorted((ROOT / "phr" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.module.startswith("phr.cli"):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not private, private


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _library_lines() -> list[tuple[str, str]]:
    """Every line of library code (docstrings and comments left out: their examples are not definitions)."""
    out = []
    for top in LIBRARY:
        for path in sorted(top.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            skip = _docstring_lines(ast.parse(text))
            for number, line in enumerate(text.splitlines(), 1):
                code = line.split("#", 1)[0]
                if code.strip() and number not in skip:
                    out.append((str(path.relative_to(ROOT)), code))
    return out


#: issue 27's list of run-setting defaults that were written more than once: each pattern matches its one definition
ONCE = {
    "samples 10": r"(?i)\b\w*samples\b\s*(:\s*int\s*)?=\s*(setting\(\s*)?10\b",
    "temperature 0.7": r"(?i)\b\w*temperature\b\s*(:\s*float\s*)?=\s*(setting\(\s*)?0\.7\b",
    'dataset "phrbench"': r'(?i)\b\w*dataset\b\s*(:\s*[\w |\[\]]+)?=\s*(setting\(\s*)?"phrbench"',
    "the paper's reference scorer": r'"hf:Qwen/Qwen2\.5-7B-Instruct"',
    "the KL directions": r'"earlier_reference",\s*"later_reference"',
    "the step rules": r'"paper",\s*"abbreviation_aware"',
    "the BC countings": r'"every_occurrence",\s*"longest_match"',
    "K = 5": r"(?i)\b(\w*_)?k\b\s*(:\s*int\s*)?=\s*(setting\(\s*)?5\b",
    # the operations' code-sandbox limits (eval/sandbox.py is also a standalone program, run without phr under
    # another uid: its run_program keeps its own keyword defaults, which no operation relies on)
    "the code sandbox's 10 s": r"(?i)\bcode_timeout(_s)?\b\s*(:\s*float\s*)?=\s*(setting\(\s*)?10(\.0)?\b",
    "the code sandbox's 512 MB": r"(?i)\bcode_memory(_mb)?\b\s*(:\s*int\s*)?=\s*(setting\(\s*)?512\b",
    "concurrency 16": r"(?i)\b\w*concurrency\b\s*(:\s*int\s*)?=\s*(setting\(\s*)?16\b",
    "the 512-token estimate": r"(?i)\bor 512\b|\b\w*completion_tokens\s*=\s*512\b",
    "the generator fallback": r'=\s*"openai:gpt-4o"',
    "the leaderboard title": r'"PHRBench leaderboard"',
    # issue 33: the Hallucination-R1 grading rule, tables and K's (the config, hr1/settings, the runner, the mini)
    "fuzzy 'wrong'": r'(?i)\b\w*fuzzy\w*\b\s*(:\s*[\w |]+\s*)?=\s*(setting\(\s*)?"(wrong|correct)"',
    "table '2'": r'(?i)\b\w*table\b\s*(:\s*[\w |]+\s*)?=\s*(setting\(\s*)?"[24]"',
    "K 4 of the mini and smoke runs": r'(?i)\b\w*mini_k\b\s*(:\s*int\s*)?=\s*\d|["\']k["\']\s*:\s*\d+\s*[,}]',
    "K 8 of Table 4": r"(?i)\b(\w*_)?k\b\s*(:\s*int\s*)?=\s*(setting\(\s*)?8\b",
}


#: another setting with the same value: the H-R1 paraphraser's temperature (Listing A.1) is PHRBench's too
OTHER_SETTINGS = {"temperature 0.7": "phr/hr1/settings.py"}


@pytest.mark.parametrize("what", list(ONCE))
def test_each_listed_default_is_written_once(what):
    pattern = re.compile(ONCE[what])
    where = [
        f"{path}: {code.strip()}"
        for path, code in _library_lines()
        if pattern.search(code) and path != OTHER_SETTINGS.get(what)
    ]
    assert len(where) == 1, where


def test_every_k_and_grading_setting_has_one_definition():
    """The fields `fuzzy`, `k`, `table` and the decoding lengths: defined once per meaning (a config group or one
    operation's field), their defaults named constants; the reward's are the same fields (RewardConfig)."""
    from phr.training.rewards import RewardConfig

    defined: dict[str, list[str]] = {}
    for cls in [c for c in vars(ops).values() if isinstance(c, type) and issubclass(c, OpConfig)] + [RewardConfig]:
        for name in ("fuzzy", "qa_max_tokens", "judge_max_tokens", "table"):
            if name in getattr(cls, "__annotations__", {}):
                defined.setdefault(name, []).append(cls.__name__)
    assert defined == {
        "fuzzy": ["HR1Grading"],
        "qa_max_tokens": ["HR1QADecoding"],
        "judge_max_tokens": ["HR1JudgeDecoding"],
        "table": ["EvalHr1Config"],
    }
    literal = re.compile(r"\bk\s*:\s*[\w |]+=\s*setting\(\s*\d")  # a K field's default written as a number
    assert not [f"{p}: {c.strip()}" for p, c in _library_lines() if literal.search(c)]


def test_no_second_smoke_or_mini_plan():
    assert not [p for p, code in _library_lines() if re.search(r"\b(SMOKE|MINI)_PLAN\b", code)]
