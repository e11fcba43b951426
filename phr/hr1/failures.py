"""Failed calls are missing values (docs/hr1.md, "Failed calls"): a model call that failed after all retries
leaves its value missing on the row (``failed``: the step and reason), never an empty answer graded wrong.
A run with any is partial: the corpus builders and ``eval hr1`` stop with :class:`FailedCallsError` (nothing
written) and the rerun command, which makes only the missing calls (the call cache holds the rest)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phr.core.errors import PHRError
from phr.core.secrets import redact
from phr.llm.summary import RunSummary

from .records import QuestionResult

SHOWN = 20  # failures listed in the message


def failed_calls(results: Sequence[QuestionResult]) -> list[tuple[str, str]]:
    """Every value of a run whose model call failed after all retries: (``<question id>`` or ``<question
    id>/p<k>``, ``"<step>: <reason>"``), in order."""
    out = []
    for r in results:
        if r.failed:
            out.append((r.question.id, r.failed))
        out += [(f"{r.question.id}/p{p.k}", p.failed) for p in r.paraphrases if p.failed]
    return out


def rerun_hint(rerun: str | None, caches: Sequence[Path] = ()) -> str:
    """How to finish a partial run: the successful calls are cached, a rerun makes only the missing ones."""
    where = f" in {', '.join(map(str, caches))}" if caches else ""
    how = f":\n  {rerun}" if rerun else " (the same call with the same cache)."
    return (
        f"Calls that succeeded are cached{where}. Rerun the same command to make only the failed calls again; the "
        f"result is the one a run without the failures gives{how}"
    )


class FailedCallsError(PHRError):
    """Model calls failed after all retries: the values are missing, nothing was written (exit 1)."""

    def __init__(
        self,
        what: str,
        failures: list[tuple[str, str]],
        rerun: str | None,
        caches: Sequence[Path] = (),
        summary: RunSummary | None = None,
    ):
        self.failures = failures
        self.summary = summary  # the run's call accounting (failures by reason per model), for the CLI to print
        questions = {where.split("/p")[0] for where, _ in failures}
        lines = [f"{where}: {why}" for where, why in failures[:SHOWN]]
        lines += [f"... and {len(failures) - SHOWN} more"] if len(failures) > SHOWN else []
        by_model = [
            f"{redact(spec)}: {', '.join(f'{why}={n}' for why, n in sorted(m.failures.items()))}"
            for spec, m in (summary.models.items() if summary else ())
            if m.failures
        ]
        calls = f"Failed calls by model and reason: {'; '.join(by_model)}\n" if by_model else ""
        super().__init__(
            f"{what}: {len(failures)} value(s) of {len(questions)} question(s) are missing: a model call failed "
            "after all retries (nothing was written):\n  "
            + "\n  ".join(lines)
            + "\n"
            + calls
            + rerun_hint(rerun, caches)
        )
