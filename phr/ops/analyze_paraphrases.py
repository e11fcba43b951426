"""`phr-publish analyze paraphrases`: an hr1-paraphrases corpus and an in-process model -> the Hallucination-R1
failure diagnostics (phr.eval.hr1_diagnostics), their plots, JSON and Markdown summary.

    from phr.api import plan, run
    diag = run(plan(AnalyzeParaphrasesConfig(corpus=Path("corpus"), model="hf:Qwen/Qwen2.5-3B-Instruct")))

``plan(cfg)`` reads the corpus and checks the model spec and the output folder (no model is loaded); ``run(plan)``
loads the model for its hidden states, computes the diagnostics and writes ``out`` (atomically).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from phr.config.ops import AnalyzeParaphrasesConfig
from phr.core.progress import ProgressDisplay
from phr.eval.hr1_diagnostics import Diagnostics, analyze, read_paraphrase_corpus
from phr.eval.hr1_diagnostics_report import SUMMARY_MD, write_outputs
from phr.hr1.records import QuestionResult
from phr.ops.plan import Plan


@dataclass
class DiagnosticsPlan(Plan[AnalyzeParaphrasesConfig]):
    """``analyze paraphrases`` resolved: the corpus's results (read and checked)."""

    results: list[QuestionResult] = field(default_factory=list)


def plan(cfg: AnalyzeParaphrasesConfig) -> DiagnosticsPlan:
    """The model spec checked, the output folder free (or ``overwrite``) and writable, the corpus read."""
    p = DiagnosticsPlan(config=cfg)
    pf = p.preflight
    pf.model("--model", cfg.model)
    pf.output(cfg.out, cfg.overwrite)
    read = pf.check(f"--corpus {cfg.corpus}", lambda: read_paraphrase_corpus(cfg.corpus))
    if read is not None:
        p.results = list(read)
        paras = sum(len(r.paraphrases) for r in read)
        pf.note(f"{len(read)} questions, {paras} paraphrases: hidden states and logit lens of {cfg.model}, in process")
    return p


def _progress_factory(progress: ProgressDisplay) -> Callable[[str, int], Callable[[int], None]]:
    def start(description: str, total: int) -> Callable[[int], None]:
        task = progress.add_task(description, total=total)
        return lambda n: progress.advance(task, n)

    return start


def run(p: DiagnosticsPlan) -> Diagnostics:
    """Load the model (in process), compute the diagnostics (a progress bar per step) and write ``out``."""
    from phr.core.progress import progress_bar
    from phr.llm.providers.base import require_scoring
    from phr.llm.spec import make_provider

    cfg = p.config
    assert isinstance(cfg, AnalyzeParaphrasesConfig)
    provider = make_provider(cfg.model)
    provider.purpose = "for its hidden states (analyze paraphrases)"
    scoring = require_scoring(provider, "analyze paraphrases")
    with progress_bar() as progress:
        diag = analyze(p.results, scoring, cfg, progress=_progress_factory(progress))
    write_outputs(diag, cfg.out, overwrite=cfg.overwrite)
    return diag


def summary(diag: Diagnostics, cfg: AnalyzeParaphrasesConfig) -> list[str]:
    """What the command prints after a run: the counts, the embedding drift per group, where it wrote."""
    rf, rp = diag.counts.get("RF", 0), diag.counts.get("RP", 0)
    lines = [
        f"{diag.questions} questions, {diag.originally_correct} originally correct: {rf} RF and {rp} RP paraphrases; "
        f"layer {diag.layer} of {diag.num_layers}; {len(diag.lens)} logit-lens case(s)."
    ]
    for e in diag.embedding:
        if e.n:
            lines.append(f"  {e.label}: mean d_Q {e.mean_d_q:.3f}, d_QA {e.mean_d_qa:.3f}, Δ {e.mean_drift:+.3f}")
    lines.append(f"Wrote {cfg.out}/ (summary: {cfg.out / SUMMARY_MD})")
    return lines
