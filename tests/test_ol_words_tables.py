"""OL in words in every table cell the paper reports in words (issue 19 item 3): per domain (Tables 5-8, §C.1
"+30.4 words"), per mutation type (Tables 9-11), per resolution and insightful group (Figure 5, §5.2 "about 30 more
reasoning words"), with OL in tokens kept beside it; Table 8 titled "Code Generation"; the per-type breakdowns,
resolution included, cover the science domains only (§C.2)."""

from __future__ import annotations

import pytest

from phr.bench.metrics import FIGURES, OL_WORDS, RESOLUTIONS
from phr.eval.aggregate import aggregate
from phr.eval.report import render_report, result_json
from phr.eval.scoring import SampleScore
from phr.leaderboard.report import build_report, comparison_columns, render_report_markdown

HC, COMPLY = RESOLUTIONS[0], RESOLUTIONS[1]


def _s(q, cond, domain, *, words, tokens, correct=True, mtype=None, resolution=None, insightful=None):
    return SampleScore(
        f"{q}-{cond}",
        0,
        q,
        cond,
        domain,
        "s",
        "multiple_choice",
        "x",
        mtype,
        False,
        correct,
        ol=tokens,
        ol_words=words,
        ui=1.0,
        buf=0.5,
        bc=2.0,
        resolution=resolution,
        insightful=insightful,
    )


def scores():
    """Physics q1 (RC) and q2 (SD), Code q3 (SD): T answers in 100 words (130 tokens); H in 130 / 120 / 70 words."""
    out = []
    for q, dom, mtype, words_h, res in (
        ("q1", "Physics", "Rule Contradiction", 130, HC),
        ("q2", "Physics", "State Distortion", 120, COMPLY),
        ("q3", "Code", "State Distortion", 70, COMPLY),
    ):
        out.append(_s(q, "B", dom, words=90, tokens=117))
        out.append(_s(q, "B+T", dom, words=100, tokens=130))
        out.append(
            _s(q, "B+H", dom, words=words_h, tokens=words_h + 30, mtype=mtype, resolution=res, insightful=res == HC)
        )
    return out


def test_every_table_cell_has_ol_in_words_beside_tokens():
    assert FIGURES.index(OL_WORDS) == FIGURES.index("OL") + 1
    t = aggregate(scores(), bootstrap=None)
    phys = t.per_domain["Physics"]
    assert (phys["B+T"].OL_words, phys["B+H"].OL_words, phys["H-T"].OL_words) == (100, 125, 25)
    assert (phys["B+T"].OL, phys["B+H"].OL, phys["H-T"].OL) == (130, 155, 25)
    assert t.per_domain["Code"]["H-T"].OL_words == -30
    sd = t.per_mutation_type["State Distortion"]  # science only: q2, not the Code question q3
    assert (sd.n, sd.OL_words, sd.truthful.OL_words, sd.h_minus_t.OL_words) == (1, 120, 100, 20)
    assert t.by_resolution[HC].OL_words == 130 and t.by_resolution[COMPLY].OL_words == pytest.approx(95)
    assert t.by_insightful["insightful"].OL_words == 130 and t.by_insightful["non-insightful"].OL_words == 95
    assert t.by_condition["B+H"].OL_words == pytest.approx(320 / 3)


def test_resolution_by_type_leaves_code_out():
    t = aggregate(scores(), bootstrap=None)
    # q3 (Code, State Distortion, Compliance) is not in the SD row: the science SD response (q2) complies
    assert t.resolution.per_mutation_type["State Distortion"] == {HC: 0.0, COMPLY: 1.0, RESOLUTIONS[2]: 0.0}
    assert t.resolution.per_domain["Code"][COMPLY] == 1.0  # the per-domain breakdown keeps Code


def _result(model="org/m"):
    return result_json(
        model=model, revision="r", dataset={"id": "ORG/b", "revision": "v"}, report=aggregate(scores()), config={}
    )


def test_reports_title_table_8_code_generation_and_show_words():
    res = _result()
    single = render_report(res)
    assert "| Code Generation | H-T |" in single and "| OL | OL_words | UI |" in single
    cross = build_report([res])
    md = render_report_markdown(cross)
    assert "## Table 8: Code Generation" in md and "## Table 8: Code\n" not in md
    assert [h for _, _, h in comparison_columns()][4:8] == ["OL (T)", "OL (H)", "OL words (T)", "OL words (H)"]
    assert cross.per_domain["Physics"].rows["org/m"].h_minus_t[OL_WORDS].value == 25
    assert cross.trajectory_by_resolution["org/m"][HC][OL_WORDS].value == 130
    assert "| model | group | OL words | OL | BUF | BC |" in md
