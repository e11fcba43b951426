"""Trajectory metrics (OL, UI, BUF, BC; PHRBench paper Appendix B.2) and the one-pass reference scorer."""

import math
from importlib import resources

import pytest
import torch

from phr.eval.trajectory import (
    ABBREVIATIONS,
    TAU,
    TrajectoryMetrics,
    TrajectoryScorer,
    branching_cues,
    buf_from_kls,
    count_cues,
    entropy,
    kl,
    load_cues,
    log_partition,
    reference_metrics,
    split_steps,
    step_last_tokens,
    word_count,
)

INF = float("inf")


def logits_of(probs):
    """log(probs) as logits (zeros become -inf)."""
    return torch.tensor([math.log(p) if p > 0 else -INF for p in probs], dtype=torch.float64)


# ---- entropy -----------------------------------------------------------------------------------------


def test_entropy_hand_computed():
    assert float(entropy(torch.zeros(4))) == pytest.approx(math.log(4), abs=1e-12)
    assert float(entropy([3.0, 3.0, 3.0, 3.0])) == pytest.approx(math.log(4), abs=1e-12)  # shift-invariant
    assert float(entropy(logits_of([0.5, 0.5, 0, 0]))) == pytest.approx(math.log(2), abs=1e-12)
    assert float(entropy(logits_of([1, 0, 0]))) == pytest.approx(0.0, abs=1e-12)
    # H(0.9, 0.1) = -(0.9 ln 0.9 + 0.1 ln 0.1)
    assert float(entropy(logits_of([0.9, 0.1]))) == pytest.approx(0.3250829733914482, abs=1e-12)
    # H(1/2, 1/4, 1/4) = 1.5 ln 2
    assert float(entropy(logits_of([0.5, 0.25, 0.25]))) == pytest.approx(1.5 * math.log(2), abs=1e-12)
    rows = entropy(torch.stack([torch.zeros(4), logits_of([0.5, 0.5, 0, 0]).float()]))
    assert rows.shape == (2,) and rows.tolist() == pytest.approx([math.log(4), math.log(2)], abs=1e-6)
    assert float(log_partition(torch.zeros(4))) == pytest.approx(math.log(4), abs=1e-12)


def test_entropy_vocab_chunks_match_full_softmax():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, 7, 1000, generator=g) * 4
    z[0, 0, :500] = -INF  # a whole chunk of impossible tokens
    lp = torch.log_softmax(z.double(), -1)
    direct = -(lp.exp() * torch.nan_to_num(lp, neginf=0.0)).sum(-1)
    for chunk in (None, 1, 7, 128, 999, 1000, 5000):
        assert torch.allclose(entropy(z, vocab_chunk=chunk), direct, atol=1e-5), chunk
        assert torch.allclose(log_partition(z, vocab_chunk=chunk), torch.logsumexp(z.double(), -1), atol=1e-5)


# ---- KL ----------------------------------------------------------------------------------------------


def test_kl_hand_computed_and_direction():
    p, q = logits_of([0.5, 0.5]), logits_of([0.9, 0.1])
    # KL(P||Q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1) = ln(5/3)
    assert float(kl(p, q)) == pytest.approx(math.log(5 / 3), abs=1e-9)
    # the other direction: 0.9 ln 1.8 + 0.1 ln 0.2
    assert float(kl(q, p)) == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), abs=1e-9)
    assert float(kl(p, p)) == pytest.approx(0.0, abs=1e-12)
    # uniform over 4 vs (1/2, 1/2, 0, 0)-ish: KL(U || V) with V = (.4, .4, .1, .1)
    u, v = logits_of([0.25] * 4), logits_of([0.4, 0.4, 0.1, 0.1])
    want = 0.5 * math.log(0.25 / 0.4) + 0.5 * math.log(0.25 / 0.1)
    assert float(kl(u, v)) == pytest.approx(want, abs=1e-9)
    batch = kl(torch.stack([p, q]), torch.stack([q, p]))
    assert batch.shape == (2,) and batch.tolist() == pytest.approx([float(kl(p, q)), float(kl(q, p))])
    with pytest.raises(ValueError):
        kl(torch.zeros(3), torch.zeros(4))


