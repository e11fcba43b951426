"""What the local-hub tests share: git in a served repo or a store, a small model folder, a repo pushed twice."""

from __future__ import annotations

import subprocess
from pathlib import Path

from phr.config.ops import PushConfig
from phr.hub import push

REPO = "org/x"


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``: what it prints, stripped (a failure raises)."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def model_folder(dest: Path, n: int) -> Path:
    """A two-file model folder (a card that parses, ``config.json``) that differs by ``n``."""
    dest.mkdir(parents=True)
    (dest / "README.md").write_text(f"---\nlicense: mit\n---\n# tiny {n}\n")
    (dest / "config.json").write_text(f'{{"n": {n}}}')
    return dest


def push_twice(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(hub, repo link, next folder): two pushes of ``REPO`` to ``tmp_path/hub`` tagged v1 and v2, and a third
    folder to push."""
    hub = tmp_path / "hub"
    for n in (1, 2):
        push(PushConfig(folder=model_folder(tmp_path / f"f{n}", n), repo=REPO, repo_type="model", tag=f"v{n}", hub=hub))
    return hub, hub / "models" / REPO, model_folder(tmp_path / "f3", 3)
