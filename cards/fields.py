"""The Fields table of the dataset cards: every column with its type, what it means and its value in one example
row (shortened)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - pyarrow is imported where a type is described
    import pyarrow as pa

EXAMPLE_CHARS = 60


def example_value(value: object) -> str:
    """A cell's value as short Markdown-safe text: ``null``, numbers as they are, text quoted and cut."""
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > EXAMPLE_CHARS:
        text = text[: EXAMPLE_CHARS - 1] + "…"
    text = text.replace("|", "\\|").replace("`", "'")
    return f"`{text}`" if text else '`""`'


def fields_table(columns: list[tuple[str, str]], meanings: dict[str, str], example: dict) -> str:
    """``| field | type | meaning | example |`` for ``columns`` ((name, type) in file order). A column without a
    meaning is an error: a new column gets its line in the card's meanings when it is added."""
    missing = [name for name, _ in columns if name not in meanings]
    if missing:
        raise KeyError(f"the card has no meaning for the column(s) {', '.join(missing)}")
    lines = ["| field | type | meaning | example |", "|---|---|---|---|"]
    lines += [
        f"| `{name}` | {type_} | {meanings[name]} | {example_value(example.get(name))} |" for name, type_ in columns
    ]
    return "\n".join(lines)


def arrow_type(t: pa.DataType) -> str:
    """A pyarrow type in words: ``string``, ``list of string``, ``list of struct (role, content)``."""
    import pyarrow as pa

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list of {arrow_type(t.value_type)}"
    if pa.types.is_struct(t):
        return f"struct ({', '.join(t.field(i).name for i in range(t.num_fields))})"
    return str(t)
