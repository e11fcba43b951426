"""The Hallucination-R1 operations through the Python API (``run(plan(cfg))``) and through the CLI give the same
files, byte for byte (issue 27): ``build hr1-paraphrases`` and ``eval hr1`` on Hallucination-R1-mini (preset mini),
and the smoke training corpora. Each run has its own, fresh call cache, so even ``calls.json`` (the call summary,
which tells a fresh run from a cached rerun) is the same. The QA model is a local OpenAI-protocol fake (no model is
loaded) and diversity (MiniLM) is off, so the comparison is cheap; the paraphrases and labels are the mini's curated
ones. A value out of bounds is one line naming the key, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from phr.api import plan, run
from phr.config.ops import BuildHr1GrpoConfig, BuildHr1ParaphrasesConfig, BuildHr1SftConfig, EvalHr1Config
from tests.support.cli import invoke

QA = "openai:gpt-4o"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def qa(fake_openai, monkeypatch):
    """A QA model that answers the mini's original questions with their gold answer and every paraphrase with
    another (so Algorithm 1 asks and grades the paraphrases); ``cache(name)`` points the call cache at a fresh
    file (each run starts from an empty cache)."""
    from phr.builders.hr1_mini import load_mini

    gold = {q.question: q.answer for q in load_mini().questions}
    srv = fake_openai(lambda model, messages, k: f"<answer>{gold.get(messages[-1][1], 'Paris')}</answer>")

    def cache(tmp: Path, name: str) -> dict[str, str]:
        env = {"PHR_CACHE": str(tmp / f"{name}.sqlite"), "OPENAI_API_KEY": "sk-test-0123456789"}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        return env

    return srv, cache


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        (BuildHr1ParaphrasesConfig, ["build", "hr1-paraphrases"]),
        (EvalHr1Config, ["eval", "hr1"]),
    ],
)
def test_api_and_cli_write_the_same_mini_files(qa, tmp_path, cls, words):
    srv, cache = qa
    api_out, cli_out = tmp_path / "api", tmp_path / "cli"
    cache(tmp_path, "api")
    res = run(plan(cls(preset="mini", qa_model=QA, diversity=False, out=api_out)))
    env = cache(tmp_path, "cli")
    r = invoke(*words, "--preset", "mini", "--qa-model", QA, "--no-diversity", "--out", cli_out, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert res.out == api_out and srv.server.count > 0
    api, cli = _files(api_out), _files(cli_out)
    assert sorted(api) == sorted(cli) and len(api) >= 3
    assert [name for name in api if api[name] != cli[name]] == []
    same = res.settings.replace(str(api_out), str(cli_out)).replace("api.sqlite", "cli.sqlite")
    assert same in r.stdout  # the same settings and rerun line (but for the output folder and the cache)


@pytest.mark.parametrize("cls", [BuildHr1SftConfig, BuildHr1GrpoConfig])
def test_api_and_cli_write_the_same_smoke_training_corpus(tmp_path, cls):
    """The no-argument training corpora (preset mini, no model run)."""
    res = run(plan(cls(out=tmp_path / "api")))
    r = invoke(*cls.command, "--out", tmp_path / "cli")
    assert r.returncode == 0, r.stdout + r.stderr
    assert res.kind == cls.command[1] and _files(tmp_path / "api") == _files(tmp_path / "cli")


def test_the_plan_is_resolved_before_any_call(qa, tmp_path):
    """``plan`` applies the preset a config names (its values too), resolves K and the tables, and lists every
    call; nothing is called and nothing is written."""
    srv, cache = qa
    cache(tmp_path, "plan")
    p = plan(EvalHr1Config(preset="mini", qa_model=QA, out=tmp_path / "o"))
    assert p.problems == [] and p.config.k == 4 and p.steps.k == 4 and p.metrics.k == 4
    assert (p.steps.decoding.max_tokens, p.steps.decoding.qa_max_tokens, p.steps.decoding.judge_max_tokens) == (
        96,
        16,
        48,
    )
    assert p.paraphraser == "curated" and p.judge == "none" and sum(map(len, p.sets.values())) == 52
    assert "  52 questions x K 4 paraphrases (curated)" in p.lines()
    table4 = plan(EvalHr1Config(table="4", dataset=["truthfulqa=x"], out=tmp_path / "o"))
    assert table4.problems  # the file is not there: a problem listed, not raised
    assert srv.server.count == 0 and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["eval", "hr1", "--k", "0"], "--k"),
        (["eval", "hr1", "--limit", "0"], "--limit"),
        (["eval", "hr1", "--judge-max-tokens", "0"], "--judge-max-tokens"),
        (["eval", "hr1", "--table", "3"], "--table"),
        (["build", "hr1-paraphrases", "--k", "0"], "--k"),
        (["build", "hr1-sft", "--max-tokens", "0"], "--max-tokens"),
        (["build", "hr1-grpo", "--timeout", "0"], "--timeout"),
        (["eval", "hr1", "--dataset", "=x"], "--dataset"),  # NAME=PATH without a NAME (phr.config.types.EvalSets)
        (["build", "hr1-paraphrases", "--source", "=x"], "--source"),
        (["build", "hr1-sft", "--eval-set", "=x"], "--eval-set"),
    ],
)
def test_an_out_of_bounds_value_is_one_line_naming_the_key(tmp_path, args, key):
    r = invoke(*args, "--out", tmp_path / "o")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key} ") and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


def test_sources_and_prompts_are_registries():
    """The loaders and the prompt files are ``phr.core.registry.Registry`` entries: one per source the paper uses,
    one per listing; an unknown name is an error naming the known ones."""
    from phr.builders.hr1_sources import LOADERS, load_hr1_source
    from phr.core.errors import UsageError
    from phr.hr1.names import SOURCES
    from phr.hr1.prompts import FILES, template, versions

    assert tuple(LOADERS) == SOURCES and list(versions()) == list(FILES)
    with pytest.raises(UsageError, match="unknown Hallucination-R1 source 'nq'; known: simplequestions, popqa"):
        load_hr1_source("nq", "x")
    with pytest.raises(KeyError, match="no Hallucination-R1 prompt 'x' \\(known: paraphrase, consistency_judge"):
        template("x")
