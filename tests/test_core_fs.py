"""phr.core.fs: the one atomic folder / file writer, and the temporaries a killed process leaves behind."""

import os
import stat
import subprocess
import sys

import pytest

from phr.core.fs import atomic_dir, atomic_write, clean_stale, sha256_file


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_atomic_dir_swaps_in_on_success_and_leaves_nothing_on_error(tmp_path):
    out = tmp_path / "out"
    with atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("one")
        assert not out.exists()
    assert (out / "a.txt").read_text() == "one"
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~_umask()
    with pytest.raises(RuntimeError), atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("two")
        raise RuntimeError("boom")
    assert (out / "a.txt").read_text() == "one"  # the previous version stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(FileExistsError), atomic_dir(out, overwrite=False):
        pass


def test_stale_temporaries_of_dead_processes_are_removed_live_ones_kept(tmp_path):
    dead, live = dead_pid(), os.getpid()
    stale = [
        tmp_path / f".out.tmp-{dead}-ab12",
        tmp_path / f".out.old-{dead}-cd34",
        tmp_path / f".scores.tmp-{dead}-ef",
    ]
    for p in stale:
        p.mkdir()
        (p / "half-written.parquet").write_bytes(b"PAR1")
    (tmp_path / f".out.json.tmp-{dead}-99").write_text("{")  # a file temporary
    mine = tmp_path / f".out.tmp-{live}-aaaa"
    mine.mkdir()
    other = tmp_path / ".out.tmp-notapid"
    other.mkdir()
    assert sorted(p.name for p in clean_stale(tmp_path, "out")) == sorted([stale[0].name, stale[1].name])
    with atomic_dir(tmp_path / "scores") as tmp:  # the next run of another writer cleans its own leftovers
        (tmp / "x").write_text("x")
    atomic_write(tmp_path / "out.json", "{}")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([mine.name, other.name, "out.json", "scores"])


def test_build_removes_what_a_killed_build_left(tmp_path):
    from phr.builders.phrbench import build_mini

    leftover = tmp_path / f".phrbench.tmp-{dead_pid()}-0bad"
    leftover.mkdir()
    (leftover / "README.md").write_text("half")
    build_mini(tmp_path / "phrbench")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phrbench"]


def test_atomic_write_and_sha256(tmp_path):
    p = atomic_write(tmp_path / "f.txt", "héllo")
    assert p.read_bytes() == "héllo".encode()
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~_umask()
    assert sha256_file(p) == "3c48591d8d098a4538f5e013dfcf406e948eac4d3277b10bf614e295d6068179"


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m
