"""`phr-publish analyze paraphrases`: the Hallucination-R1 failure diagnostics (docs/analyses.md,
"Hallucination-R1 diagnostics"). ``register(app)`` adds the command to the ``analyze`` group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.core.errors import UsageError


def _progress_factory(progress):
    def start(description: str, total: int):
        task = progress.add_task(description, total=total)
        return lambda n: progress.advance(task, n)

    return start


def paraphrases(
    corpus: Annotated[Path, typer.Option("--corpus", metavar="DIR", help="An hr1-paraphrases corpus folder.")],
    model: Annotated[
        str, typer.Option("--model", metavar="SPEC", help="The in-process model for hidden states (hf:..., local:...).")
    ],
    layer: Annotated[
        int | None,
        typer.Option(
            "--layer",
            metavar="N",
            help="hidden_states index for d_Q / d_QA (0 = embeddings; default: half the blocks).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Output folder.")] = Path("hr1-diagnostics"),
    normalize: Annotated[str, typer.Option(help="Embeddings before the L2 distance: l2 (normalised) or none.")] = "l2",
    final_norm: Annotated[
        bool, typer.Option("--final-norm/--no-final-norm", help="Logit lens: apply the model's final norm.")
    ] = True,
    cases: Annotated[int, typer.Option("--cases", metavar="N", help="RF cases in the logit-lens heat map.")] = 4,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 8,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output folder.")] = False,
) -> None:
    """Diagnose why paraphrases fail: surface shifts, embedding drift and the logit lens (Eq. 11-18), RF vs RP."""
    from phr.core.progress import progress_bar
    from phr.eval.hr1_diagnostics import DiagnosticSettings, analyze, read_paraphrase_corpus
    from phr.eval.hr1_diagnostics_report import SUMMARY_MD, write_outputs
    from phr.llm.providers.base import require_scoring
    from phr.llm.spec import make_provider

    if normalize not in ("l2", "none"):
        raise UsageError(f"--normalize must be l2 or none, not {normalize!r}")
    if out.exists() and not overwrite:
        raise UsageError(f"{out} exists (use --overwrite to replace it)")
    settings = DiagnosticSettings(
        layer=layer, normalize=normalize, final_norm=final_norm, lens_cases=cases, batch_size=batch_size
    )
    results = read_paraphrase_corpus(corpus)
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
