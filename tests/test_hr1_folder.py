"""Hub kinds of the Hallucination-R1 corpora: tiny folders built by hand (pyarrow + a card with configs and
phr_kind) pass, each kind of break is named by file/row/column, kind_of picks the kind, an unknown kind is refused."""

import pyarrow as pa
import pytest

from phr.hr1.corpora import SCHEMAS
from phr.hub import UnknownKindError
from phr.hub.card import card_configs
from phr.hub.kinds import kind_of
from phr.validation.hr1_folder import validate_corpus
from tests.support.hr1_corpora import ROWS, data_name, make_folder, para


@pytest.mark.parametrize("kind", list(ROWS))
def test_valid_folder_passes_and_kind_of_picks_it(tmp_path, kind):
    folder = make_folder(tmp_path, kind)
    report = validate_corpus(folder, kind)
    assert report.ok, report.render()
    assert kind_of(folder, "dataset", card_configs(folder)).name == kind
    assert kind_of(folder, "dataset", card_configs(folder)).validate(folder).ok


def test_unknown_phr_kind_is_refused(tmp_path):
    folder = make_folder(tmp_path, "hr1-sft", phr_kind="hr1-something")
    with pytest.raises(UnknownKindError, match="no artifact kind recognises"):
        kind_of(folder, "dataset", card_configs(folder))


def test_missing_manifest_and_wrong_kind_on_card(tmp_path):
    folder = make_folder(tmp_path, "hr1-grpo", manifest=False)
    report = validate_corpus(folder, "hr1-sft")
    found = {(r.row_id, r.check) for r in report}
    assert ("manifest.json", "folder") in found
    assert ("README.md", "card") in found  # phr_kind says hr1-grpo
    assert (data_name(folder), "schema:paraphrase") in found  # grpo columns are not the SFT schema


def test_missing_data_file_named_by_the_card(tmp_path):
    folder = make_folder(tmp_path, "hr1-sft")
    next((folder / "data").glob("*.parquet")).unlink()
    msgs = [r.reason for r in validate_corpus(folder, "hr1-sft")]
    assert any("data/default-*.parquet, which does not exist" in m for m in msgs)
    assert "no data files" in msgs


def test_unreadable_and_edited_files(tmp_path):
    folder = make_folder(tmp_path, "hr1-sft")
    path = next((folder / "data").glob("*.parquet"))
    path.write_bytes(b"not parquet")
    checks = {r.check: r.row_id for r in validate_corpus(folder, "hr1-sft")}
    assert checks["content_hash"] == checks["folder"] == f"data/{path.name}"


def test_paraphrase_without_text_or_error_and_label_without_text(tmp_path):
    rows = ROWS["hr1-paraphrases"]()
    rows[0]["paraphrases"][1] = para(1, None, True, None)
    folder = make_folder(tmp_path, "hr1-paraphrases", rows)
    got = {(r.row_id, r.check) for r in validate_corpus(folder, "hr1-paraphrases")}
    where = f"{data_name(folder)} row 0 (simplequestions-train-0) paraphrase k=1"
    assert got == {(where, "paraphrases.text"), (where, "paraphrases.consistent")}


def test_column_type_and_missing_column_named(tmp_path):
    rows = ROWS["hr1-sft"]()
    bad_schema = SCHEMAS["hr1-sft"].remove(SCHEMAS["hr1-sft"].get_field_index("license"))
    bad_schema = bad_schema.set(bad_schema.get_field_index("answer"), pa.field("answer", pa.large_string()))
    table = pa.Table.from_pylist([{k: v for k, v in r.items() if k != "license"} for r in rows], schema=bad_schema)
    folder = make_folder(tmp_path, "hr1-sft", table=table)
    got = {(r.row_id, r.check): r.reason for r in validate_corpus(folder, "hr1-sft")}
    rel = data_name(folder)
    assert got == {
        (rel, "schema:license"): "column missing",
        (rel, "schema:answer"): "type large_string, expected string",
    }


def test_sft_messages_must_be_paraphrase_then_answer(tmp_path):
    rows = ROWS["hr1-sft"]() * 2
    rows[1] = {**rows[1], "id": "simplequestions-train-0-p1", "messages": [
        {"role": "user", "content": "Where did roger marquis die"},
        {"role": "assistant", "content": "Lyon"},
    ]}  # fmt: skip
    folder = make_folder(tmp_path, "hr1-sft", rows)
    got = [(r.row_id, r.check, r.reason) for r in validate_corpus(folder, "hr1-sft")]
    where = f"{data_name(folder)} row 1 (simplequestions-train-0-p1)"
    assert got == [
        (where, "messages", "the user message is not the row's (non-empty) paraphrase"),
        (where, "messages", "the assistant message is not the row's (non-empty) answer in <answer> tags"),
    ]


def test_grpo_prompt_ids_unique_and_answers_present(tmp_path):
    rows = ROWS["hr1-grpo"]()
    rows[1] = {**rows[1], "prompt_id": "p0", "answers": []}
    folder = make_folder(tmp_path, "hr1-grpo", rows)
    got = {(r.row_id, r.check) for r in validate_corpus(folder, "hr1-grpo")}
    assert got == {(f"{data_name(folder)} row 1 (p0)", "answers"), ("p0", "prompt_id")}