def test_kl_clipping_at_1e12():
    eps = 1e-12
    # Q has a zero where P has mass: inf without clipping. Clipped and renormalized:
    # Q' = (1, eps) / (1 + eps), so KL = ln(0.5 (1+eps)) + 0.5 ln(0.5 (1+eps) / eps) ... exactly:
    want = 0.5 * math.log(0.5 * (1 + eps)) + 0.5 * math.log(0.5 * (1 + eps) / eps)
    got = float(kl(logits_of([0.5, 0.5]), logits_of([1, 0])))
    assert math.isfinite(got) and got == pytest.approx(want, abs=1e-9) and got == pytest.approx(13.1224, abs=1e-4)
    # P has a zero where Q has mass: the clipped term adds eps ln(eps / 0.5), about -2.7e-11.
    got = float(kl(logits_of([1, 0]), logits_of([0.5, 0.5])))
    p0, p1 = 1 / (1 + eps), eps / (1 + eps)
    assert got == pytest.approx(p0 * math.log(p0 / 0.5) + p1 * math.log(p1 / 0.5), abs=1e-15)
    assert got != math.log(2) and got == pytest.approx(math.log(2), abs=1e-10)
    # A larger clip shows the renormalization: clip 0.1 turns (1, 0) into (1, 0.1)/1.1.
    got = float(kl(logits_of([0.5, 0.5]), logits_of([1, 0]), clip=0.1))
    assert got == pytest.approx(0.5 * math.log(0.5 * 1.1) + 0.5 * math.log(0.5 * 1.1 / 0.1), abs=1e-9)


def test_kl_vocab_chunks_match_full():
    g = torch.Generator().manual_seed(1)
    p, q = torch.randn(5, 3000, generator=g) * 3, torch.randn(5, 3000, generator=g) * 3
    P, Q = torch.softmax(p.double(), -1).clamp_min(1e-12), torch.softmax(q.double(), -1).clamp_min(1e-12)
    P, Q = P / P.sum(-1, keepdim=True), Q / Q.sum(-1, keepdim=True)
    direct = (P * (P.log() - Q.log())).sum(-1)
    for chunk in (None, 1000, 1024, 2999, 8192):
        assert torch.allclose(kl(p, q, vocab_chunk=chunk), direct, atol=1e-9), chunk


def test_buf_threshold():
    assert TAU == 0.10
    assert buf_from_kls([0.05, 0.2, 0.10, 0.11]) == (0.5, 2)  # 0.10 is not above tau
    assert buf_from_kls([]) == (0.0, 0)
    assert buf_from_kls([1.0]) == (1.0, 1)
    assert buf_from_kls([0.3, 0.3], tau=0.5) == (0.0, 0)


# ---- steps -------------------------------------------------------------------------------------------

TEXT = (
    "1. First, 1.5 + 2.25 = 3.75. Wait... is that right?!\n"
    "\n"
    'We use a rule, e.g. the sum rule (i.e. add them).  Dr. Smith agrees! "Really?" Yes\r\n'
    "   \n"
    "Version 3.10 is fine; pi is 3.14"
)


def test_split_steps_paper_rule_is_the_default():
    """Paper §B.2: sentence-final punctuation and line breaks, nothing else (no abbreviation exceptions)."""
    steps = [TEXT[a:b] for a, b in split_steps(TEXT)]
    assert steps == [
        "1.",  # an enumerator ends a step under the paper's rule
        "First, 1.5 + 2.25 = 3.75.",  # decimals are no sentence-final punctuation (no whitespace follows)
        "Wait...",
        "is that right?!",
        "We use a rule, e.g.",
        "the sum rule (i.e.",
        "add them).",
        "Dr.",
        "Smith agrees!",
        '"Really?"',
        "Yes",
        "Version 3.10 is fine; pi is 3.14",
    ]
    assert split_steps(TEXT) == split_steps(TEXT, "paper")
    with pytest.raises(ValueError, match="step rule 'nltk'"):
        split_steps(TEXT, "nltk")


def test_split_steps_rules():
    steps = [TEXT[a:b] for a, b in split_steps(TEXT, "abbreviation_aware")]
    assert steps == [
        "1. First, 1.5 + 2.25 = 3.75.",  # "1." enumerator and decimals do not split
        "Wait...",  # an ellipsis followed by a space ends a step
        "is that right?!",  # a punctuation run ends once
        "We use a rule, e.g. the sum rule (i.e. add them).",  # abbreviations do not split
        "Dr. Smith agrees!",
        '"Really?"',  # closing quote belongs to the step
        "Yes",  # \r\n ends a step; blank and whitespace-only lines are dropped
        "Version 3.10 is fine; pi is 3.14",  # no final punctuation: the text's end ends the step
    ]
    # spans index the text exactly and are trimmed
    for a, b in split_steps(TEXT, "abbreviation_aware"):
        assert not TEXT[a].isspace() and not TEXT[b - 1].isspace()


