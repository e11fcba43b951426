"""Cards of the Hallucination-R1 corpora, generated from the data and the manifest: counts, consistency rate,
the Mean-Div histogram, QA outcomes, the models and prompt hashes used, licenses per source, and what a
reader must know (smoke-test models, stand-in splits)."""

from __future__ import annotations

import json
from collections import Counter

import yaml

from phr.cards.fields import arrow_type, fields_table
from phr.hr1.corpora import ALL_CONFIG, KIND_FIELD, SCHEMAS
from phr.hub.card import usage_block

TITLES = {
    "hr1-paraphrases": "Hallucination-R1 paraphrase corpus",
    "hr1-sft": "Hallucination-R1 SFT corpus (App. E.1)",
    "hr1-grpo": "Hallucination-R1 GRPO prompt corpus (App. C.1)",
}
HF_LICENSE = {"CC-BY-3.0": "cc-by-3.0", "MIT": "mit", "Apache-2.0": "apache-2.0"}
#: what each column means (the Fields table; every column of ``phr.hr1.corpora.SCHEMAS`` needs its line)
MEANINGS = {
    "id": "the row id (a question's id; SFT: the question id and the paraphrase's k)",
    "prompt_id": "a stable id of the prompt (hash of the question id and text)",
    "question_id": "the source question's id",
    "source": "the question's source dataset",
    "split": "the source split the question comes from",
    "source_row_id": "the question's row id in its source",
    "question": "the source question",
    "answers": "the gold answers (aliases)",
    "license": "the license of the row (its source's)",
    "meta": "further source fields as key/value pairs",
    "qa_answer": "the QA model's answer to the original question",
    "qa_extraction": "how that answer was extracted (tag, fallback, none)",
    "factual_score": "the answer judge's score of that answer (Listing B.3)",
    "correctness": "the original question's QA outcome: correct, wrong or not asked",
    "paraphrases": "the K paraphrases with their consistency verdict, diversity scores and QA outcome",
    "paraphrase": "a consistent paraphrase of the question",
    "answer": "the gold answer the SFT target carries",
    "prompt": "the chat the paraphraser is given (Listing B.1 applied to the question)",
    "messages": "the chat for SFT: system (Listing B.4), user (the paraphrase), assistant (the answer)",
}
PAPER = "Hallucination-R1: Robustness-Oriented Paraphrase Generation for Factual Consistency (arXiv 2609.21227v1)"


def _license(licenses: set[str]) -> str:
    if len(licenses) == 1:
        return HF_LICENSE.get(next(iter(licenses)), "other")
    return "other"


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "n/a"


def _histogram(values: list[float], bins: int = 10) -> list[str]:
    counts = Counter(min(int(v * bins), bins - 1) for v in values)
    rows = ["| Mean-Div | paraphrases |", "|---|---|"]
    rows += [f"| {b / bins:.1f}–{(b + 1) / bins:.1f} | {counts.get(b, 0)} |" for b in range(bins)]
    return rows


