"""Trajectory metrics of PHRBench's evaluation (paper Appendix B.2): OL, UI, BUF, BC.

* **OL** — output length, in two named units: ``ol`` tokens of the response (the reference scorer's
  tokenizer; paper §4.2 "tokens") and ``ol_words`` words (``word_count``; the unit of the paper's reported
  OL differences, §5.2, §C.1).
* **UI** — uncertainty index: the mean entropy (nats) of the scorer's next-token distributions over the
  response tokens, i.e. the L distributions that predict response tokens 1..L (the first one at the last
  prompt token, the last one at response token L-1).
* **BUF** — belief-update frequency: the response is split into sentence-level steps (``split_steps``, rule
  ``step_rule``: the paper's by default); ``P_k`` is the scorer's next-token distribution after the prompt and
  steps 1..k (the distribution at the last token of step k); BUF is the fraction of the K-1 transitions with
  ``Delta_k > tau`` (tau = 0.10 nats), 0 when K < 2. ``kl_direction`` (the paper's equation is lost):
  ``earlier_reference`` (default) ``Delta_k = KL(P_{k-1} || P_k)``, ``later_reference`` ``KL(P_k || P_{k-1})``.
  Both distributions are clipped at 1e-12 and renormalized before the KL.
* **BC** — branching cues per 100 words (``branching_cues``; list in ``branching_cues.txt``; ``bc_counting``:
  every occurrence of every cue by default, paper §B.2 "sum of Count(k, r)").

One forward pass per response gives every distribution UI and BUF need: in a causal LM the distribution
after "prompt + steps 1..k" is exactly the next-token distribution at the last token of step k in the
forward over the whole prompt+response, so ``TrajectoryScorer`` runs the model body once over
prompt+response (several responses per batch, right padding), keeps the final hidden states at the
response positions, and applies the output head to them in vocabulary chunks: entropy and log-partition
are accumulated online over the chunks (a streaming log-sum-exp), then the KLs of the step-boundary rows
are accumulated in a second, small pass (clipping needs the log-partition first). Memory is bounded by
``rows x vocab_chunk`` floats (rows are processed in blocks too), never ``tokens x vocab``.
``reference_metrics`` is the slow, naive method (one forward per step prefix, full-vocab float64 math),
kept to check the scorer in the tests and the benchmark.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from phr.config.defaults import OFFLINE_MODEL
from phr.config.ops import BCCounting, KLDirection, StepRule, Trajectory
from phr.llm.providers.base import OutputHead, ScoringProvider, require_scoring
from phr.llm.spec import make_provider

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: BUF threshold (nats).
TAU = 0.10
#: Probabilities are clipped at this value (and renormalized) before a KL.
CLIP = 1e-12
#: The offline default reference scorer.
DEFAULT_SCORER = OFFLINE_MODEL
DEFAULT_VOCAB_CHUNK = 8192
#: Rows x vocab-chunk floats held at once by the chunked head (64 MiB of float32).
MAX_CHUNK_ELEMENTS = 1 << 24
DEFAULT_CUES_PATH = Path(__file__).with_name("branching_cues.txt")

#: Delta_k = KL(P_{k-1} || P_k) ("earlier_reference", default) or KL(P_k || P_{k-1}) ("later_reference").
KL_DIRECTIONS: tuple[str, ...] = get_args(KLDirection)
#: "paper": sentence-final punctuation and line breaks (§B.2); "abbreviation_aware": also skips abbreviations,
#: list enumerators (toolkit 0.1 / results schema 2).
STEP_RULES: tuple[str, ...] = get_args(StepRule)
#: "every_occurrence": each cue's occurrences counted on their own and summed (§B.2), so overlapping cues both
#: count; "longest_match": non-overlapping matches, the longest cue wins (toolkit 0.1).
BC_COUNTINGS: tuple[str, ...] = get_args(BCCounting)
#: the paper's choices (the defaults of ``phr.config.ops.Trajectory``)
PAPER_CHOICES = Trajectory()


def trajectory_choices(settings: Trajectory) -> Trajectory:
    """The trajectory choices of ``settings`` (a ``Trajectory`` or a config that has them, e.g. ``Scoring``)."""
    return Trajectory.model_validate(settings.model_dump(include=set(Trajectory.model_fields)))


# Logits below this are treated as -inf (keeps exp/products finite in the online log-sum-exp).
_NEG = -1e30


@dataclass(frozen=True)
class TrajectoryMetrics:
    ol: int  # response tokens
    ui: float  # mean next-token entropy over the response tokens (nats); 0.0 for an empty response
    buf: float  # fraction of step transitions with KL(P_k || P_k+1) > tau; 0.0 when steps < 2
    bc: float  # branching cues per 100 words
    steps: int  # K
    transitions_above_tau: int  # numerator of BUF (denominator: steps - 1)
    kls: tuple[float, ...] = ()  # Delta_k of the steps - 1 transitions (nats)
    ol_words: int = 0  # response words (word_count)

    def as_dict(self) -> dict:
        return asdict(self)


# ---- steps -----------------------------------------------------------------------------------------

#: A "." ending one of these words (case-insensitive) does not end a step. "etc." is left out on purpose:
#: it usually ends its sentence.
ABBREVIATIONS = frozenset(
    [
        "e.g.",
        "i.e.",
        "cf.",
        "vs.",
        "viz.",
        "al.",
        "approx.",
        "fig.",
        "figs.",
        "eq.",
        "eqs.",
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "prof.",
        "sr.",
        "jr.",
        "st.",
    ]
)
_CLOSERS = "\"')]}*”’»"
_BREAK = re.compile(r"[.!?]+[" + re.escape(_CLOSERS) + r"]*(?=\s|$)|\r\n|[\r\n]")
_OPENERS = "\"'([{“‘«*"


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def split_steps(text: str, rule: str = PAPER_CHOICES.step_rule) -> list[tuple[int, int]]:
    """Sentence-level steps of ``text`` as ``(start, end)`` character spans (``text[start:end]``).

    ``rule="paper"`` (paper §B.2: "sentence-final punctuation and line breaks as boundaries, after removing
    empty segments"): the two kinds of ends below, nothing else. ``rule="abbreviation_aware"`` (toolkit 0.1)
    also skips the exceptions listed after them.

    A step ends
      * at a line break (``\\n``, ``\\r``, ``\\r\\n``; the break belongs to no step), or
      * after a run of sentence-final punctuation (``.``, ``!``, ``?``, e.g. ``?!`` or ``...``), plus any
        closing quotes/brackets/``*`` right after it, when whitespace or the end of the text follows.
    Not a step end: a ``.`` inside a token (decimals ``1.5``, ``3.14``, versions, ``e.g`` inside
    ``e.g.``); a single ``.`` closing an abbreviation from ``ABBREVIATIONS`` (``e.g.``, ``i.e.``, ``vs.``,
    ``Dr.`` ...); a single ``.`` after a step that is so far only digits (list enumerators ``1.``, ``12.``).
    Spans are trimmed of surrounding whitespace; empty (whitespace-only) steps are dropped. An ellipsis
    followed by a space ("Wait... maybe") does end a step.
    """
    if rule not in STEP_RULES:
        raise ValueError(f"step rule {rule!r}: expected one of {', '.join(STEP_RULES)}")
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BREAK.finditer(text):
        tok = m.group()
        if tok[0] in "\r\n":
            end, nxt = m.start(), m.end()
        else:
            punct = tok.rstrip(_CLOSERS)
            if rule != "paper" and punct == "." and m.end() == m.start() + 1:  # a bare "." (no closers)
                before = text[start : m.start()]
                tail = re.search(r"\S*$", before)  # always matches (possibly empty)
                word = ((tail.group() if tail else "") + ".").lstrip(_OPENERS).lower()
                if word in ABBREVIATIONS or before.strip().isdigit():
                    continue
            end = nxt = m.end()
        span = _trimmed(text, start, end)
        if span:
            spans.append(span)
        start = nxt
    span = _trimmed(text, start, len(text))
    if span:
        spans.append(span)
    return spans


def step_last_tokens(offsets: Sequence[tuple[int, int]], steps: Sequence[tuple[int, int]]) -> list[int]:
    """Index of the last token of each step: the last token that starts before the step's end.

    ``offsets`` are the response tokens' character spans (a fast tokenizer's offset mapping, in order).
    The step's last character lies in that token; when a token runs past the step's end (e.g. a merged
    ``".\\n\\n"``), the step still ends with it. A step that ends before the first token starts (cannot
    happen for non-empty steps) maps to -1."""
    starts = [s for s, _ in offsets]
    return [bisect.bisect_left(starts, end) - 1 for _, end in steps]


# ---- branching cues --------------------------------------------------------------------------------

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})
_WORD = re.compile(r"[^\W_]")


def load_cues(cues: str | os.PathLike | Iterable[str] | None = None) -> tuple[str, ...]:
    """The cue list: ``None`` -> ``branching_cues.txt`` next to this module; a ``str``/path -> that file
    (one cue per line, ``#`` starts a comment, blank lines ignored); any other iterable -> those cues.
    Cues are lower-cased, inner whitespace collapsed to one space, duplicates dropped."""
    if cues is None:
        cues = DEFAULT_CUES_PATH
    if isinstance(cues, (str, os.PathLike)):
        lines = Path(cues).read_text(encoding="utf-8").splitlines()
        cues = (line.split("#", 1)[0] for line in lines)
    out: list[str] = []
    for c in cues:
        c = " ".join(str(c).translate(_APOSTROPHES).lower().split())
        if c and c not in out:
            out.append(c)
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _cue_regex(cues: tuple[str, ...]) -> re.Pattern | None:
    if not cues:
        return None
    alts = "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE)


def word_count(text: str) -> int:
    """Whitespace-separated words that contain at least one letter or digit (``1.5`` and ``e.g.`` are one
    word each; a lone ``-`` or ``**`` is none)."""
    return sum(1 for w in text.split() if _WORD.search(w))


def count_cues(
    text: str, cues: str | os.PathLike | Iterable[str] | None = None, counting: str = PAPER_CHOICES.bc_counting
) -> int:
    """Occurrences of the cues in ``text``: case-insensitive, exact characters (curly apostrophes read as
    ``'``), each cue starting and ending at a word boundary (``but`` does not match ``button``; ``or maybe``
    does not match ``for maybe``).

    ``counting="every_occurrence"`` (paper §B.2, BC = 100 * sum over cues k of Count(k, r) / words): each cue's
    occurrences are counted on their own (non-overlapping within one cue) and summed over the cues, so where
    listed cues overlap each counts ("No, wait, wait." with ``no, wait`` and ``wait`` listed: 1 + 2 = 3).
    ``counting="longest_match"`` (toolkit 0.1): matches do not overlap and the longest cue wins (2 there)."""
    listed = load_cues(cues)
    text = text.translate(_APOSTROPHES)
    if counting == "longest_match":
        rx = _cue_regex(listed)
        return 0 if rx is None else len(rx.findall(text))
    if counting != "every_occurrence":
        raise ValueError(f"BC counting {counting!r}: expected one of {', '.join(BC_COUNTINGS)}")
    return sum(len(rx.findall(text)) for c in listed if (rx := _cue_regex((c,))) is not None)


def branching_cues(
    text: str, cues: str | os.PathLike | Iterable[str] | None = None, counting: str = PAPER_CHOICES.bc_counting
) -> float:
    """BC: cue occurrences per 100 words (``100 * count_cues / word_count``); 0.0 for a text without words."""
    words = word_count(text)
    return 0.0 if words == 0 else 100.0 * count_cues(text, cues, counting) / words


# ---- entropy and KL from logits, in vocabulary chunks ----------------------------------------------

ChunkFn = Callable[[int, int], "torch.Tensor"]


def _stream_entropy(chunk: ChunkFn, vocab: int, vocab_chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Online log-sum-exp over vocabulary chunks. ``chunk(c0, c1)`` gives the logits of vocab slice
    c0:c1 for all rows as a fresh tensor this function may overwrite, without -inf (callers clamp -inf to
    -1e30; model heads never give it). Returns (log-partition, entropy), float64 [rows].

    Per chunk (float32, or float64 for float64 logits; relative to the chunk's row max c): s = sum e^(z-c), t = sum e^(z-c)(z-c); merged
    into float64 running (m, S, T) with T = sum e^(z-m)(z-m); then logZ = m + log S, H = log S - T/S."""
    import torch

    m: Any = None  # running max, sum and weighted sum (float64 tensors after the first chunk)
    S: Any = None
    T: Any = None
    for c0 in range(0, vocab, vocab_chunk):
        z = chunk(c0, min(vocab, c0 + vocab_chunk))
        if z.dtype not in (torch.float32, torch.float64):
            z = z.float()
        cm = z.amax(dim=-1)
        zc = z.sub_(cm.unsqueeze(-1))  # in place: the chunk is ours
        e = torch.exp(zc)
        s = e.sum(-1).double()
        t = torch.linalg.vecdot(e, zc).double()
        cm = cm.double()
        if m is None:
            m, S, T = cm, s, t
            continue
        new = torch.maximum(m, cm)
        da, db = m - new, cm - new
        a, b = torch.exp(da), torch.exp(db)
        T = a * (T + da * S) + b * (t + db * s)
        S = a * S + b * s
        m = new
    return m + torch.log(S), torch.log(S) - T / S


def _stream_kl(
    chunk: ChunkFn,
    logz: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    vocab: int,
    vocab_chunk: int,
    clip: float,
) -> torch.Tensor:
    """KL(P_a || P_b) for row pairs (first[i], second[i]) of ``chunk``'s rows, float64, with both
    distributions clipped at ``clip`` and renormalized. With pc = max(p, clip), Zp = sum pc:
    KL = sum pc (log pc - log qc) / Zp - log Zp + log Zq."""
    import torch

    log_clip = math.log(clip)
    Z: Any = None
    A: Any = None
    for c0 in range(0, vocab, vocab_chunk):
        z = chunk(c0, min(vocab, c0 + vocab_chunk)).double()
        lp = (z - logz.unsqueeze(-1)).clamp_min(log_clip)  # -inf logits -> log clip
        pc = torch.exp(lp)
        zs = pc.sum(-1)
        a = (pc[first] * (lp[first] - lp[second])).sum(-1)
        Z, A = (zs, a) if Z is None else (Z + zs, A + a)
    if Z is None:
        return torch.zeros(len(first), dtype=torch.float64)
    return A / Z[first] - torch.log(Z[first]) + torch.log(Z[second])


def _as_logits(x: torch.Tensor | Sequence[Any]) -> torch.Tensor:
    import torch

    t = x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=torch.float64)
    if t.dim() == 0:
        raise ValueError("logits need a vocabulary dimension")
    return t