def test_split_steps_edges():
    assert split_steps("") == [] and split_steps(" \n\n \t") == []
    assert split_steps("One. Two.") == [(0, 4), (5, 9)]
    assert split_steps("no punctuation at all") == [(0, 21)]
    assert [s for s in split_steps("a.b. c!d ? e")] == [(0, 4), (5, 10), (11, 12)]  # a.b. / c!d ? / e
    aware = "abbreviation_aware"
    assert len(split_steps("The answer is 12. Next", aware)) == 2  # "12." ends a sentence that is not only digits
    assert len(split_steps("12. Next", aware)) == 1
    assert len(split_steps("12. Next")) == 2  # the paper's rule
    assert len(split_steps("Costs etc. Then more.", aware)) == 2  # "etc." is not an abbreviation here
    assert {"e.g.", "i.e.", "vs."} <= ABBREVIATIONS and "etc." not in ABBREVIATIONS
    assert split_steps("**Answer.** Done.") == [(0, 11), (12, 17)]


def test_step_last_tokens():
    text = "Hi there. Ok!\nBye."
    #        tokens: "Hi" " there" "." " Ok" "!" "\n" "Bye" "."
    offsets = [(0, 2), (2, 8), (8, 9), (9, 12), (12, 13), (13, 14), (14, 17), (17, 18)]
    steps = split_steps(text)
    assert [text[a:b] for a, b in steps] == ["Hi there.", "Ok!", "Bye."]
    assert step_last_tokens(offsets, steps) == [2, 4, 7]
    # a token that runs past a step's end (".\n" merged) is that step's last token
    merged = [(0, 2), (2, 8), (8, 9), (9, 12), (12, 14), (14, 17), (17, 18)]
    assert step_last_tokens(merged, steps) == [2, 4, 6]


# ---- branching cues ----------------------------------------------------------------------------------


def test_cue_list_file_and_package_data():
    cues = load_cues()
    for c in (
        "wait",
        "however",
        "alternatively",
        "but",
        "actually",
        "hmm",
        "on second thought",
        "let me reconsider",
        "another approach",
        "instead",
        "or maybe",
        "let me check",
    ):
        assert c in cues
    shipped = resources.files("phr.eval").joinpath("branching_cues.txt").read_text()
    assert "on second thought" in shipped


def test_branching_cues_hand_computed():
    text = (
        "Wait, the answer is 4. But actually, HOWEVER we look at it, it's 4. "
        "On second thought, let me check the button and the waiting room. Or maybe 5? Hmm."
    )
    # cues: Wait, But, actually, HOWEVER, On second thought, let me check, Or maybe, Hmm = 8
    # (not "button", "waiting"; "check" alone is no cue)
    assert count_cues(text) == 8
    assert word_count(text) == 30
    assert branching_cues(text) == pytest.approx(100 * 8 / 30)
    assert branching_cues("") == 0.0 and branching_cues("-- **") == 0.0
    assert word_count("1.5 is e.g. small - ok") == 5  # "-" is no word


def test_bc_counts_every_cue_occurrence():
    """Paper §B.2 sums Count(k, r) over the cues: overlapping cues each count; longest_match is toolkit 0.1's."""
    cues = ["no, wait", "wait"]
    assert count_cues("No, wait, wait.", cues) == 3
    assert count_cues("No, wait, wait.", cues, "longest_match") == 2
    assert branching_cues("No, wait, wait.", cues) == pytest.approx(100 * 3 / 3)
    assert count_cues("wait wait wait", ["wait"]) == 3
    with pytest.raises(ValueError, match="BC counting"):
        count_cues("x", cues, "overlapping")


