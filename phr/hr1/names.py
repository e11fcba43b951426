"""Names the Hallucination-R1 commands declare their options with, apart from ``records`` (pydantic) and the
builders (pyarrow) so the CLI can declare options without importing those."""

from __future__ import annotations

#: The question sources of the paper (§4.1).
SOURCES = ("simplequestions", "popqa", "truthfulqa")
