"""The real offline model through the generator path: malformed outputs are re-asked, rejected and recorded."""

import json

import pytest

from phr.config.ops import BuildPhrbenchConfig
from phr.ops.build_phrbench import build

RECIPE = """
name: tiny-local
seed: 7
slots:
  science: {truthful: 1, hallucinated: [State Distortion]}
  code: {truthful: 1, hallucinated: [State Distortion]}
sources:
  - {source: mmlu, domain: Physics, count: 1, filters: {subjects: [college_physics]}}
  - {source: humaneval, domain: Code, count: 1}
generation: {temperature: 0.7, max_tokens: 24, regeneration_rounds: 0}
"""


@pytest.mark.slow
def test_smollm2_as_generator(tmp_path, monkeypatch, smollm2):
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    res = build(
        BuildPhrbenchConfig(recipe=str(recipe), out=tmp_path / "out", generator="local:smollm2", allow_short=True),
        progress=False,
    )
    manifest = json.loads((res.out / "manifest.json").read_text())
    generated = res.qc["premises generated"]
    assert generated >= 4  # 2 questions x (1 truthful + 1 hallucinated), plus regenerations
    assert res.qc["accepted"] + sum(v for k, v in res.qc.items() if k.startswith("rejected:")) == generated
    assert res.counts["baseline"] == 2
    # a 135M model rarely writes valid, leak-free JSON: whatever it got wrong is recorded with a reason
    for r in manifest["rejections"]:
        assert r["row_id"].endswith(("-aug-T", "-aug-H1")) and r["check"] and r["reason"]
    # the rerun is served from the cache: byte-identical data
    again = build(
        BuildPhrbenchConfig(recipe=str(recipe), out=tmp_path / "again", generator="local:smollm2", allow_short=True),
        progress=False,
    )
    assert again.counts == res.counts and again.qc == res.qc