def test_branching_cues_configurable(tmp_path):
    text = "Wait a minute, wait. Let’s try again, or else. Forwait."
    # longest_match: the longest wins and matches do not overlap; every_occurrence: each cue counts; curly ' read as '
    assert count_cues(text, ["wait", "wait a minute"], "longest_match") == 2
    assert count_cues(text, ["wait", "wait a minute"]) == 3
    assert count_cues(text, ["Wait"]) == 2  # case-insensitive; "Forwait" is no match
    assert count_cues(text, ["let's try"]) == 1
    assert count_cues(text, ["or"]) == 1  # "or" in "or else", not inside "Forwait"
    assert count_cues(text, []) == 0
    f = tmp_path / "cues.txt"
    f.write_text("# my cues\nwait a minute  # phrase\n\n  OR   ELSE\n")
    assert load_cues(f) == ("wait a minute", "or else") == load_cues(str(f))
    assert count_cues(text, f) == 2
    assert branching_cues(text, f) == pytest.approx(100 * 2 / word_count(text))
    assert word_count(text) == 10


# ---- the one-pass scorer on local:smollm2 -----------------------------------------------------------

PROMPT = "A shop sells pens at 1.5 dollars each. How much do 4 pens cost?"
RESPONSE = (
    "Each pen costs 1.5 dollars, e.g. the price on the tag. Four pens cost 4 times 1.5, which is 6 dollars.\n"
    "Wait, let me check that again. Actually 1.5 + 1.5 + 1.5 + 1.5 = 6, so yes!\n"
    "The answer is 6 dollars."
)


@pytest.fixture(scope="module")
def scorer(smollm2):
    return TrajectoryScorer(smollm2)


@pytest.mark.slow
def test_chat_template_puts_response_in_the_assistant_turn(scorer, smollm2):
    prep = scorer._prepare(PROMPT, RESPONSE)
    tok = smollm2.tokenizer
    full = tok.apply_chat_template(
        [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": RESPONSE}], tokenize=False
    )
    full_ids = tok(full, add_special_tokens=False)["input_ids"]
    assert full_ids[: len(prep.prompt) + len(prep.response)] == prep.prompt + prep.response
    assert tok.decode(prep.response) == RESPONSE
    # every step's last token covers the step's last character
    offsets = tok(RESPONSE, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    for (a, b), t in zip(prep.steps, prep.step_tokens):
        assert offsets[t][0] < b <= offsets[t][1]


@pytest.mark.slow
def test_one_pass_equals_naive_per_step_prefix(scorer, smollm2):
    got = scorer.score([(PROMPT, RESPONSE)])[0]
    ref = reference_metrics(smollm2, PROMPT, RESPONSE)
    assert got.steps == ref.steps == 6  # the paper's step rule (the default) also splits after "e.g."
    assert got.ol == ref.ol == len(smollm2.tokenizer(RESPONSE, add_special_tokens=False)["input_ids"])
    assert got.ui == pytest.approx(ref.ui, abs=1e-4) and got.ui > 0
    assert len(got.kls) == 5
    assert got.kls == pytest.approx(ref.kls, abs=1e-4)
    assert got.buf == ref.buf and got.transitions_above_tau == ref.transitions_above_tau
    assert (
        got.bc == ref.bc == pytest.approx(100 * 3 / word_count(RESPONSE))
    )  # e.g. is no cue: Wait, let me check, Actually


@pytest.mark.slow
def test_batching_chunking_and_fallback_agree(scorer, smollm2):
    items = [
        (PROMPT, RESPONSE),
        ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], "4. Hmm, yes!"),
        ("Say hi.", "Hi"),
        ("Say nothing.", ""),
        ("Why?", "Because. However, maybe not? No.\nOr maybe yes."),
    ]
    alone = [scorer.score([it])[0] for it in items]
    batched = TrajectoryScorer(smollm2, batch_size=3).score(items)
    unchunked = TrajectoryScorer(smollm2, batch_size=5, vocab_chunk=None).score(items)
    odd = TrajectoryScorer(smollm2, batch_size=2, vocab_chunk=1000).score(items)
    fallback = TrajectoryScorer(smollm2, batch_size=5)
    fallback._head_ok = False  # the model's own full logits, reduced in vocab chunks
    full_logits = fallback.score(items)
    assert alone[3] == TrajectoryMetrics(0, 0.0, 0.0, 0.0, 0, 0)
    assert alone[2].steps == 1 and alone[2].buf == 0.0 and alone[2].ol == 1
    for other in (batched, unchunked, odd, full_logits):
        for a, b in zip(alone, other):
            assert (a.ol, a.steps, a.bc) == (b.ol, b.steps, b.bc)
            assert a.ui == pytest.approx(b.ui, abs=1e-5)
            assert a.kls == pytest.approx(b.kls, abs=1e-5)
            assert (a.buf, a.transitions_above_tau) == (b.buf, b.transitions_above_tau)