def entropy(logits: torch.Tensor | Sequence[Any], vocab_chunk: int | None = None) -> torch.Tensor:
    """Entropy (nats) of softmax(logits) over the last dimension, float64 of shape ``logits.shape[:-1]``
    (a 0-d tensor for one distribution). ``-inf`` logits are zero-probability tokens. ``vocab_chunk``
    processes the vocabulary in slices of that size (default: all at once); results agree to ~1e-6."""
    z = _as_logits(logits)
    vocab = z.shape[-1]
    rows = z.reshape(-1, vocab)
    _, ent = _stream_entropy(lambda a, b: rows[:, a:b].clamp_min(_NEG), vocab, vocab_chunk or vocab)
    return ent.reshape(z.shape[:-1])


def log_partition(logits: torch.Tensor | Sequence[Any], vocab_chunk: int | None = None) -> torch.Tensor:
    """log sum exp(logits) over the last dimension, float64 (streamed like ``entropy``)."""
    z = _as_logits(logits)
    vocab = z.shape[-1]
    rows = z.reshape(-1, vocab)
    lz, _ = _stream_entropy(lambda a, b: rows[:, a:b].clamp_min(_NEG), vocab, vocab_chunk or vocab)
    return lz.reshape(z.shape[:-1])


def kl(
    p_logits: torch.Tensor | Sequence[Any],
    q_logits: torch.Tensor | Sequence[Any],
    clip: float = CLIP,
    vocab_chunk: int | None = None,
) -> torch.Tensor:
    """KL(P || Q) in nats with P = softmax(p_logits), Q = softmax(q_logits) over the last dimension, both
    clipped at ``clip`` and renormalized (so a zero in Q where P has mass gives a large finite value, not
    inf). Same shapes in, float64 of shape ``shape[:-1]`` out."""
    import torch

    p, q = _as_logits(p_logits), _as_logits(q_logits)
    if p.shape != q.shape:
        raise ValueError(f"p and q logits differ in shape: {tuple(p.shape)} vs {tuple(q.shape)}")
    vocab = p.shape[-1]
    rows = torch.cat([p.reshape(-1, vocab), q.reshape(-1, vocab)]).to(torch.promote_types(p.dtype, q.dtype))
    n = rows.shape[0] // 2
    chunk = vocab_chunk or vocab

    def fn(a: int, b: int) -> torch.Tensor:
        return rows[:, a:b].clamp_min(_NEG)  # a copy, without -inf

    logz, _ = _stream_entropy(fn, vocab, chunk)
    first = torch.arange(n)
    out = _stream_kl(fn, logz, first, first + n, vocab, chunk, clip)
    return out.reshape(p.shape[:-1])


