"""Files and folders written so that a reader never sees them half-written, file hashes, and the links that lead
out of a folder (``folder_links``).

``atomic_dir(dest)`` yields a temporary sibling ``.<name>.tmp-<pid>-<random>``; when the block ends without an
error the sibling replaces ``dest`` (one rename; an existing ``dest`` is first renamed aside and then removed),
otherwise it is removed. A process killed inside the block leaves its temporary sibling behind: the next
``atomic_dir`` (or ``clean_stale``) on the same parent removes siblings whose process is gone.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from phr.core.errors import UsageError
from phr.core.faults import note_path

_TEMP = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)-[0-9a-f]+$")


class OutputExistsError(UsageError):
    """The output folder exists and the run was not asked to replace it (``overwrite``)."""


def exists_message(path: str | Path, field: str = "out") -> str:
    """The one refusal of an existing output, naming the config field and ``overwrite=True`` (the CLI shows them
    as its flags: ``--out x: ... (pass --overwrite to replace it)``)."""
    return (
        f"{field}={str(path)!r}: {Path(path).expanduser().resolve()} already exists (pass overwrite=True to replace it)"
    )


def refuse_existing(path: str | Path, overwrite: bool, field: str = "out") -> None:
    """Raise :class:`OutputExistsError` when ``path`` exists and ``overwrite`` is false."""
    if not overwrite and Path(path).expanduser().exists():
        raise OutputExistsError(exists_message(path, field))


def sha256_file(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def folder_links(folder: str | Path, skip: tuple[str, ...] = (".git", ".cache/huggingface")) -> list[tuple[str, str]]:
    """Every entry under ``folder`` that points out of it: symbolic links (to a file, a folder, a parent, a loop;
    never followed) and regular files with hard links outside the folder (more names than the folder holds).
    Returns ``(relative POSIX path, what it is)`` pairs, sorted; folders in ``skip`` (relative paths) are not
    entered. A walk that never follows a link cannot loop."""
    folder = Path(folder)
    found: list[tuple[str, str]] = []
    files: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for root, dirs, names in os.walk(folder, followlinks=False):
        rel_root = Path(root).relative_to(folder).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        keep = []
        for d in dirs:
            rel = rel_root + d
            if rel in skip or d == ".git":
                continue
            if os.path.islink(os.path.join(root, d)):
                found.append((rel, f"symbolic link to {os.readlink(os.path.join(root, d))!r} (a folder)"))
            else:
                keep.append(d)
        dirs[:] = keep
        for name in names:
            path = os.path.join(root, name)
            rel = rel_root + name
            st = os.lstat(path)
            if os.path.islink(path):
                found.append((rel, f"symbolic link to {os.readlink(path)!r}"))
            elif st.st_nlink > 1:
                files.setdefault((st.st_dev, st.st_ino), []).append((rel, st.st_nlink))
    for linked in files.values():
        nlink = linked[0][1]
        if nlink > len(linked):
            for rel, _ in linked:
                found.append((rel, f"hard link: the file has {nlink} names, {nlink - len(linked)} of them outside"))
    return sorted(found)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current_umask() -> int:
    """The process umask, read without changing it where Linux exposes it (else set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def honour_umask(path: str | os.PathLike) -> None:
    """Give ``path`` (a folder from ``mkdtemp`` or a file from ``mkstemp``) the modes of a normal new one."""
    base = 0o777 if Path(path).is_dir() else 0o666
    os.chmod(path, base & ~current_umask())


def temp_sibling(dest: Path, kind: str = "tmp") -> Path:
    """A fresh name ``.<name>.<kind>-<pid>-<random>`` beside ``dest`` (not created)."""
    return dest.with_name(f".{dest.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}")


def clean_stale(parent: str | Path, name: str | None = None) -> list[Path]:
    """Remove temporary siblings (``.<name>.tmp-<pid>-*`` / ``.<name>.old-<pid>-*``) left in ``parent`` by
    processes that no longer run; only those of ``name`` when given. Returns what was removed."""
    parent = Path(parent)
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for p in parent.iterdir():
        m = _TEMP.match(p.name)
        if not m or (name is not None and m["name"] != name) or pid_alive(int(m["pid"])):
            continue
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def replace_path(src: Path, dest: Path) -> None:
    """Move ``src`` to ``dest``, replacing an existing file or folder (renamed aside first, then removed)."""
    if dest.exists() or dest.is_symlink():
        old = temp_sibling(dest, "old")
        os.replace(dest, old)
        os.replace(src, dest)
        _remove(old)
    else:
        os.replace(src, dest)


@contextmanager
def atomic_dir(dest: str | Path, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``dest``; on success it becomes ``dest`` (modes as for a normal
    ``mkdir``), on error it is removed. With ``overwrite=False`` an existing ``dest`` raises FileExistsError."""
    dest = Path(dest).expanduser().resolve()
    if not overwrite and dest.exists():
        raise FileExistsError(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(dest.parent, dest.name)
    tmp = temp_sibling(dest)
    try:
        tmp.mkdir(mode=0o777 & ~current_umask())
    except OSError as e:
        note_path(e, dest)
        raise
    try:
        yield tmp
        replace_path(tmp, dest)
    except BaseException as e:
        _remove(tmp)
        inner = getattr(e, "phr_path", None) or getattr(e, "filename", None)
        if isinstance(e, OSError) and (inner is None or str(inner).startswith(str(tmp))):
            note_path(e, dest, replace=True)  # a write into the temporary folder: name what was being written
        raise


def atomic_write(path: str | Path, data: bytes | str, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` through a temporary sibling and one rename (modes as for a normal file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path.parent, path.name)
    tmp = temp_sibling(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode(encoding) if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and (e.filename is None or str(e.filename) == str(tmp)):
            note_path(e, path)
        raise
    return path


def json_text(obj: object) -> str:
    """Deterministic JSON: indented, sorted keys, UTF-8 kept, a final newline."""
    import json

    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(obj: object, path: str | Path) -> None:
    Path(path).write_text(json_text(obj), encoding="utf-8")
