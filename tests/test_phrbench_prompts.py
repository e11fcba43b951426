"""Prompt sets (paper verbatim / v0), generator-chosen mutation types, per-type quotas and the BBBP stand-in.

Builds run against the local OpenAI-protocol server with the deterministic generators of
tests/support/paper_fixtures.py.
"""

import hashlib
import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from phr.bench.folder import data_file
from phr.bench.records import MutationType
from phr.builders.generate import Prompts, parse_mutation_type
from phr.builders.phrbench import BuildError
from phr.builders.recipe import RecipeError, load_recipe, select_questions, stand_ins
from phr.llm.preflight import PreflightError
from tests.support import cli
from tests.support.paper_fixtures import build_on_server, paper_responder, v0_responder, write_sources

# SHA-256 of the parquet files of the paper recipe built on the commit before the paper prompts (90a12e5),
# from tests/support/paper_fixtures.py's sources with v0_responder as the generator and judge.
V0_PAPER_BUILD = {
    "baseline": "2dd92a84919a670a761c9b4d8a6e58c8b5efb48e7f258dbce0b2e4ced89efea5",
    "truthful": "511206a259281a7d95aee3bc4c13b7749bf418ae20bdaf6d32bd17eb749f67b1",
    "hallucinated": "e0f789d46b0008b1a0aa5100b568ca20f480baaced31e197cb5993f7bfeee848",
}
RC, SD, PE = (t.value for t in MutationType)


@pytest.fixture
def sources(tmp_path):
    return write_sources(tmp_path / "sources")


def _recipe(tmp_path, science: str, *, rounds: int = 3, sources: str | None = None) -> str:
    """A small recipe: 6 SciQ physics + 2 MBPP code questions, with the given science slot spec."""
    text = f"""name: small
seed: 7
slots:
  science:
{science}
  code:
    truthful: 1
    hallucinated: 2
sources:
{
        sources
        or '''  - {source: sciq, domain: Physics, count: 6}
  - {source: mbpp, domain: Code, count: 2}'''
    }
generation:
  regeneration_rounds: {rounds}
"""
    path = tmp_path / f"small-{hashlib.sha256(text.encode()).hexdigest()[:8]}.yaml"
    path.write_text(text)
    return str(path)


def _hall(out) -> list[dict]:
    return pq.read_table(data_file(out, "hallucinated")).to_pylist()


@pytest.mark.slow  # paper scale: 4,820 premises through the client and the QC model
def test_v0_reproduces_the_previous_paper_build_byte_for_byte(tmp_path, sources, fake_openai):
    fake_openai(v0_responder())
    res = build_on_server("paper", tmp_path / "out", sources, prompts="v0", skip_review=True)
    got = {n: hashlib.sha256(data_file(res.out, n).read_bytes()).hexdigest() for n in V0_PAPER_BUILD}
    assert got == V0_PAPER_BUILD
    manifest = json.loads((res.out / "manifest.json").read_text())
    assert manifest["prompts"] == "v0"
    assert manifest["prompt_hashes"]["prompts/prompt_h.txt"] == Prompts.load("v0").hashes["prompts/prompt_h.txt"]
    assert "`--prompts v0`" in (res.out / "README.md").read_text()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Rule Contradiction", RC),
        ("rule contradiction", RC),
        ("Rule-Contradiction", RC),
        ("RULE_CONTRADICTION", RC),
        ("Rule Contradictions", RC),
        ("Rule Contradiction: claims branching raises boiling points", RC),
        ("Type: State Distortion", SD),
        ("mutation type = state-distortion (input order)", SD),
        ("  State  Distortion  ", SD),
        ("SD", SD),
        ("rc", RC),
        ("P.E.", PE),
        ("Pseudo-scientific Entanglement", PE),
        ("pseudoscience entanglement", PE),
        ("Pseudoscientific Entanglement (ether theory)", PE),
    ],
)
def test_parse_mutation_type_accepts_the_names_and_obvious_variants(text, expected):
    assert parse_mutation_type(text).value == expected


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "mutation_strategy is empty: it must name the mutation type"),
        (None, "mutation_strategy is empty: it must name the mutation type"),
        ("swap", "mutation_strategy 'swap' names none of the mutation types"),
        ("Rule Distortion", "mutation_strategy 'Rule Distortion' names none of the mutation types"),
        ("Contradiction", "mutation_strategy 'Contradiction' names none of the mutation types"),
        ("Factual Error", "mutation_strategy 'Factual Error' names none of the mutation types"),
        ("A State Distortion of the input", "mutation_strategy 'A State Distortion of the input' names a type only"),
        (
            "Rule Contradiction / State Distortion",
            "names more than one mutation type (Rule Contradiction and State Distortion)",
        ),
        ("RCSD", "mutation_strategy 'RCSD' names none of the mutation types"),
    ],
)
def test_parse_mutation_type_rejects_anything_else_with_the_reason(text, reason):
    with pytest.raises(ValueError) as e:
        parse_mutation_type(text)
    assert reason in str(e.value)