def buf_from_kls(kls: Sequence[float], tau: float = TAU) -> tuple[float, int]:
    """(BUF, transitions above tau) from the K-1 transition KLs; (0.0, 0) without transitions."""
    above = sum(1 for v in kls if float(v) > tau)
    return (above / len(kls) if len(kls) else 0.0), above


# ---- the scorer ------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    prompt: list[int]
    response: list[int]
    steps: list[tuple[int, int]]
    step_tokens: list[int]  # last token index of each step (index into response tokens)
    bc: float
    words: int


def _provider(
    provider: Any, purpose: str = "the reference scorer (trajectory metrics)"
) -> ScoringProvider:  # a spec or a provider
    """A model spec or provider as a ScoringProvider (CannotScoreError naming the spec otherwise)."""
    return require_scoring(make_provider(provider) if isinstance(provider, str) else provider, purpose)


def _encode_response(provider: ScoringProvider, response: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = provider.encode(response)
    if response and enc.offsets is None:
        raise TypeError(
            f"{provider.spec}: trajectory metrics need a fast tokenizer (offset mapping) for step alignment"
        )
    return enc.ids, enc.offsets or []


class TrajectoryScorer:
    """OL, UI, BUF and BC of responses under a reference scorer, one forward pass per response.

    ``provider``: a ``ScoringProvider`` (``local:smollm2``, ``hf:...``; only its public scoring interface is
    used) or its spec string. The prompt is the provider's chat template over the prompt messages with the
    generation prompt (the assistant turn opened), and the response's tokens follow as that assistant turn's
    content.

    ``batch_size`` responses share a forward (right padding, longest first). ``vocab_chunk`` is the
    vocabulary slice the output head and the entropy/KL sums work on (``None``: the whole vocabulary at
    once). When the model's logits are not ``output_embeddings(decoder(...))`` (a logit soft-cap or scale;
    checked once on a tiny input), the scorer falls back to the model's full logits, still reduced in
    vocabulary chunks."""

    def __init__(
        self,
        provider: Any = DEFAULT_SCORER,
        batch_size: int = 4,
        vocab_chunk: int | None = DEFAULT_VOCAB_CHUNK,
        tau: float = TAU,
        clip: float = CLIP,
        cues: str | os.PathLike | Iterable[str] | None = None,
        settings: Trajectory = PAPER_CHOICES,
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if vocab_chunk is not None and vocab_chunk < 1:
            raise ValueError("vocab_chunk must be >= 1 or None")
        self.provider = _provider(provider)
        self.batch_size = batch_size
        self.vocab_chunk = vocab_chunk
        self.tau = tau
        self.clip = clip
        self.cues = load_cues(cues)
        self.settings = trajectory_choices(settings)
        self._head_ok: bool | None = None

    def _head(self) -> OutputHead | None:
        """The provider's linear output head, or None: the model's full logits (``_head_ok = False`` forces it)."""
        if self._head_ok is False:
            return None
        head = self.provider.output_head()
        self._head_ok = head is not None
        return head

    # ---- scoring -------------------------------------------------------------------------------

    def _prepare(self, messages: Any, response: str) -> _Prepared:  # messages: as in ``score``
        prompt = self.provider.prompt_token_ids(messages)
        ids, offsets = _encode_response(self.provider, response)
        st = self.settings
        steps = split_steps(response, st.step_rule)
        bc = branching_cues(response, self.cues, st.bc_counting)
        return _Prepared(prompt, ids, steps, step_last_tokens(offsets, steps), bc, word_count(response))

    def score_one(self, messages: Any, response: str) -> TrajectoryMetrics:
        return self.score([(messages, response)])[0]

    def score(self, items: Sequence[tuple[Any, str]]) -> list[TrajectoryMetrics]:
        """Metrics for each ``(messages, response)``, in order. ``messages``: a user prompt string, a list
        of ``Message`` or of ``{"role", "content"}`` dicts."""
        prepared = [self._prepare(m, r) for m, r in items]
        order = sorted(range(len(prepared)), key=lambda i: -(len(prepared[i].prompt) + len(prepared[i].response)))
        out: list[TrajectoryMetrics | None] = [None] * len(prepared)
        for j in range(0, len(order), self.batch_size):
            idx = order[j : j + self.batch_size]
            for i, met in zip(idx, self._score_batch([prepared[i] for i in idx])):
                out[i] = met
        return out  # type: ignore[return-value]

    def _score_batch(self, batch: list[_Prepared]) -> list[TrajectoryMetrics]:
        import torch

        # Rows kept per response: positions len(prompt)-1 .. len(prompt)+L-1 (L+1 rows); row j predicts
        # response token j, row j+1 is the distribution after response token j.
        head = self._head()
        out = self.provider.forward(
            [b.prompt + b.response for b in batch], logits=head is None, hidden_layer=None if head is None else -1
        )
        states = out.logits if head is None else out.hidden
        lengths = out.lengths
        del out
        with torch.inference_mode():
            rows = torch.cat([states[r, len(b.prompt) - 1 : n] for r, (b, n) in enumerate(zip(batch, lengths))])
            del states
            base = [0]
            for b in batch:
                base.append(base[-1] + len(b.response) + 1)

            if head is not None:
                weight, bias = head.weight, head.bias
                vocab = weight.shape[0]

                def chunk_of(h: torch.Tensor) -> ChunkFn:
                    def fn(a: int, b: int) -> torch.Tensor:
                        z = h @ weight[a:b].T
                        return z + bias[a:b] if bias is not None else z

                    return fn
            else:
                vocab = rows.shape[-1]

                def chunk_of(h: torch.Tensor) -> ChunkFn:
                    return lambda a, b: h[:, a:b].float().clamp_min(_NEG)  # a copy

            vc = min(self.vocab_chunk or vocab, vocab)
            block = max(1, MAX_CHUNK_ELEMENTS // vc) if self.vocab_chunk else rows.shape[0]
            ent_parts = []
            for s in range(0, rows.shape[0], block):
                _, e = _stream_entropy(chunk_of(rows[s : s + block]), vocab, vc)
                ent_parts.append(e)
            ent = torch.cat(ent_parts).cpu()

            # Transitions (P_k, P_k+1): rows after the last token of steps k and k+1. Blocks of pairs keep
            # the float64 KL pass within ~MAX_CHUNK_ELEMENTS / 8 doubles per temporary.
            first, second, owner = [], [], []
            for r, b in enumerate(batch):
                ends = [base[r] + t + 1 for t in b.step_tokens]
                first.extend(ends[:-1])
                second.extend(ends[1:])
                owner.extend([r] * (len(ends) - 1))
            pairs = max(1, MAX_CHUNK_ELEMENTS // (16 * vc)) if self.vocab_chunk else max(1, len(first))
            kl_parts = [torch.zeros(0, dtype=torch.float64)]
            for s in range(0, len(first), pairs):
                f, g = first[s : s + pairs], second[s : s + pairs]
                fn = chunk_of(rows[torch.tensor(f + g, device=rows.device)])
                logz, _ = _stream_entropy(fn, vocab, vc)
                a = torch.arange(len(f), device=rows.device)
                ref, other = (a, a + len(f)) if self.settings.kl_direction == "earlier_reference" else (a + len(f), a)
                kl_parts.append(_stream_kl(fn, logz, ref, other, vocab, vc, self.clip).cpu())
            kls = torch.cat(kl_parts)

        per: list[list[float]] = [[] for _ in batch]
        for r, v in zip(owner, kls.tolist()):
            per[r].append(v)
        metrics: list[TrajectoryMetrics] = []
        for r, b in enumerate(batch):
            L = len(b.response)
            ui = float(ent[base[r] : base[r] + L].mean()) if L else 0.0
            buf, above = buf_from_kls(per[r], self.tau)
            metrics.append(TrajectoryMetrics(L, ui, buf, b.bc, len(b.steps), above, tuple(per[r]), b.words))
        return metrics


# ---- the naive reference (tests, benchmark) ---------------------------------------------------------


def _full_entropy(logits: torch.Tensor) -> torch.Tensor:
    import torch

    lp = torch.log_softmax(logits.double(), dim=-1)
    return -(lp.exp() * torch.where(torch.isfinite(lp), lp, torch.zeros_like(lp))).sum(-1)


def _full_kl(p_logits: torch.Tensor, q_logits: torch.Tensor, clip: float = CLIP) -> float:
    import torch

    p = torch.softmax(p_logits.double(), -1).clamp_min(clip)
    q = torch.softmax(q_logits.double(), -1).clamp_min(clip)
    p, q = p / p.sum(), q / q.sum()
    return float((p * (p.log() - q.log())).sum())


def reference_metrics(
    provider: Any,  # a spec or a provider, as ``TrajectoryScorer``'s
    messages: Any,  # as in ``TrajectoryScorer.score``
    response: str,
    tau: float = TAU,
    clip: float = CLIP,
    cues: str | os.PathLike | Iterable[str] | None = None,
    settings: Trajectory = PAPER_CHOICES,
) -> TrajectoryMetrics:
    """The slow way, to check ``TrajectoryScorer``: one forward per step prefix (the response text cut
    after step k, re-tokenized, through the provider's public ``forward``), P_k = its last row; the entropies
    of the tokens step k adds come from that prefix's forward (trailing tokens after the last step from a
    forward over the whole response); full-vocabulary float64 softmax. Raises when a prefix does not
    tokenize as a prefix of the response (the one-pass scorer never re-tokenizes, so it cannot differ)."""
    provider = _provider(provider, "reference_metrics")
    prompt = provider.prompt_token_ids(messages)
    full_ids = provider.encode(response).ids
    steps = split_steps(response, settings.step_rule)
    ents: list[float] = []
    ps: list[Any] = []  # P_k: the logits after step k
    done = 0
    for cut in [e for _, e in steps] + ([len(response)] if response else []):
        prefix = response[:cut]
        ids = provider.encode(prefix).ids
        if ids != full_ids[: len(ids)]:
            raise ValueError(f"prefix {prefix[-20:]!r} does not tokenize as a prefix of the response")
        if len(ids) <= done and cut == len(response) and ps:
            break  # nothing after the last step
        # next-token logits from the prompt's last token on: [len(ids)+1, V]
        logits = provider.forward([prompt + ids]).logits[0, len(prompt) - 1 :].float().cpu()
        if len(ps) < len(steps):
            ps.append(logits[-1])
        ents.extend(_full_entropy(logits[done : len(ids)]).tolist())
        done = len(ids)
    earlier = settings.kl_direction == "earlier_reference"
    kls = [_full_kl(*((ps[k], ps[k + 1]) if earlier else (ps[k + 1], ps[k])), clip) for k in range(len(ps) - 1)]
    buf, above = buf_from_kls(kls, tau)
    ui = sum(ents) / len(ents) if ents else 0.0
    bc = branching_cues(response, cues, settings.bc_counting)
    return TrajectoryMetrics(len(full_ids), ui, buf, bc, len(steps), above, tuple(kls), word_count(response))
