"""`phr-publish analyze paraphrases`: the Hallucination-R1 failure diagnostics (docs/analyses.md,
"Hallucination-R1 diagnostics"). ``register(app)`` adds the command to the ``analyze`` group."""

from __future__ import annotations

import typer

from phr.cli.options import DryRun, bind
from phr.config.ops import AnalyzeParaphrasesConfig
from phr.llm.preflight import Preflight, writable


def _progress_factory(progress):
    def start(description: str, total: int):
        task = progress.add_task(description, total=total)
        return lambda n: progress.advance(task, n)

    return start


@bind(AnalyzeParaphrasesConfig)
def paraphrases(cfg: AnalyzeParaphrasesConfig, dry_run: DryRun = False) -> None:
    """Diagnose why paraphrases fail: surface shifts, embedding drift and the logit lens (Eq. 11-18), RF vs RP."""
    from phr.core.progress import progress_bar
    from phr.eval.hr1_diagnostics import DiagnosticSettings, analyze, read_paraphrase_corpus
    from phr.eval.hr1_diagnostics_report import SUMMARY_MD, write_outputs
    from phr.llm.providers.base import require_scoring
    from phr.llm.spec import make_provider

    out, overwrite, model, corpus = cfg.out, cfg.overwrite, cfg.model, cfg.corpus
    pf = Preflight()
    pf.model("--model", model)
    if out.exists() and not overwrite:
        pf.problem(f"{out} exists (use --overwrite to replace it)")
    pf.check("--out", lambda: writable(out))
    read = pf.check(f"--corpus {corpus}", lambda: read_paraphrase_corpus(corpus))
    if read is not None:
        paras = sum(len(r.paraphrases) for r in read)
        pf.note(f"{len(read)} questions, {paras} paraphrases: hidden states and logit lens of {model}, in process")
    pf.finish(dry_run, echo=typer.echo)
    if dry_run:
        return
    settings = DiagnosticSettings(
        layer=cfg.layer,
        normalize=cfg.normalize,
        final_norm=cfg.final_norm,
        lens_cases=cfg.cases,
        batch_size=cfg.batch_size,
    )
    results = read or []
    provider = make_provider(model)
    provider.purpose = "for its hidden states (analyze paraphrases)"
    provider = require_scoring(provider, "analyze paraphrases")
    with progress_bar() as progress:
        diag = analyze(results, provider, settings, progress=_progress_factory(progress))
    write_outputs(diag, out, overwrite=overwrite)
    rf, rp = diag.counts.get("RF", 0), diag.counts.get("RP", 0)
    typer.echo(
        f"{diag.questions} questions, {diag.originally_correct} originally correct: {rf} RF and {rp} RP paraphrases; "
        f"layer {diag.layer} of {diag.num_layers}; {len(diag.lens)} logit-lens case(s)."
    )
    for e in diag.embedding:
        if e.n:
            typer.echo(f"  {e.label}: mean d_Q {e.mean_d_q:.3f}, d_QA {e.mean_d_qa:.3f}, Δ {e.mean_drift:+.3f}")
    typer.echo(f"Wrote {out}/ (summary: {out / SUMMARY_MD})")


def register(app: typer.Typer) -> None:
    """Add ``paraphrases`` to the ``analyze`` command group."""
    app.command("paraphrases")(paraphrases)
