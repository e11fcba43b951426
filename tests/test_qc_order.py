"""PHRBench QC in the paper's order (§A.2; issue 19 item 1): generation with the rule checks -> manual review of
the rule-passing premises (accept / reject / revise) -> the LLM judge over the reviewed premises; a judge-rejected
premise is regenerated and goes back to review. Each build says what waits for whom; the card's QC table counts
each stage; ``skip_review`` is the named, recorded fast path. The generator and judge are the paper recipe's
deterministic fakes (tests/support/paper_fixtures.py) behind the real OpenAI protocol."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from phr.bench.folder import MANIFEST, data_file
from phr.builders.phrbench import AWAITING_REVIEW, COMPLETE
from phr.builders.recipe import RecipeError, load_recipe
from phr.validation.folder import validate_folder, validate_for_push
from phr.validation.review import COLUMNS, export_review, import_review
from tests.support.paper_fixtures import build_on_server, paper_responder, write_sources
from tests.support.protocol_server import ProtocolServer

RECIPE = """name: small-paper
seed: 7
slots:
  science: {truthful: 1, hallucinated: 3}
  code: {truthful: 1, hallucinated: 2}
sources:
  - {source: sciq, domain: Physics, count: 3}
  - {source: mbpp, domain: Code, count: 1}
generation:
  regeneration_rounds: 3
