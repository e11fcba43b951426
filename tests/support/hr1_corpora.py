"""Tiny Hallucination-R1 corpus folders built by hand (pyarrow + a card with configs and phr_kind)."""

import json

import pyarrow as pa

from phr.core.parquet import write_parquet_hashed
from phr.hr1.corpora import SCHEMAS


def para(k, text, consistent=True, parse_error=None):
    return {
        "k": k,
        "text": text,
        "parse_error": parse_error,
        "consistent": consistent,
        "consistency_think": "same",
        "s_selfbleu": None,
        "s_embed": None,
        "r_div": None,
        "mean_div": None,
        "qa_answer": None,
        "qa_extraction": None,
        "factual_score": None,
        "correctness": None,
    }


def _q(i):
    return {
        "id": f"simplequestions-train-{i}",
        "source": "simplequestions",
        "split": "train",
        "source_row_id": str(i),
        "question": "Where did roger marquis die",
        "license": "CC-BY-3.0",
    }


ROWS = {
    "hr1-paraphrases": lambda: [
        {
            **_q(0),
            "answers": ["Paris"],
            "meta": [{"key": "subject", "value": "Q1"}],
            "qa_answer": "Paris",
            "qa_extraction": "tag",
            "factual_score": 0,
            "correctness": "correct",
            "paraphrases": [para(0, "In which place did Roger Marquis pass away?"), para(1, None, None, "no tag")],
        }
    ],
    "hr1-sft": lambda: [
        {
            **_q(0),
            "id": "simplequestions-train-0-p0",
            "question_id": "simplequestions-train-0",
            "paraphrase": "In which place did Roger Marquis pass away?",
            "answer": "Paris",
            "messages": [
                {"role": "user", "content": "In which place did Roger Marquis pass away?"},
                {"role": "assistant", "content": "<answer>Paris</answer>"},
            ],
        }
    ],
    "hr1-grpo": lambda: [
        {
            **{k: v for k, v in _q(i).items() if k not in ("id", "source_row_id")},
            "prompt_id": f"p{i}",
            "question_id": f"simplequestions-train-{i}",
            "answers": ["Paris"],
            "prompt": [{"role": "user", "content": "Original question: Where did roger marquis die"}],
        }
        for i in range(2)
    ],
}
CONFIG = {"hr1-paraphrases": "simplequestions", "hr1-sft": "default", "hr1-grpo": "default"}


def make_folder(tmp_path, kind, rows=None, *, phr_kind=None, manifest=True, table=None):
    folder = tmp_path / kind
    (folder / "data").mkdir(parents=True)
    rows = ROWS[kind]() if rows is None else rows
    config = CONFIG[kind]
    tbl = table if table is not None else pa.Table.from_pylist(rows, schema=SCHEMAS[kind])
    write_parquet_hashed(tbl, folder / "data", config)
    (folder / "README.md").write_text(
        f"---\nphr_kind: {phr_kind or kind}\nconfigs:\n- config_name: {config}\n  data_files:\n"
        f"  - split: train\n    path: data/{config}-*.parquet\n---\n# corpus\n"
    )
    if manifest:
        (folder / "manifest.json").write_text(json.dumps({"kind": kind}))
    return folder


def data_name(folder):
    return "data/" + next((folder / "data").glob("*.parquet")).name
