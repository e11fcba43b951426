"""A real headless chromium for page tests: find it, dump the DOM after the page's scripts ran, parse its table."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest


class Table(HTMLParser):
    """Header attributes and body rows (each a list of the cells' data-value; ``row_attrs``: each row's attributes)
    of the page's table ``table_id`` (default: the leaderboard), the page's links, images and elements by id."""

    def __init__(self, text: str, table_id: str = "leaderboard"):
        super().__init__()
        self.table_id = table_id
        self.heads: list[dict[str, str | None]] = []
        self.rows: list[list[str | None]] = []
        self.row_attrs: list[dict[str, str | None]] = []
        self.links: list[str | None] = []
        self.images: list[str | None] = []
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.sections: dict[str, dict[str, str | None]] = {}
        self.body: dict[str, str | None] = {}
        self._in_table = self._in_body = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.by_id[a["id"]] = a
        if tag == "table":
            self._in_table = a.get("id") == self.table_id
        elif tag == "section" and a.get("data-view"):
            self.sections[a["data-view"]] = a
        elif tag == "th" and self._in_table:
            self.heads.append(a)
        elif tag == "tbody" and self._in_table:
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
            self.row_attrs.append(a)
        elif tag == "td" and self._in_body:
            self.rows[-1].append(a.get("data-value"))
        elif tag == "body":
            self.body = a
        elif tag == "a":
            self.links.append(a.get("href"))
        elif tag == "img":
            self.images.append(a.get("src"))

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._in_table = False

    def column(self, key: str) -> list[str | None]:
        i = [h["data-key"] for h in self.heads].index(key)
        return [r[i] for r in self.rows]

    def sorted_head(self) -> dict[str, str | None]:
        marked = {h["data-key"]: h.get("aria-sort") for h in self.heads if h.get("aria-sort")}
        assert len(marked) == 1, marked
        return marked


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium not installed: run scripts/install-browser.sh as root")
    return exe


def dump_dom(exe: str, page: Path, fragment: str, home: Path, table_id: str = "leaderboard") -> Table:
    """The DOM after the page's scripts ran, as dumped by headless chromium."""
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--user-data-dir={home / 'profile'}",
        "--dump-dom",
        page.as_uri() + fragment,
    ]
    env = {**os.environ, "HOME": str(home)}
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0 and "<table" in proc.stdout, proc.stderr[-2000:]
    return Table(proc.stdout, table_id)