"""
N = 3 * 4 + 1 * 3  # premises: 3 science questions x (1 + 3), 1 code question x (1 + 2)
REVISION = "A bright comet freezes every ocean it passes over."


def _premise(prompt: str) -> str:
    return prompt.split("<premise>\n", 1)[1].split("\n</premise>", 1)[0]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """(recipe, sources, server, judge_rejects): the judge accepts every premise except the texts in
    ``judge_rejects`` (type consistency)."""
    judge_rejects: set[str] = set()
    gen = paper_responder()

    def respond(model, messages, k):
        prompt = messages[0][1]
        if "<premise>" not in prompt:
            return gen(model, messages, k)
        hall = "Mutation types:" in prompt
        bad = _premise(prompt) in judge_rejects
        verdict = {
            "reason": "the error is not of the declared type" if bad else "checked",
            "factual_validity": True,
            "relevance": True,
            "task_consistent": None if hall else True,
            "type_consistency": (not bad) if hall else None,
            "mutation_logic_consistent": True if hall else None,
            "plausible": True if hall else None,  # read only when the recipe switches the criterion on
            "leaks_answer": False,
            "verdict": "reject" if bad else "accept",
        }
        return json.dumps(verdict)

    recipe = tmp_path / "small.yaml"
    recipe.write_text(RECIPE)
    src = write_sources(tmp_path / "sources", n=12)
    with ProtocolServer(responder=respond) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-qc-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
        yield recipe, src, srv, judge_rejects


def _build(env, out, **kw):
    recipe, src, _, _ = env
    return build_on_server(recipe, out, src, overwrite=True, **kw)


def _judge_calls(srv) -> list[str]:
    return [_premise(r["json"]["messages"][0]["content"]) for r in srv.requests if "<premise>" in str(r["json"])]


def _premises(folder) -> dict[str, str]:
    out = {}
    for name in ("truthful", "hallucinated"):
        out |= {r["augmentation_id"]: r["premise"] for r in pq.read_table(data_file(folder, name)).to_pylist()}
    return out


def _review(folder, path, decide) -> None:
    sheet, _ = export_review(folder, path)
    with open(sheet, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r.update(decide(r) or {})
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    import_review(path, folder)


def _assert_awaits_first_review(res, out, srv) -> None:
    """After the first build (rule checks only): every premise waits for the review, the judge has not run, the
    next steps, manifest and card say so, and push refuses."""
    assert res.stage == AWAITING_REVIEW and res.counts == {"baseline": 4, "truthful": 4, "hallucinated": 11}
    assert _judge_calls(srv) == []
    assert res.qc["manual review: undecided"] == N and res.qc["accepted"] == N and "judge: passed" in res.qc
    assert res.qc["judge: passed"] == 0 and res.qc["rejected: mutation_type"] > 0  # the rule checks did run
    steps = "\n".join(res.next_steps)
    assert f"{N} premise(s) await the manual review (the LLM judge runs on reviewed premises only)" in steps
    assert f"phr-publish review export {out} --out " in steps and "accept / reject / revise" in steps
    assert "phr-publish review import " in steps and "--skip-review" not in steps
    assert "build phrbench --recipe" in steps and "--overwrite" in steps
    manifest = json.loads((out / MANIFEST).read_text())
    assert (manifest["qc_order"], manifest["qc_stage"], manifest["review_required"]) == ("paper", AWAITING_REVIEW, True)
    assert sorted(manifest["awaiting_review"]) == sorted(_premises(out))
    card = (out / "README.md").read_text()
    assert "QC in the paper's order (§A.2)" in card and f"{N} premise(s) still await review" in card
    assert [x.check for x in validate_for_push(out)] == ["manual_review"]  # push refuses: nothing reviewed


def test_build_review_judge_regenerate_review_push(env, tmp_path):
    _, _, srv, judge_rejects = env
    out = tmp_path / "phrbench"

    # 1. generation with the rule checks only: every premise waits for the review, the judge has not run
    res = _build(env, out)
    _assert_awaits_first_review(res, out, srv)

    # 2. review: reject one, revise one, accept the rest; the judge will reject one accepted premise
    first = _premises(out)
    hall = sorted(k for k in first if "-aug-H" in k and not k.startswith("mbpp"))
    removed, revised, judged_out = hall[0], hall[1], hall[2]
    judge_rejects.add(first[judged_out])

    def decide(r):
        if r["augmentation_id"] == removed:
            return dict(decision="reject", reviewer="ann", note="two errors")
        if r["augmentation_id"] == revised:
            return dict(decision="revise", revised_premise=REVISION, reviewer="ann")
        return dict(decision="accept", reviewer="ann")

    _review(out, tmp_path / "review.csv", decide)
    report = validate_for_push(out)  # decided, but neither rebuilt nor judged yet
    reasons = " ".join(x.reason for x in report)
    assert "rebuild the folder to put the revision in place" in reasons
    assert f"{N} premise(s) were reviewed after the build and have not been through the LLM judge yet" in reasons

    # 3. rebuild: the judge runs over the reviewed premises only (not the rejected one); its rejection is
    #    regenerated; the new premises (and the one removed in review) wait for review again
    before = len(srv.requests)
    res = _build(env, out)
    judged = _judge_calls(srv)
    assert len(judged) == N - 1 and first[removed] not in judged and REVISION in judged
    assert first[revised] not in judged  # the revision is judged, not the text it replaced
    now = _premises(out)
    assert now[revised] == REVISION and now[removed] != first[removed] and now[judged_out] != first[judged_out]
    assert res.stage == AWAITING_REVIEW
    assert res.qc["rejected: judge"] == 1 and res.qc["rejected: manual_review"] == 1
    assert res.qc["judge: passed"] == N - 2 and res.qc["manual review: undecided"] == 2
    assert res.qc["manual review: revised"] == 1 and res.qc["manual review: removed"] == 1
    assert "2 premise(s) await the manual review" in res.next_steps[0]
    manifest = json.loads((out / MANIFEST).read_text())
    assert sorted(manifest["awaiting_review"]) == sorted([removed, judged_out])
    assert {
        "row_id": judged_out,
        "check": "judge",
        "reason": "type_consistency: the error is not of the declared type",
    } in manifest["rejections"]
    assert len(srv.requests) > before

    # 4. the regenerated premises are reviewed; the last build judges only them and completes
    _review(
        out,
        tmp_path / "review2.csv",
        lambda r: dict(decision="accept", reviewer="bo") if r["augmentation_id"] in (removed, judged_out) else None,
    )
    n = len(srv.requests)
    res = _build(env, out)
    assert sorted(_judge_calls(srv)[-2:]) == sorted([now[removed], now[judged_out]]) and len(srv.requests) == n + 2
    assert res.stage == COMPLETE and res.qc["judge: passed"] == N and res.qc["manual review: undecided"] == 0
    assert "every premise passed the rule checks, the manual review and the LLM judge" in res.next_steps[0]
    assert json.loads((out / MANIFEST).read_text())["qc_stage"] == COMPLETE
    assert validate_for_push(out).ok and validate_folder(out).ok


def test_skip_review_is_the_named_recorded_fast_path(env, tmp_path):
    _, _, srv, judge_rejects = env
    res = _build(env, tmp_path / "fast", skip_review=True)
    assert res.stage == COMPLETE and len(_judge_calls(srv)) >= N  # the judge ran during generation
    manifest = json.loads((res.out / MANIFEST).read_text())
    assert (manifest["qc_order"], manifest["review_required"]) == ("skip-review", False)
    assert "QC: fast path (`--skip-review`" in (res.out / "README.md").read_text()
    assert "review skipped: --skip-review" in res.next_steps[0]
    assert validate_for_push(res.out).ok  # no review required


def test_the_judges_own_gates_are_recipe_settings_off_by_default(env, tmp_path):
    recipe, _, srv, _ = env
    assert load_recipe(recipe).judge_extra_criteria == () == load_recipe("paper").judge_extra_criteria
    gated = tmp_path / "gated.yaml"
    gated.write_text(RECIPE + "qc:\n  judge_extra_criteria: [plausible]\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(RECIPE + "qc:\n  judge_extra_criteria: [vivid]\n")
    with pytest.raises(
        RecipeError, match="unknown judge criterion 'vivid': the switchable ones are plausible, single_claim"
    ):
        load_recipe(bad)
    res = build_on_server(gated, tmp_path / "g", env[1], skip_review=True)
    prompts = [r["json"]["messages"][0]["content"] for r in srv.requests if "<premise>" in str(r["json"])]
    hall = [p for p in prompts if "Mutation types:" in p]
    assert hall and all("- plausible: the premise sounds plausible" in p for p in hall)
    assert json.loads((res.out / MANIFEST).read_text())["judge_extra_criteria"] == ["plausible"]
