"""Standard errors by a paired bootstrap over base questions.

One resampling draws the n base question ids with replacement, ``resamples`` times, with a fixed seed; every
statistic of a result is recomputed on the same draws. A drawn question brings all its samples under every
condition, so B, B+T and B+H stay paired and a difference (H - T, T - B) gets its standard error from the
draws of the difference. A mean over samples is, per resample, the sum of the drawn questions' values over
the number of their values (each question counted as often as it was drawn): the same estimator as the
point estimate. The standard error is the standard deviation (ddof 1) of a statistic over the resamples in
which it is defined; it is ``None`` when fewer than two questions contribute.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class QuestionResampler:
    """The shared bootstrap draws over the base questions ``question_ids`` (duplicates ignored)."""

    def __init__(self, question_ids: Iterable[str], resamples: int = 1000, seed: int = 0):
        if resamples < 2:
            raise ValueError("resamples must be >= 2")
        ids = sorted(set(question_ids))
        self.index = {q: i for i, q in enumerate(ids)}
        n = len(ids)
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples) if n else np.zeros((resamples, 0))
        self.weights = counts.astype(np.float64)  # resamples x questions: how often each question is drawn

    def means(self, pairs: Iterable[tuple[str, float]]) -> np.ndarray:
        """Per resample, the mean of the values (``(question_id, value)`` pairs) of the drawn questions; NaN
        where no drawn question has a value, and everywhere when fewer than two questions have one."""
        pairs = list(pairs)
        n = len(self.index)
        q = np.fromiter((self.index[p[0]] for p in pairs), dtype=np.intp, count=len(pairs))
        v = np.fromiter((p[1] for p in pairs), dtype=np.float64, count=len(pairs))
        sums = np.bincount(q, weights=v, minlength=n)
        counts = np.bincount(q, minlength=n).astype(np.float64)
        out = np.full(self.weights.shape[0], np.nan)
        if np.count_nonzero(counts) < 2:
            return out
        num, den = self.weights @ sums, self.weights @ counts
        np.divide(num, den, out=out, where=den > 0)
        return out


def standard_error(draws: np.ndarray | None) -> float | None:
    """The standard deviation (ddof 1) of the finite draws, rounded to 6 decimals; None with fewer than 2."""
    if draws is None:
        return None
    ok = draws[np.isfinite(draws)]
    return round(float(ok.std(ddof=1)), 6) if ok.size >= 2 else None
