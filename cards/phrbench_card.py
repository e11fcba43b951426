"""The PHRBench dataset card, generated from the built rows (never hand-edited)."""

from __future__ import annotations

from collections import Counter

from huggingface_hub import DatasetCard, DatasetCardData

from phr.bench.conditions import ALL_CONFIG, CONFIGS
from phr.bench.instance import COLUMNS, Column, card_features
from phr.cards.fields import fields_table
from phr.hub.card import usage_block

PAPER_TITLE = "PHRBench: A Behavioral Evaluation of Post-Hallucination Reasoning in LLMs"
# The paper text available to the maintainers carries no author list or venue: the entry says so rather than
# inventing them (complete it when the paper's published record is known).
CITATION = f"""@misc{{phrbench,
  title  = {{{PAPER_TITLE}}},
  note   = {{Authors and venue: see the published paper; not recorded in this card.}}
}}"""
LICENSE_NAME = "phrbench-source-licenses"
LICENSE_FILE = "LICENSE.md"
_B, _T, _H = CONFIGS

#: what each column means (the Fields table; every column of ``phr.bench.instance`` needs its line)
MEANINGS = {
    "id": "the instance id (question id, condition, premise)",
    "question_id": "the base question it is built on (shared by its B, B+T and B+H instances)",
    "condition": "B: the question alone; B+T: with a truthful premise; B+H: with a hallucinated premise",
    "domain": "the question's domain",
    "subtype": "the reasoning subtype within the domain",
    "task_type": "how the answer is graded: multiple choice, open-ended (number or text) or code",
    "source": "the public benchmark the question comes from",
    "source_row_id": "the question's row id in its source",
    "license": "the license of the row (its source's)",
    "question": "the base question as the source states it",
    "options": "the answer options of a multiple-choice question (empty otherwise)",
    "answer": "the gold answer (the correct option's text, a value, or a short answer)",
    "answer_index": "the gold option's index (multiple choice; null otherwise)",
    "code_signature": "code: the function stub the model completes",
    "entry_point": "code: the function the tests call",
    "code_tests": "code: the unit tests run in the sandbox (never shown to models)",
    "reference_solution": "code: a solution that passes the tests (never shown to models)",
    "augmentation_id": "the premise's id (null under B)",
    "premise": "the premise added as context (null under B)",
    "truth_verification": "B+T: the evidence that the premise is true (null otherwise)",
    "mutation_type": "B+H: the kind of single mutation that makes the premise false",
    "mutation_strategy": "B+H: how the mutation was made",
    "mutation_logic": "B+H: what exactly was changed",
    "generator": "the model (or curated source) that wrote the premise",
    "prompt": "exactly what the model is asked: premise (if any) and question",
}


def _column_type(c: Column) -> str:
    if c.kind == "enum":
        return "string: " + " / ".join(c.values)
    return {"text": "string", "list": "list of string", "int": "int64"}[c.kind]


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _counts_table(rows: dict[str, list[dict]]) -> str:
    """The Counts table: questions, B+T and B+H instances per domain (B+H per mutation type), and the totals."""
    base, hall = rows[_B], rows[_H]
    domains = sorted({r["domain"] for r in base})
    types = sorted({r["mutation_type"] for r in hall if r["mutation_type"]})
    by_dt = Counter((r["domain"], r["mutation_type"]) for r in hall)
    n = {k: len(v) for k, v in rows.items()}
    return _table(
        ["domain", "questions (B)", "B+T", *[f"B+H {t}" for t in types], "B+H total"],
        [
            [
                d,
                sum(r["domain"] == d for r in base),
                sum(r["domain"] == d for r in rows[_T]),
                *[by_dt[(d, t)] for t in types],
                sum(by_dt[(d, t)] for t in types),
            ]
            for d in domains
        ]
        + [["**all**", n[_B], n[_T], *[sum(by_dt[(d, t)] for d in domains) for t in types], n[_H]]],
    )


def _card_data(n: dict[str, int], *, configs: list[dict], recipe: str) -> DatasetCardData:
    """The card's metadata block (``n``: rows per config)."""
    return DatasetCardData(
        language="en",
        license="other",
        license_name=LICENSE_NAME,
        license_link=LICENSE_FILE,
        pretty_name=f"PHRBench ({recipe})",
        task_categories=["question-answering", "text-generation"],
        size_categories="n<1K" if sum(n.values()) < 1000 else "1K<n<10K",
        tags=["hallucination", "reasoning", "benchmark", "phrbench"],
        configs=configs,
        dataset_info=[{"config_name": name, "features": card_features()} for name in (*n, ALL_CONFIG)],
    )


#: the three ways to evaluate a model on PHRBench (docs/harnesses.md): one prompt text, one scoring code
HARNESSES = """## Evaluating a model: three ways, the same numbers

DATASET is this folder's path, or its repo id once pushed. The two harnesses need `pip install "phr-toolkit[harness]"`.

| way | command |
|---|---|
| PHR toolkit | `phr-publish eval phrbench --model hf:ORG/NAME --dataset DATASET` |
| lm-evaluation-harness | `lm_eval --model hf --model_args pretrained=ORG/NAME --apply_chat_template --tasks phrbench --include_path "$(python -m phr.eval.harness lm-eval-tasks)" --metadata '{\"dataset\": \"DATASET\"}'` |
| inspect_ai | `inspect eval phr/phrbench --model hf/ORG/NAME -T dataset=DATASET` |

All three prompt with the instance's `prompt` (one user turn, the model's chat template) and score with the toolkit's
answer extraction and grading (code answers run only in its sandbox); the outputs of the harnesses are leaderboard
submissions for `phr-publish score`. The trajectory metrics (OL, UI, BUF, BC) and the behavioural resolution need the
reference scorer and the judge: `phr-publish eval phrbench` (or `phr-publish score` on a harness's output)."""


