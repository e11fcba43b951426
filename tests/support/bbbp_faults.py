"""A malformed MoleculeNet BBBP file and the error its loader gives (tests of the source faults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phr.builders.sources import MalformedSourceError, bbbp


def malformed_bbbp(folder: Path, content: str) -> tuple[Path, str]:
    """Write ``content`` as ``folder``/BBBP.csv (line ends as given); its path and the message of the
    MalformedSourceError that loading it must raise."""
    path = folder / "BBBP.csv"
    path.write_text(content, newline="")
    with pytest.raises(MalformedSourceError) as err:
        bbbp.load(folder)
    return path, str(err.value)