def render(
    kind: str, configs: list[dict], manifest: dict, rows_by_config: dict[str, list[dict]], folder: str | None = None
) -> str:
    """The README.md of a corpus folder (YAML metadata + body); its usage loads ``folder`` (the folder the build
    writes by default, e.g. ``hr1-mini``; default: the kind), the ``all`` config when the card has one."""
    all_rows = [r for rows in rows_by_config.values() for r in rows]
    licenses = {r["license"] for r in all_rows} or set(manifest.get("licenses", {}).values())
    meta = {
        KIND_FIELD: kind,
        "pretty_name": TITLES[kind],
        "license": _license(licenses),
        "language": ["en"],
        "task_categories": ["question-answering", "text-generation"],
        "tags": ["hallucination-r1", "paraphrase", "robustness"],
        "configs": configs,
    }
    models = manifest.get("models", {})
    lines = [f"# {TITLES[kind]}", "", f"Built with the PHR toolkit from {PAPER}.", ""]
    if manifest.get("smoke"):
        lines += [
            "> **Smoke-test corpus.** The paraphraser, QA model and judges are the offline `local:smollm2` "
            "(SmolLM2-135M-Instruct), with capped output lengths: it shows that the pipeline runs, not what the "
            "paper's models produce. Do not report its numbers.",
            "",
        ]
    for note in manifest.get("notices", []):
        lines += [f"> {note}", ""]
    for note in manifest.get("stand_in_splits", []):
        lines += [f"> **Stand-in split.** {note}", ""]
    lines += ["## Sources and licenses", "", "| config | source | split | rows | license |", "|---|---|---|---|---|"]
    for name, rows in rows_by_config.items():
        by_split = Counter((r["source"], r["split"], r["license"]) for r in rows)
        for (src, split, lic), n in sorted(by_split.items()):
            lines.append(f"| {name} | {src} | {split} | {n} | {lic} |")
    skipped = manifest.get("skipped", {})
    if skipped:
        lines += ["", "Rows skipped while loading: " + "; ".join(f"{s}: {n}" for s, n in skipped.items()) + "."]
    lines += ["", "## Models and prompts", "", "| role | model |", "|---|---|"]
    lines += [f"| {role} | `{spec}` |" for role, spec in models.items()]
    lines += ["", "| prompt (App. B) | SHA-256 |", "|---|---|"]
    lines += [f"| {name} | `{h[:16]}` |" for name, h in manifest.get("prompts", {}).items()]
    names = [c["config_name"] for c in configs]
    target = json.dumps(folder or kind)
    if ALL_CONFIG in names:
        code = f'from datasets import load_dataset\nds = load_dataset({target}, "{ALL_CONFIG}")'
        code += f"   # every row; one source: {', '.join(n for n in names if n != ALL_CONFIG)}"
    else:
        code = f'from datasets import load_dataset\nds = load_dataset({target}, "{names[0] if names else "default"}")'
        if len(names) > 1:
            code += f"   # configs: {', '.join(names)}"
    lines += ["", usage_block(code)]
    lines += ["", "## Contents", ""] + _body(kind, all_rows, manifest)
    schema = SCHEMAS[kind]
    lines += ["", "## Fields", "", "One row per " + ("question" if kind == "hr1-paraphrases" else "example") + ":", ""]
    lines += [fields_table([(f.name, arrow_type(f.type)) for f in schema], MEANINGS, (all_rows or [{}])[0])]
    dropped = manifest.get("dropped_for_leakage") or []
    if dropped:
        lines += [
            "",
            f"{len(dropped)} training row(s) were left out for split leakage against the evaluation sets "
            f"({', '.join(manifest.get('eval_sets', []))}); manifest.json lists each with the matching question.",
        ]
    elif manifest.get("leakage_checked"):
        lines += ["", f"Checked for split leakage against: {', '.join(manifest.get('eval_sets', []))} (none found)."]
    lines += [
        "",
        "## Citation",
        "",
        f"{PAPER}. Built by `phr-publish build {kind}`; see manifest.json for every setting.",
    ]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + "\n".join(lines) + "\n"


def _body(kind: str, rows: list[dict], manifest: dict) -> list[str]:
    if kind == "hr1-paraphrases":
        paras = [p for r in rows for p in r["paraphrases"]]
        consistent = [p for p in paras if p["consistent"]]
        no_text = sum(p["text"] is None for p in paras)
        unjudged = sum(p["text"] is not None and p["consistent"] is None for p in paras)
        qa = Counter(r["correctness"] or "not asked" for r in rows)
        pqa = Counter(p["correctness"] for p in consistent if p["correctness"])
        out = [
            f"- {len(rows)} questions, {len(paras)} paraphrases (K = {manifest.get('k')} per question).",
            f"- Consistent ({manifest.get('consistency_labels', 'Listing B.2 judge')}): {len(consistent)} ({_pct(len(consistent), len(paras))}); "
            f"without a usable `<paraphrase>`: {no_text}; unjudged: {unjudged}.",
            "- QA on the original questions: " + ", ".join(f"{k} {v}" for k, v in sorted(qa.items())) + ".",
            "- QA on consistent paraphrases: "
            + (", ".join(f"{k} {v}" for k, v in sorted(pqa.items())) or "none asked")
            + ".",
        ]
        divs = [p["mean_div"] for p in consistent if p["mean_div"] is not None]
        if divs:
            out += ["", "Mean-Div of consistent paraphrases (docs/hr1.md):", ""] + _histogram(divs)
        return out
    if kind == "hr1-sft":
        qs = {r["question_id"] for r in rows}
        return [
            f"- {len(rows)} (consistent paraphrase, gold answer) pairs from {len(qs)} questions, as chat `messages` "
            "(system: Listing B.4, user: the paraphrase, assistant: `<answer>gold</answer>`) for TRL's SFTTrainer."
        ]
    if manifest.get("qa_filter"):
        return [
            f"- {len(rows)} prompts; QA filter: {manifest['qa_filter']}. Each with a stable `prompt_id`, "
            "Listing B.1 applied as `prompt`, and the gold answers for the reward."
        ]
    return [
        f"- {len(rows)} prompts: questions the QA model answered correctly ({manifest.get('kept_of', '?')} asked), "
        "each with a stable `prompt_id`, Listing B.1 applied as `prompt`, and the gold answers for the reward."
    ]