def _overview(rows: dict[str, list[dict]], *, recipe: str, licenses: dict[str, str], figures: str) -> str:
    """The card's body from its title to "Re-validating a download": what PHRBench measures, usage, counts,
    figures, subtypes, sources and licenses."""
    base = rows[_B]
    n = {k: len(v) for k, v in rows.items()}
    subtypes = Counter((r["domain"], r["subtype"]) for r in base)
    subtype_table = _table(["domain", "subtype", "questions"], [[d, s, c] for (d, s), c in sorted(subtypes.items())])
    src = Counter(r["source"] for r in base)
    source_table = _table(
        ["source", "questions", "license"], [[s, c, licenses.get(s, "see source")] for s, c in sorted(src.items())]
    )
    usage = usage_block(
        f'from datasets import load_dataset\nds = load_dataset("phrbench", "{ALL_CONFIG}")   '
        f"# or: {', '.join(n)} (split: test)"
    )
    return f"""
# PHRBench ({recipe})

PHRBench measures *post-hallucination reasoning*: how a model reasons after a hallucinated premise has entered
its context. Each base question is asked plain (**B**), with one truthful premise (**B+T**) and with
single-mutation hallucinated premises (**B+H**); the premise is added as context, the question is unchanged.

{usage}

{HARNESSES}

## Counts (domain x mutation type)

{_counts_table(rows)}

Total: {n[_B]} + {n[_T]} + {n[_H]} = {sum(n.values())} instances.

{figures}

## Reasoning subtypes

{subtype_table}

## Sources and licenses

{source_table}

Each row keeps `source`, `source_row_id` and `license`; the license of a row is its source's (the card's
`license: other` points to `LICENSE.md`, which lists them).

## Re-validating a download

The dataset ships its checks: `validation/expectations.json` (a Great Expectations suite: counts per domain and
type, unique ids, no nulls, allowed values, distributions) and `eval.yaml` (the Hub's benchmark format).
`phr-publish validate DIR` re-runs the suite and every row-level check (single mutation, distinctness, answer
leakage) on the parquet files and names each failing row.

"""


def _construction(*, recipe: str, generator: str, judge: str | None, qc: dict, notes: list[str]) -> str:
    """The card's Construction section: recipe, generator, judge, the quality-control table and the notes."""
    qc_rows = [[k, v] for k, v in qc.items()]
    return f"""## Construction

- Recipe: `{recipe}`
- Premise generator: `{generator}`
- Judge: `{judge or "none (rule-based validation only)"}`

### Quality control

{_table(["stage", "count"], qc_rows)}

{chr(10).join(f"- {x}" for x in notes)}

"""


def _reference(rows: dict[str, list[dict]], *, recipe: str) -> str:
    """The card's Fields table (with an example row), Limitations and Citation."""
    example = (rows[_H] or rows[_B] or [{}])[0]
    fields = fields_table([(c.name, _column_type(c)) for c in COLUMNS], MEANINGS, example)
    return f"""## Fields

Every config has the same columns (one row per instance; the example is a B+H row):

{fields}

## Limitations

- Premises are checked by rules, optional manual review and an optional LLM judge; none of these proves a
  hallucinated premise wrong or a truthful one right in every case. The QC table above says which ran.
- Scores depend on answer extraction (multiple choice, open-ended numbers, code run in a sandbox) and, for
  behavioural resolution, on an LLM judge; report the extraction and judge settings with any result.
- Questions come from public benchmarks and may appear in a model's training data.
- English only; four domains (Chemistry, Biomedicine, Physics, Code).
{"- PHRBench-mini is a small offline sample for tests and demos, not the paper's benchmark." if recipe == "mini" else ""}

## Citation

```bibtex
{CITATION}
```
"""


def render(
    rows: dict[str, list[dict]],
    *,
    configs: list[dict],
    recipe: str,
    generator: str,
    judge: str | None,
    qc: dict,
    notes: list[str],
    licenses: dict[str, str],
    figures: str = "",
) -> DatasetCard:
    """Card text and metadata from the assembled rows of every config."""
    data = _card_data({k: len(v) for k, v in rows.items()}, configs=configs, recipe=recipe)
    body = (
        _overview(rows, recipe=recipe, licenses=licenses, figures=figures)
        + _construction(recipe=recipe, generator=generator, judge=judge, qc=qc, notes=notes)
        + _reference(rows, recipe=recipe)
    )
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}")


def license_text(licenses: dict[str, str]) -> str:
    """``LICENSE.md``: PHRBench mixes sources with their own licenses; each row carries its source's."""
    rows = "\n".join(f"| {s} | {lic} |" for s, lic in sorted(licenses.items()))
    return (
        "# Licenses\n\nPHRBench combines questions from several public benchmarks. Each row's `license` field\n"
        "names the license of its `source`; the premises written for PHRBench are released under the toolkit's\n"
        f"Apache-2.0 license.\n\n| source | license |\n|---|---|\n{rows}\n"
    )
