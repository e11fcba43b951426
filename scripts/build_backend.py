"""The project's build backend (pyproject.toml, [build-system]): setuptools', with one change to the editable
install (``pip install -e .``).

The package maps ``phr.builders``, ``phr.eval``, ... to top-level folders, so setuptools installs it in editable
mode through an import finder (``__editable___phr_toolkit_*_finder.py``, started by a ``.pth`` file) that it appends
to ``sys.meta_path``: it is asked only after Python's path finder has found nothing, and a folder without
``__init__.py`` is something (a namespace package). A folder named ``phr`` in the current directory or the script's
(the folder that holds a clone named ``phr``) was then the package ``phr``: ``import phr.bench`` found the clone's
``bench/`` (the benchmarks), ``phr.builders`` the clone's copy, and ``phr/__init__.py`` never ran (setuptools issue
3557). Here a finder asked first (``_OverNamespaces``) settles the top-level name: a regular package or module found
on ``sys.path`` as usual (``PYTHONPATH``, a plain install: scripts/lint.sh's), else this editable install, never a
namespace package (tests/test_install_layout.py). A regular wheel (``pip install .``) is setuptools' own, unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook of PEP 517 and PEP 660, as setuptools has them)

INSTALL = "def install():\n"
#: what ``install()`` does first here: the finder below goes first on ``sys.meta_path``
FIRST = "    if _OverNamespaces not in sys.meta_path:\n        sys.meta_path.insert(0, _OverNamespaces)\n"
#: appended to setuptools' finder module, whose MAPPING, PathFinder and _EditableFinder it uses
OVER_NAMESPACES = '''

class _OverNamespaces:  # MetaPathFinder, first on sys.meta_path (the project's scripts/build_backend.py)
    """A top-level package of this install: a regular package or module found on sys.path as usual, else this
    editable install, never a namespace package made of a folder that happens to have its name."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if "." in fullname or fullname not in MAPPING:
            return None
        found = PathFinder.find_spec(fullname, path)
        if found is not None and found.origin is not None:
            return found
        return _EditableFinder.find_spec(fullname, path, target)
'''
#: the names of setuptools' finder module the code above relies on
NEEDED = ("MAPPING", "PathFinder", "class _EditableFinder", INSTALL)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: setuptools' editable wheel, with ``_OverNamespaces`` asked first (the module docstring)."""
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    over_namespaces(Path(wheel_directory) / name)
    return name


def patched(body: str) -> str | None:
    """Setuptools' finder module with ``_OverNamespaces`` added and installed first; None when it is not written
    as this expects (then the install is setuptools' own, which tests/test_install_layout.py catches)."""
    if body.count(INSTALL) != 1 or any(name not in body for name in NEEDED) or "_OverNamespaces" in body:
        return None
    return body.replace(INSTALL, INSTALL + FIRST) + OVER_NAMESPACES


def over_namespaces(wheel: Path) -> bool:
    """Rewrite the editable ``wheel``'s finder module (``patched``) and its RECORD line; False when there is no
    finder (``editable_mode=strict`` / ``compat``: a path entry, which a namespace portion cannot shadow) or it
    cannot be patched (a warning)."""
    with zipfile.ZipFile(wheel) as z:
        entries = [(info, z.read(info)) for info in z.infolist()]
    finders = [
        i.filename for i, _ in entries if i.filename.startswith("__editable__") and i.filename.endswith("_finder.py")
    ]
    if len(finders) != 1:
        return False
    [finder] = finders
    body = patched(dict((i.filename, data) for i, data in entries)[finder].decode())
    if body is None:
        print(f"build_backend: {finder} is not as expected: left as setuptools wrote it", file=sys.stderr)
        return False
    new = body.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(new).digest()).rstrip(b"=").decode()
    out = []
    for info, data in entries:
        if info.filename == finder:
            data = new
        elif info.filename.endswith(".dist-info/RECORD"):
            lines = data.decode().splitlines()
            lines = [f"{finder},sha256={digest},{len(new)}" if ln.split(",")[0] == finder else ln for ln in lines]
            data = ("\n".join(lines) + "\n").encode()
        out.append((info, data))
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in out:
            z.writestr(info, data)
    tmp.replace(wheel)
    return True
