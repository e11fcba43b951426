"""The PHRBench dataset card, generated from the built rows (never hand-edited)."""

from __future__ import annotations

from collections import Counter

from huggingface_hub import DatasetCard, DatasetCardData

from phr.bench.conditions import ALL_CONFIG, CONFIGS
from phr.bench.instance import COLUMN_NAMES, card_features

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


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


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
    base, hall = rows[_B], rows[_H]
    domains = sorted({r["domain"] for r in base})
    types = sorted({r["mutation_type"] for r in hall if r["mutation_type"]})
    by_dt = Counter((r["domain"], r["mutation_type"]) for r in hall)
    n = {k: len(v) for k, v in rows.items()}
    counts = _table(
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
    subtypes = Counter((r["domain"], r["subtype"]) for r in base)
    subtype_table = _table(["domain", "subtype", "questions"], [[d, s, c] for (d, s), c in sorted(subtypes.items())])
    src = Counter(r["source"] for r in base)
    source_table = _table(
        ["source", "questions", "license"], [[s, c, licenses.get(s, "see source")] for s, c in sorted(src.items())]
    )
    qc_rows = [[k, v] for k, v in qc.items()]
    data = DatasetCardData(
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
    body = f"""
# PHRBench ({recipe})

PHRBench measures *post-hallucination reasoning*: how a model reasons after a hallucinated premise has entered
its context. Each base question is asked plain (**B**), with one truthful premise (**B+T**) and with
single-mutation hallucinated premises (**B+H**); the premise is added as context, the question is unchanged.

```python
from datasets import load_dataset
ds = load_dataset("phrbench", "all")   # or: baseline, truthful, hallucinated (split: test)
```

## Counts (domain x mutation type)

{counts}

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

## Construction

- Recipe: `{recipe}`
- Premise generator: `{generator}`
- Judge: `{judge or "none (rule-based validation only)"}`

### Quality control

{_table(["stage", "count"], qc_rows)}

{chr(10).join(f"- {x}" for x in notes)}

## Fields

{", ".join(f"`{c}`" for c in COLUMN_NAMES)}.

`condition` is B / B+T / B+H; `prompt` is what the model is asked; for code, `code_signature` is the stub the
model completes, and `code_tests` and `reference_solution` are never shown to models.

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
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}")


def license_text(licenses: dict[str, str]) -> str:
    """``LICENSE.md``: PHRBench mixes sources with their own licenses; each row carries its source's."""
    rows = "\n".join(f"| {s} | {lic} |" for s, lic in sorted(licenses.items()))
    return (
        "# Licenses\n\nPHRBench combines questions from several public benchmarks. Each row's `license` field\n"
        "names the license of its `source`; the premises written for PHRBench are released under the toolkit's\n"
        f"Apache-2.0 license.\n\n| source | license |\n|---|---|\n{rows}\n"
    )