def test_quota_turns_generation_into_selection(tmp_path, sources, fake_openai):
    science = "    truthful: 1\n    hallucinated: 5\n    quota: {Rule Contradiction: 2, State Distortion: 1, Pseudoscientific Entanglement: 1}"
    recipe = _recipe(tmp_path, science, rounds=8)
    fake_openai(paper_responder())
    res = build_on_server(recipe, tmp_path / "out", sources, judge="none")
    hall = _hall(res.out)
    per_q = {}
    for r in hall:
        per_q.setdefault(r["question_id"], Counter())[r["mutation_type"]] += 1
    science_q = {q: c for q, c in per_q.items() if q.startswith("sciq")}
    assert len(science_q) == 6
    for c in science_q.values():  # each quota met; the fifth (free) slot holds any type
        assert sum(c.values()) == 5 and c[RC] >= 2 and c[SD] >= 1 and c[PE] >= 1
    assert all(c == {SD: 2} for q, c in per_q.items() if q.startswith("mbpp"))
    manifest = json.loads((res.out / "manifest.json").read_text())
    quota = [r for r in manifest["rejections"] if r["check"] == "quota"]
    assert quota and all("quota of" in r["reason"] and "no free slot is left" in r["reason"] for r in quota)
    assert manifest["quota_shortfalls"] == {}
    assert "kept until the recipe's per-type quota was met" in (res.out / "README.md").read_text()


def test_quota_shortfall_is_reported(tmp_path, sources, fake_openai):
    science = "    truthful: 1\n    hallucinated: 5\n    quota: {Pseudoscientific Entanglement: 5}"
    recipe = _recipe(tmp_path, science, rounds=0)
    fake_openai(paper_responder())
    with pytest.raises(BuildError) as e:
        build_on_server(recipe, tmp_path / "out", sources, judge="none")
    res = build_on_server(recipe, tmp_path / "short", sources, judge="none", allow_short=True)
    assert "quota short: Pseudoscientific Entanglement" in str(e.value) and "of 5)" in str(e.value)
    assert not (tmp_path / "out").exists()
    manifest = json.loads((res.out / "manifest.json").read_text())
    kept = Counter(r["question_id"] for r in _hall(res.out) if r["mutation_type"] == PE)
    shortfalls = manifest["quota_shortfalls"]
    assert len(shortfalls) == 6 and all(q.startswith("sciq-") for q in shortfalls)
    for qid, short in shortfalls.items():
        assert short == {PE: [kept[qid], 5]}
    assert all(r["mutation_type"] == PE for r in _hall(res.out) if r["domain"] != "Code")


def test_code_questions_get_the_code_instruction_and_state_distortion_only(tmp_path, sources, fake_openai):
    recipe = _recipe(tmp_path, "    truthful: 1\n    hallucinated: 2")
    srv = fake_openai(paper_responder()).server
    res = build_on_server(recipe, tmp_path / "out", sources, judge="none")
    prompts = [r["json"]["messages"][0]["content"] for r in srv.requests]
    code_h = Prompts.load("paper").code_suffix
    assert sum(code_h in p for p in prompts) >= 2 and all(
        ("def " in p) == (code_h in p) for p in prompts if "Mutation Types" in p
    )
    assert all(r["mutation_type"] == SD for r in _hall(res.out) if r["domain"] == "Code")


def test_recipe_type_errors_name_the_field(tmp_path):
    bad = {
        "    hallucinated: 3\n    quota: {Rule Contradition: 1}": "slots.science.quota: unknown mutation type 'Rule Contradition'",
        "    hallucinated: 3\n    quota: {Rule Contradiction: 4}": "slots.science: quota {Rule Contradiction: 4} does not fit 3",
        "    hallucinated: 3\n    types: [State Distortion]\n    quota: {Rule Contradiction: 1}": (
            "slots.science: Rule Contradiction not among the allowed types (State Distortion)"
        ),
    }
    for science, message in bad.items():
        with pytest.raises(RecipeError, match="invalid recipe") as e:
            load_recipe(_recipe(tmp_path, science))
        assert message in str(e.value)


def test_list_form_fixes_types_for_v0_and_is_a_quota_for_paper(tmp_path):
    rec = load_recipe(_recipe(tmp_path, "    hallucinated: [State Distortion, Rule Contradiction, State Distortion]"))
    assert [t.value for t in rec.science.slot_types()] == [SD, RC, SD]
    assert {t.value: n for t, n in rec.science.selection_quota().items()} == {SD: 2, RC: 1}
    paper = load_recipe("paper")
    assert [t.value for t in paper.science.slot_types()] == [RC, SD, PE] * 3 + [RC]  # the v0 cycle
    assert paper.science.selection_quota() == {} and [t.value for t in paper.code.types] == [SD]


