"""The editable install is immune to a folder named ``phr`` on ``sys.path`` (issue 33, item 8).

A script run from the folder that holds a clone named ``phr`` has that folder first on ``sys.path``; with
setuptools' editable finder appended to ``sys.meta_path`` (after Python's path finder), the clone was imported as a
namespace package ``phr``: ``phr.bench`` was the clone's ``bench/`` (the benchmarks: ModuleNotFoundError for
``phr.bench.instance``), ``phr.builders`` the clone's copy, ``phr/__init__.py`` never ran. The project's build
backend (scripts/build_backend.py) adds a finder asked first: a regular package found on ``sys.path`` as usual
(``PYTHONPATH``: scripts/lint.sh's plain install), else the editable install, never a namespace package. The
checks run the interpreter of this environment (the project's .venv, installed by scripts/setup.sh) as a
user's script would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REINSTALL = ".venv/bin/python -m pip install -c constraints.txt --no-deps -e ."

PROBE = """
import json, phr, phr.bench.instance, phr.builders, phr.api
print(json.dumps({"phr": phr.__file__, "bench": phr.bench.__file__, "builders": phr.builders.__file__,
                  "version": phr.__version__}))
"""


def _clone_named_phr(parent: Path) -> Path:
    """A folder named ``phr`` laid out like a clone of the repository: ``bench/`` (no ``__init__.py``, as the
    repo's), ``builders/`` (a package that must not be the one imported)."""
    clone = parent / "phr"
    (clone / "bench").mkdir(parents=True)
    (clone / "bench" / "scorer.py").write_text("")
    (clone / "builders").mkdir()
    (clone / "builders" / "__init__.py").write_text("raise ImportError('the folder named phr was imported')\n")
    return clone


def _installed(found: dict) -> None:
    assert found["phr"] == str(ROOT / "phr" / "__init__.py"), found
    assert found["bench"] == str(ROOT / "phr" / "bench" / "__init__.py"), found
    assert found["builders"] == str(ROOT / "builders" / "__init__.py"), found


def _editable_finder() -> Path | None:
    """The finder module of this environment's editable install of the project, if it is one."""
    for folder in map(Path, sys.path):
        found = sorted(folder.glob("__editable___phr_toolkit_*_finder.py")) if folder.is_dir() else []
        if found:
            return found[0]
    return None


@pytest.mark.parametrize("how", ["-c", "script"])
def test_a_folder_named_phr_in_the_working_folder_is_not_imported(how, tmp_path):
    _clone_named_phr(tmp_path)
    if how == "-c":
        args = [sys.executable, "-c", PROBE]  # sys.path[0] is the working folder
    else:
        (tmp_path / "probe.py").write_text(PROBE)  # sys.path[0] is the script's folder
        args = [sys.executable, "probe.py"]
    r = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, check=False)
    finder = _editable_finder()
    stale = finder is not None and "_OverNamespaces" not in finder.read_text()
    hint = f"; the editable install predates scripts/build_backend.py: reinstall it ({REINSTALL})" if stale else ""
    assert r.returncode == 0, r.stderr[-2000:] + hint
    _installed(json.loads(r.stdout))


def test_a_regular_package_on_pythonpath_still_comes_first(tmp_path):
    """What a namespace folder may not do, a plain install put first on ``sys.path`` still does (scripts/lint.sh
    runs import-linter on one in .cache/lint-tree, by PYTHONPATH)."""
    plain = tmp_path / "plain"
    (plain / "phr").mkdir(parents=True)
    (plain / "phr" / "__init__.py").write_text("")
    (plain / "phr" / "marker.py").write_text("")
    _clone_named_phr(tmp_path / "cwd")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(plain), os.environ.get("PYTHONPATH")]))}
    probe = "import phr.marker; print(phr.__file__)"
    r = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path / "cwd", env=env, capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == str(plain / "phr" / "__init__.py")


def test_the_backend_patches_setuptools_finder_in_the_wheel(tmp_path):
    """On a wheel as setuptools writes it: the finder module patched, its RECORD line (hash, size) updated; a
    finder module not as expected is left alone."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from build_backend import over_namespaces, patched
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    finder = "__editable___phr_toolkit_0_1_0_finder.py"
    body = (
        "import sys\nfrom importlib.machinery import PathFinder\nMAPPING = {'phr': '/src/phr'}\n\n"
        "class _EditableFinder:\n    pass\n\ndef install():\n    sys.meta_path.append(_EditableFinder)\n"
    )
    wheel = tmp_path / "phr_toolkit-0.1.0-0.editable-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(finder, body)
        z.writestr("__editable__.phr_toolkit-0.1.0.pth", "import __editable___phr_toolkit_0_1_0_finder\n")
        z.writestr("phr_toolkit-0.1.0.dist-info/RECORD", f"{finder},sha256=x,1\nphr_toolkit-0.1.0.dist-info/RECORD,,\n")
    assert over_namespaces(wheel)
    with zipfile.ZipFile(wheel) as z:
        new = z.read(finder)
        record = z.read("phr_toolkit-0.1.0.dist-info/RECORD").decode().splitlines()
    assert new.decode() == patched(body) and "class _OverNamespaces" in new.decode()
    compile(new, finder, "exec")
    digest = base64.urlsafe_b64encode(hashlib.sha256(new).digest()).rstrip(b"=").decode()
    assert record == [f"{finder},sha256={digest},{len(new)}", "phr_toolkit-0.1.0.dist-info/RECORD,,"]
    assert not over_namespaces(wheel)  # patched once only
    assert patched(body.replace("MAPPING", "PATHS")) is None  # setuptools wrote it otherwise: left as it is
