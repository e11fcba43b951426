"""Standard errors from the paired bootstrap over base questions (phr.eval.bootstrap, phr.eval.aggregate): against
the analytic standard error, pairing kept, reproducible; shown in the report and on the leaderboard."""

from __future__ import annotations

import math
import random

import pyarrow.parquet as pq
import pytest

from phr.bench.metrics import CATALOGUE
from phr.eval.aggregate import aggregate
from phr.eval.report import render_report, result_json
from phr.eval.results import Bootstrap, read_result
from phr.eval.scoring import SampleScore
from phr.leaderboard.page import render_html, render_markdown, write_leaderboard
from phr.leaderboard.repo import render_card

P = {"B": 0.6, "B+T": 0.7, "B+H": 0.4}


def score(q: str, cond: str, correct: bool, ol: float | None = None, dom: str = "Physics") -> SampleScore:
    iid = f"{q}-{cond}"
    mt = "Rule Contradiction" if cond == "B+H" else None
    return SampleScore(
        iid,
        0,
        q,
        cond,
        dom,
        "s",
        "multiple_choice",
        "src",
        mt,
        missing=False,
        correct=correct,
        ol=ol,
        ui=0.5,
        buf=0.5,
        bc=0.0,
    )


def independent(n: int, seed: int) -> list[SampleScore]:
    """n questions, one independent binary outcome per condition, and an independent OL per B+H response."""
    rng = random.Random(seed)
    return [
        score(f"q{i}", c, rng.random() < p, ol=rng.gauss(100, 20) if c == "B+H" else None)
        for i in range(n)
        for c, p in P.items()
    ]


def correlated(n: int, seed: int) -> list[SampleScore]:
    """n questions whose B, B+T and B+H outcomes share a per-question ability: positively correlated."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        knows = rng.random() < 0.6
        for c, keep in (("B", 0.9), ("B+T", 0.95), ("B+H", 0.8)):
            out.append(score(f"q{i}", c, knows if rng.random() < keep else not knows))
    return out


def analytic(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def test_bootstrap_se_matches_the_analytic_se_on_independent_questions():
    n = 1500
    scores = independent(n, seed=1)
    r = aggregate(scores, Bootstrap(resamples=1000, seed=7))
    for cond, name in (("B", "accuracy_b"), ("B+T", "accuracy_bt"), ("B+H", "accuracy_bh")):
        p = r.metrics[name]
        se = r.standard_errors[name]
        assert se == pytest.approx(analytic(p, n), rel=0.10), (name, se, analytic(p, n))
        assert r.cell_errors.by_condition[cond]["accuracy"] == se
    # a difference of independent conditions: the variances add
    want = math.sqrt(analytic(r.metrics["accuracy_bh"], n) ** 2 + analytic(r.metrics["accuracy_b"], n) ** 2)
    assert r.standard_errors["delta_bh"] == pytest.approx(want, rel=0.10)
    # a continuous figure: the standard deviation over sqrt(n)
    ols = [s.ol for s in scores if s.condition == "B+H"]
    mean = sum(ols) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in ols) / n)
    assert r.standard_errors["OL"] == pytest.approx(sd / math.sqrt(n), rel=0.10)
    assert r.standard_errors["OL"] == r.standard_errors["OL_bh"]


def test_pairing_shrinks_the_se_of_differences_on_correlated_questions():
    r = aggregate(correlated(800, seed=2), Bootstrap(resamples=1000, seed=0))
    errs = r.cell_errors
    se_t, se_h = errs.by_condition["B+T"]["accuracy"], errs.by_condition["B+H"]["accuracy"]
    paired = errs.per_domain["Physics"]["H-T"]["accuracy"]
    unpaired = math.sqrt(se_h**2 + se_t**2)
    assert paired < 0.85 * unpaired, (paired, unpaired)
    # the same for the mutation type's H - T (B+T over the same questions) and for the flat B+H - B
    assert errs.per_mutation_type["Rule Contradiction"]["H-T"]["accuracy"] == paired
    se_b = errs.by_condition["B"]["accuracy"]
    assert r.standard_errors["delta_bh"] < 0.85 * math.sqrt(se_h**2 + se_b**2)


def test_same_seed_same_errors_and_the_seed_matters():
    scores = correlated(200, seed=3)
    a = aggregate(scores, Bootstrap(resamples=300, seed=11))
    b = aggregate(list(reversed(scores)), Bootstrap(resamples=300, seed=11))  # order of scores does not matter
    assert a.standard_errors == b.standard_errors and a.cell_errors == b.cell_errors
    c = aggregate(scores, Bootstrap(resamples=300, seed=12))
    assert c.standard_errors != a.standard_errors
    assert c.metrics == a.metrics  # point estimates never depend on the bootstrap
    assert aggregate(scores, None).metrics == a.metrics and aggregate(scores, None).standard_errors == {}


def test_every_error_is_named_in_the_catalogue_and_one_question_has_none():
    r = aggregate(independent(50, seed=4), Bootstrap(resamples=200))
    assert set(r.standard_errors) <= set(CATALOGUE)
    assert set(r.metrics) <= set(r.standard_errors) | {"BC", "BC_bh"}  # constant BC: SE 0.0 is still reported
    assert {"delta_bt", "delta_bh"} <= set(r.standard_errors)
    one = aggregate([score("q", c, True) for c in P], Bootstrap(resamples=50))
    assert one.standard_errors == {} and one.cell_errors.by_condition["B"]["accuracy"] is None


@pytest.fixture(scope="module")
def result():
    report = aggregate(independent(400, seed=5), Bootstrap(resamples=400, seed=1))
    return result_json(
        model="org/m",
        revision="r1",
        dataset={"id": "org/phrbench", "revision": "v1"},
        report=report,
        config={},
        run_id="run-1",
        source_url="https://example.org/m",
    )


def test_report_shows_value_plus_minus_se(result):
    text = render_report(result)
    acc, se = result.metrics["accuracy_bh"], result.standard_errors["accuracy_bh"]
    assert f"| B+H | 400 | {acc:.3f} ± {se:.3f} |" in text
    assert "bootstrap over base questions: 400 resamples, seed 1" in text
    d = result.tables.per_domain["Physics"]["H-T"]
    d_se = result.tables.cell_errors.per_domain["Physics"]["H-T"]["accuracy"]
    assert f"| Physics | H-T | {d.accuracy:.3f} ± {d_se:.3f} |" in text
    # the JSON form round-trips
    assert read_result(result.as_json()) == result and result.as_json()["schema_version"] == 2


def test_leaderboard_shows_the_errors(result, tmp_path):
    bh, se = result.metrics["accuracy_bh"], result.standard_errors["accuracy_bh"]
    md = render_markdown([result])
    row = next(ln for ln in md.splitlines() if "org/m" in ln)
    assert f"| {bh:.3f} ± {se:.3f} |" in row
    dbh = result.metrics["accuracy_bh"] - result.metrics["accuracy_b"]
    assert f"| {dbh:+.3f} ± {result.standard_errors['delta_bh']:.3f} |" in row
    assert "± one standard error" in md
    page = render_html([result])
    assert f'<td class="num" data-value="{bh!r}" data-se="{se!r}">{bh:.3f} ± {se:.3f}</td>' in page
    paths = write_leaderboard([result], tmp_path)
    [row] = pq.read_table(paths["parquet"]).to_pylist()
    assert row["accuracy_bh_se"] == se and row["delta_bt_se"] == result.standard_errors["delta_bt"]
    assert row["OL_se"] == result.standard_errors["OL"]
    assert f"{bh:.3f} ± {se:.3f}" in render_card([result])