def test_bbbp_stand_in_needs_allow_stand_in(tmp_path, sources, fake_openai):
    rec = load_recipe(
        _recipe(tmp_path, "    hallucinated: 2", sources="  - {source: bbbp, domain: Chemistry, count: 3}")
    )
    with pytest.raises(RecipeError) as e:
        select_questions(rec, tmp_path / "empty")
    assert "asks for MoleculeNet BBBP" in str(e.value) and "allow_stand_in=True" in str(e.value)
    from_dir, _ = select_questions(rec, sources)  # a real BBBP copy needs no permission
    assert {q.source for q in from_dir} == {"bbbp"} and stand_ins(rec, from_dir) == {}
    fake_openai(paper_responder())
    rec_path = _recipe(tmp_path, "    hallucinated: 2", sources="  - {source: bbbp, domain: Chemistry, count: 3}")
    with pytest.raises(PreflightError, match="allow_stand_in=True"):  # the plan's problem: every missing source
        build_on_server(rec_path, tmp_path / "refused", None, judge="none")
    res = build_on_server(rec_path, tmp_path / "out", None, judge="none", allow_stand_in=True)
    assert not (tmp_path / "refused").exists()
    manifest = json.loads((res.out / "manifest.json").read_text())
    assert manifest["stand_ins"] == {"bbbp": "b3db"}
    card = (res.out / "README.md").read_text()
    assert "Stand-in (--allow-stand-in): MoleculeNet BBBP was not available offline" in card
    assert {r["source"] for r in pq.read_table(data_file(res.out, "baseline")).to_pylist()} == {"b3db"}


def test_cli_prompts_v0_and_allow_stand_in(tmp_path, sources, fake_openai):
    helptext = cli.run("build", "phrbench", "--help").stdout
    assert "--prompts" in helptext and "--allow-stand-in" in helptext
    recipe = _recipe(tmp_path, "    truthful: 1\n    hallucinated: 3")
    srv = fake_openai(v0_responder()).server
    env = {k: str(v) for k, v in (("OPENAI_API_KEY", "sk-test-paper-0123456789"), ("OPENAI_BASE_URL", srv.url + "/v1"))}
    args = ("--cache", str(tmp_path / "cli.sqlite"), "build", "phrbench", "--recipe", recipe, "--judge", "none")
    done = cli.run(
        *args,
        "--generator",
        "openai:gpt-4o",
        "--source-dir",
        str(sources),
        "--out",
        str(tmp_path / "out"),
        "--prompts",
        "v0",
        env=env,
    )
    wrong = cli.run(*args, "--prompts", "v1", "--out", str(tmp_path / "x"), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["prompts"] == "v0"
    science = [r["mutation_type"] for r in _hall(tmp_path / "out") if r["domain"] != "Code"]
    assert science == [RC, SD, PE] * 6  # v0: a fixed type per slot, cycling through the allowed types
    assert wrong.returncode != 0 and "unknown prompt set 'v1': use paper or v0" in wrong.stderr + wrong.stdout


def test_subtype_origin_is_on_the_card_and_in_the_manifest(tmp_path, sources, fake_openai):
    srcs = "\n".join(
        f"  - {{source: {s}, domain: {d}, count: 2{f}}}"
        for s, d, f in (
            ("bbbp", "Chemistry", ""),
            ("medmcqa", "Biomedicine", ""),
            ("sciq", "Physics", ""),
            ("mmlu", "Physics", ", filters: {subjects: [college_physics]}"),
            ("mbpp", "Code", ""),
        )
    )
    recipe = _recipe(tmp_path, "    truthful: 1\n    hallucinated: 2", sources=srcs)
    fake_openai(paper_responder())
    res = build_on_server(recipe, tmp_path / "out", sources, judge="none")
    manifest = json.loads((res.out / "manifest.json").read_text())
    assert manifest["subtype_origin"] == {
        "reasoning subtype": {"Molecular Property Prediction": ["bbbp"], "Function Synthesis": ["mbpp"]},
        "source label": {"Anatomy": ["medmcqa"], "College Physics": ["mmlu"]},
        "source default": {"General Science": ["sciq"]},
    }
    card = (res.out / "README.md").read_text()
    assert (
        "reasoning-based, named after the paper's §A.1: Function Synthesis (mbpp), Molecular Property Prediction "
        "(bbbp); the source benchmark's own label, kept as §A.1 allows: Anatomy (medmcqa), College Physics (mmlu); "
        "one fixed subtype for a source without labels (no per-question reasoning annotation): General Science (sciq)."
    ) in card
