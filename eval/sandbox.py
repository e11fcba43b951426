"""Run untrusted, model-written Python programs in a sandbox: one fresh process per program.

Layers (see docs/sandbox.md):

* **isolation** -- ``bwrap`` (bubblewrap: new pid, net, ipc, uts and mount namespaces, a new root made
  of read-only binds of the system directories and the interpreter, tmpfs ``/tmp`` and work dir),
  else ``unshare`` (util-linux unshare, root only: the same namespaces and root built by our own
  bootstrap), else ``rlimits`` (no namespaces; seccomp denies sockets, Landlock confines files). The
  isolation used is recorded in every ``Verdict``; ``isolation_report`` says whether it is weak (what
  commands print).
* **privileges** -- when the caller is root the program runs as an unprivileged uid of its own
  (unique per concurrent job), so RLIMIT_NPROC counts only its processes and it can signal nothing
  of the host; in ``bwrap`` mode as non-root a user namespace does the same job.
* **rlimits** -- always: CPU seconds, address space, processes, file size, no core files, open files.
* **wall clock** -- the whole process tree is killed on timeout (the pid namespace, or the process
  group plus a sweep of the job's uid).
* **environment** -- built from nothing (PATH, LANG, HOME, TMPDIR + what the caller passes): the
  caller's secrets (HF_TOKEN, *_API_KEY, ...) are never inherited. stdin is /dev/null; stdout and
  stderr are captured up to a size cap.

Public API: ``run_program``, ``check_solution``, ``run_many``, ``Verdict``, ``detect_isolation``,
``isolation_available``, ``isolation_report`` (``IsolationReport``).
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "ISOLATIONS",
    "STATUSES",
    "IsolationReport",
    "Verdict",
    "check_solution",
    "detect_isolation",
    "isolation_available",
    "isolation_report",
    "run_many",
    "run_program",
]

STATUSES = ("passed", "failed", "timeout", "memory", "error", "killed")
ISOLATIONS = ("bwrap", "unshare", "rlimits")

MB = 1 << 20
SANDBOX_DIR = "/sandbox"  # the program's cwd and HOME inside bwrap / unshare
DEFAULT_MAX_PROCS = 64  # processes *and threads* (RLIMIT_NPROC counts tasks)
DEFAULT_OUTPUT_BYTES = 64 * 1024
DEFAULT_DISK_MB = 64  # size of each tmpfs (/sandbox, /tmp, /dev/shm) in bwrap / unshare mode
_UID_BASE = 1_100_000_000  # unprivileged uids used when the caller is root (no passwd entry needed)
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"

# How the program is started: ``python -I -S -c RUNNER <ready fd> <uid> <rlimits> <prctl> <confine> <prog.py>``.
# -I: no PYTHON* variables, no user site, no script dir on sys.path; -S: no site-packages (and none of
# the .pth hooks installed there): the standard library only. Before a line of the program runs, RUNNER
# applies the rlimits, drops to the job's uid (root callers), sets no_new_privs and the parent-death
# signal (when asked: bwrap does both itself), confines the program when ``<confine>`` is not "-" (rlimits
# mode: a JSON object with the seccomp filter that denies sockets, see SECCOMP_DENY, and the Landlock rules
# that limit its files, see _landlock_rules), writes one byte on the ready pipe and closes it, restores
# the exit()/quit() builtins that site would add, and runs the file as __main__ (sys.argv[0] and
# __file__ are the program's path). Doing this in the program's own interpreter costs no extra process.
RUNNER = """\
import os as _o, sys as _s, resource as _r, builtins as _b
def _seccomp(ctypes, c, hexcode):
    data = bytes.fromhex(hexcode)
    code = ctypes.create_string_buffer(data, len(data))
    class Prog(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    prog, u = Prog(len(data) // 8, ctypes.addressof(code)), ctypes.c_ulong
    c.prctl(22, u(2), ctypes.byref(prog), u(0), u(0))  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
def _landlock(ctypes, c, rules):
    import stat, struct
    sys_, L = c.syscall, ctypes.c_long
    sys_.restype = ctypes.c_long
    abi = sys_(L(444), None, L(0), L(1))  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return
    fs = (1 << 13) - 1 | (abi >= 2) << 13 | (abi >= 3) << 14 | (abi >= 5) << 15  # every right this ABI knows
    file_rights = fs & (1 | 2 | 4 | 1 << 14 | 1 << 15)  # execute, write, read, truncate, ioctl on devices
    attr = struct.pack("=QQQ", fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)  # + no TCP; scoped: signals, abstract
    attr = attr[: 8 if abi < 4 else 16 if abi < 6 else 24]
    rs = sys_(L(444), attr, L(len(attr)), L(0))
    if rs < 0:
        return
    for path, kind in rules:
        try:
            pfd = _o.open(path, _o.O_PATH | _o.O_CLOEXEC)
        except OSError:
            continue
        isdir = stat.S_ISDIR(_o.fstat(pfd).st_mode)
        rights = {"ro": 1 | 4 | 8, "rw": fs}[kind] & (fs if isdir else file_rights)
        sys_(L(445), L(rs), L(1), struct.pack("=Qi", rights, pfd), L(0))  # LANDLOCK_RULE_PATH_BENEATH
        _o.close(pfd)
    sys_(L(446), L(rs), L(0))  # landlock_restrict_self
    _o.close(rs)
def _setup(fd, uid, limits, prctl, confine):
    c = None
    if prctl == "1":
        import ctypes
        c = ctypes.CDLL(None, use_errno=True)
    for item in limits.split(","):
        name, soft, hard = item.split(":")
        _r.setrlimit(getattr(_r, "RLIMIT_" + name), (int(soft), int(hard)))
    if uid != "-":
        u = int(uid)
        _o.setgroups([])
        _o.setresgid(u, u, u)
        _o.setresuid(u, u, u)
    if c is not None:
        c.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        c.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG = SIGKILL
        if confine != "-":
            import json
            spec = json.loads(confine)
            if spec.get("seccomp"):
                _seccomp(ctypes, c, spec["seccomp"])
            if spec.get("landlock"):
                _landlock(ctypes, c, spec["landlock"])
    _o.write(int(fd), b"R")
    _o.close(int(fd))
_setup(*_s.argv[1:6])
del _s.argv[1:6], _s.argv[0]
_b.exit = _b.quit = _s.exit
__file__ = _s.argv[0]
del _o, _s, _r, _b, _setup, _seccomp, _landlock
exec(compile(open(__file__, "rb").read(), __file__, "exec"))
"""


@dataclass(frozen=True)
class Verdict:
    """Outcome of one sandboxed program.

    status: passed (exit 0), failed (non-zero exit), timeout (wall or CPU limit), memory
    (MemoryError / allocation failure under the address-space limit), killed (ended by a signal we
    did not send), error (the sandbox itself could not start the program).
    returncode: the exit code; negative = killed by that signal; None when the program never ran.
    isolation: "bwrap" | "unshare" | "rlimits". uid: the host uid the program ran as, None when it
    ran as the caller's own uid.
    """

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    isolation: str
    reason: str
    uid: int | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"


# The seccomp filter of rlimits mode (no network namespace there): socket() fails with EACCES (socketpair(),
# a connected pair of AF_UNIX sockets, still works), and so do io_uring_setup (io_uring can open sockets
# without socket()), ptrace and process_vm_readv/writev (another process's memory); so does every system
# call of another ABI (i386 ``int 0x80``, x32). Per machine: (AUDIT_ARCH_*, the denied syscall numbers).
SECCOMP_DENY = {
    "x86_64": (0xC000003E, {"socket": 41, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
                            "io_uring_setup": 425}),
    "aarch64": (0xC00000B7, {"socket": 198, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
                             "io_uring_setup": 425}),
}  # fmt: skip


@cache
def _seccomp_filter() -> str:
    """The BPF program of SECCOMP_DENY for this machine, hex-encoded for RUNNER; "-" where there is none."""
    entry = SECCOMP_DENY.get(os.uname().machine)
    if entry is None:
        return "-"
    audit_arch, numbers = entry
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EACCES  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
    nrs = sorted(set(numbers.values()))
    at_deny = 4 + len(nrs) + 1  # the last instruction; jumps are relative to the next one
    ins = [(ld, 0, 0, 4), (jeq, 0, at_deny - 2, audit_arch), (ld, 0, 0, 0), (jge, at_deny - 4, 0, 0x40000000)]
    ins += [(jeq, at_deny - (4 + i) - 1, 0, nr) for i, nr in enumerate(nrs)]
    ins += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    return b"".join(struct.pack("=HBBI", *i) for i in ins).hex()


# Landlock (Linux >= 5.13) in rlimits mode: the program may read and execute only what the namespaced modes
# bind into their root (the system dirs, the loader cache, the time zone, the interpreter), read and write
# its work dir and the harmless devices, nothing else (no $PHR_HOME, no home dirs, no /proc: not the
# caller's environ either); no TCP (ABI >= 4), and no signals or abstract unix sockets beyond its own
# processes (ABI >= 6). A kernel without it runs the program without these rules (the probe says so).
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def _landlock_rules(python: str, workdir: str) -> list[tuple[str, str]]:
    """(path, "ro" | "rw") for RUNNER's Landlock ruleset: the read-only binds of _fs_plan, the devices, the work dir."""
    ro = [op[1] for op in _fs_plan(python, 0) if op[0] == "ro-bind"]
    return [*((p, "ro") for p in ro), *((d, "rw") for d in _DEVICES), (workdir, "rw")]


def _confinement(python: str, workdir: str) -> str:
    """RUNNER's ``<confine>`` argument in rlimits mode: the seccomp filter and the Landlock rules."""
    seccomp = _seccomp_filter()
    return json.dumps({"seccomp": None if seccomp == "-" else seccomp, "landlock": _landlock_rules(python, workdir)})


# ---------------------------------------------------------------------------------------------------
# The unshare bootstrap (``unshare --pid --fork --mount --net ... python -I -S -c BOOTSTRAP SPEC``): runs
# as root and pid 1 of the new pid namespace. It builds the new root (tmpfs + read-only binds, the same
# plan bwrap gets), chroots into it, forks the program (which drops privileges itself, see RUNNER) and
# exits with the program's status as soon as it ends -- which tears the namespace and every process
# left in it down. Death by signal N is reported as exit 128 + N.
# ---------------------------------------------------------------------------------------------------

BOOTSTRAP = r"""
import json, os, sys
spec = json.loads(sys.argv[1])

def fail(msg):
    os.write(2, ("phr-sandbox: " + msg + "\n").encode())
    os._exit(125)

def build_root(root, plan):
    import ctypes
    c = ctypes.CDLL(None, use_errno=True)
    def mount(src, tgt, fstype, flags, data=None):
        enc = lambda s: None if s is None else s.encode()
        if c.mount(enc(src), enc(tgt), enc(fstype), flags, enc(data)) != 0:
            e = ctypes.get_errno()
            fail("mount %s on %s: %s" % (src, tgt, os.strerror(e)))
    RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
    mount(None, "/", None, REC | PRIVATE)
    mount("tmpfs", root, "tmpfs", NOSUID | NODEV, "mode=0755,size=16m")
    def parents(path):
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    def bind(src, dst, ro=True, dev=False):
        parents(dst)
        if os.path.isdir(src):
            os.makedirs(dst, mode=0o755, exist_ok=True)
        else:
            open(dst, "a").close()
        mount(src, dst, None, BIND | REC)
        if ro:
            mount(None, dst, None, REMOUNT | BIND | RDONLY | NOSUID | (0 if dev else NODEV))
    def tmpfs(dst, mode, size):
        os.makedirs(dst, mode=0o755, exist_ok=True)
        mount("tmpfs", dst, "tmpfs", NOSUID | NODEV, "mode=%o,size=%d" % (mode, size))
    for op in plan:
        kind, dst = op[0], root + op[-1]
        if kind == "dir":
            os.makedirs(dst, mode=0o755, exist_ok=True)
            os.chmod(dst, 0o755)
        elif kind == "symlink":
            parents(dst)
            os.symlink(op[1], dst)
        elif kind == "ro-bind":
            bind(op[1], dst)
        elif kind == "tmpfs":
            tmpfs(dst, op[1], op[2])
        elif kind == "proc":
            os.makedirs(dst, mode=0o555, exist_ok=True)
            mount("proc", dst, "proc", NOSUID | NODEV | NOEXEC)
        elif kind == "dev":
            tmpfs(dst, 0o755, 1 << 20)
            for name in ("null", "zero", "full", "random", "urandom"):
                bind("/dev/" + name, dst + "/" + name, ro=False, dev=True)
            for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                                 ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
                os.symlink(target, dst + "/" + name)
        else:
            fail("unknown mount op %r" % (op,))
    os.chdir(root)
    os.chroot(".")
    os.chdir("/")

try:
    build_root(spec["root"], spec["plan"])
except OSError as e:
    fail("cannot build the sandbox root: %s" % e)
pid = os.fork()
if pid == 0:
    try:
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], dict(os.environ))
    except BaseException as e:
        fail("cannot start the program: %s: %s" % (type(e).__name__, e))
os.close(spec["ready_fd"])
while True:
    try:
        child, status = os.wait()
    except ChildProcessError:
        os._exit(125)
    except InterruptedError:
        continue
    if child == pid:
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
"""


# ---------------------------------------------------------------------------------------------------
# Helpers: interpreter, uids, the filesystem plan
# ---------------------------------------------------------------------------------------------------


def _is_root() -> bool:
    return os.geteuid() == 0


@cache
def default_python() -> str:
    """The base interpreter (not the venv's: the venv's packages are not the program's business)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _prefix_of(python: str) -> str:
    """Installation prefix of an interpreter: <prefix>/bin/pythonX.Y -> <prefix>."""
    real = os.path.realpath(python)
    if real == default_python():
        return os.path.realpath(sys.base_prefix)
    return os.path.dirname(os.path.dirname(real))


def _accessible_to_others(path: str) -> bool:
    """True when a uid with no relation to the owner can reach (and read) ``path``."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        if not st.st_mode & stat.S_IROTH:
            return False
        parent = os.path.dirname(real)
        while True:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            if parent == "/":
                return True
            parent = os.path.dirname(parent)
    except OSError:
        return False


@cache
def _python_for_uid_drop(python: str) -> str | None:
    """An interpreter a dropped uid can run without namespaces (rlimits mode as root).

    The configured one when other users can reach it, else a system interpreter of the same
    major.minor version; None when there is none (the program then keeps the caller's uid).
    """
    real = os.path.realpath(python)
    lib = os.path.join(_prefix_of(real), "lib")
    if _accessible_to_others(real) and (not os.path.isdir(lib) or _accessible_to_others(lib)):
        return real
    out = subprocess.run(
        [real, "-I", "-S", "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    version = out.stdout.strip()
    for d in ("/usr/local/bin", "/usr/bin"):
        cand = os.path.join(d, f"python{version}")
        if os.path.exists(cand) and _accessible_to_others(cand):
            return os.path.realpath(cand)
    return None


class _UidPool:
    """Unprivileged uids for root callers: one per concurrent job, disjoint between processes.

    Slots are handed out round-robin, so a uid is reused only after 1000 later jobs: processes of a
    finished job that are still being reaped (zombies count toward RLIMIT_NPROC) never eat into the
    budget of a new job.
    """

    SLOTS = 1000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: set[int] = set()
        self._next = 0

    def acquire(self) -> int:
        base = _UID_BASE + (os.getpid() % 1_000_000) * self.SLOTS
        with self._lock:
            for i in range(self.SLOTS):
                slot = (self._next + i) % self.SLOTS
                if slot not in self._used:
                    break
            else:
                raise RuntimeError(f"more than {self.SLOTS} concurrent sandboxed jobs")
            self._used.add(slot)
            self._next = slot + 1
        return base + slot

    def release(self, uid: int) -> None:
        with self._lock:
            self._used.discard((uid - _UID_BASE) % self.SLOTS)


_UIDS = _UidPool()


@cache
def _kernel_at_least(major: int, minor: int) -> bool:
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return m is not None and (int(m[1]), int(m[2])) >= (major, minor)


def _count_user_tasks(uid: int) -> int:
    """Tasks (processes + threads) whose real uid is ``uid`` -- what RLIMIT_NPROC counts."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        n += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return n


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and not fields.get("State", "").strip().startswith("Z"):
                pids.append(int(pid))
        except (OSError, ValueError, KeyError):
            continue
    return pids


def _sweep_uid(uid: int, deadline_s: float = 2.0) -> None:
    """SIGKILL every process of ``uid`` (only used for our private, per-job uids)."""
    end = time.monotonic() + deadline_s
    quiet = 0
    while time.monotonic() < end:
        pids = _pids_of_uid(uid)
        if not pids:
            quiet += 1
            if quiet == 2:  # twice empty, 20 ms apart: no fork was in flight during the first look
                return
            time.sleep(0.02)
            continue
        quiet = 0
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _workdir_parent(mode: str) -> str | None:
    """Where the host work dir goes: $TMPDIR, except in rlimits mode as root, where the job's uid must
    reach it -- then a world-traversable temp dir (/tmp) if $TMPDIR is private."""
    default = tempfile.gettempdir()
    if mode != "rlimits" or not _is_root() or _accessible_to_others(default):
        return None
    for d in ("/tmp", "/var/tmp"):
        if os.path.isdir(d) and _accessible_to_others(d):
            return d
    return None


_WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")


def _remove_files_of(uid: int) -> None:
    """rlimits mode as root: delete what the job's uid left in the host's world-writable dirs."""
    for d in _WORLD_WRITABLE:
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
            except OSError:
                pass


# /etc inside the sandbox: the loader cache (faster dynamic linking) and the time zone; nothing else
# (every bind costs bwrap a scan of the mount table, and /etc may hold world-readable credentials).
_ETC_FILES = ("ld.so.cache", "localtime")


@cache
def _fs_plan(python: str, disk_bytes: int) -> tuple[tuple, ...]:
    """The sandbox's filesystem: read-only system dirs and interpreter, fresh /dev, /proc, tmpfs.

    Ops: ("symlink", target, dst), ("dir", dst), ("ro-bind", src, dst), ("tmpfs", mode, size, dst),
    ("proc", dst), ("dev", dst). Shared by the bwrap argument builder and the unshare bootstrap.
    """
    plan: list[tuple] = []
    bound: list[str] = []
    for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            plan.append(("symlink", os.readlink(path), path))
        elif os.path.isdir(path):
            plan.append(("ro-bind", path, path))
            bound.append(path)
    plan.append(("dir", "/etc"))
    for name in _ETC_FILES:
        path = "/etc/" + name
        if os.path.exists(path):
            plan.append(("ro-bind", path, path))
    extra = {_prefix_of(python), os.path.dirname(os.path.realpath(python))}
    for path in sorted(extra):
        if any(path == b or path.startswith(b + "/") for b in bound):
            continue
        if any(b.startswith(path + "/") for b in bound):  # e.g. prefix "/" -- never bind the host root
            continue
        parent, dirs = os.path.dirname(path), []
        while parent not in ("/", ""):  # intermediate dirs must be traversable by the program's uid
            dirs.append(parent)
            parent = os.path.dirname(parent)
        plan.extend(("dir", d) for d in reversed(dirs))
        plan.append(("ro-bind", path, path))
        bound.append(path)
    plan.append(("dev", "/dev"))
    plan.append(("tmpfs", 0o1777, disk_bytes, "/dev/shm"))
    plan.append(("proc", "/proc"))
    plan.append(("tmpfs", 0o1777, disk_bytes, "/tmp"))
    plan.append(("tmpfs", 0o777, disk_bytes, SANDBOX_DIR))
    return tuple(plan)


@cache
def _bwrap_features() -> frozenset[str]:
    exe = shutil.which("bwrap")
    if not exe:
        return frozenset()
    try:
        text = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(f for f in ("--size", "--perms", "--disable-userns") if f in text)


def _bwrap_argv(plan: tuple[tuple, ...], prog_host: str) -> list[str]:
    feats = _bwrap_features()
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    # No --as-pid-1: bwrap's own pid 1 reports the program's exit at once, bwrap then exits and
    # --die-with-parent takes the namespace -- and anything the program left running -- down with it.
    if _is_root():
        # A real-root bwrap hands the sandbox all its capabilities unless told otherwise: keep only
        # what the bootstrap needs to switch to the job's uid (that switch then clears them all).
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
        if "--disable-userns" in feats:
            argv += ["--disable-userns"]
    for op in plan:
        kind = op[0]
        if kind == "symlink":
            argv += ["--symlink", op[1], op[2]]
        elif kind == "dir":
            argv += (["--perms", "0755"] if "--perms" in feats else []) + ["--dir", op[1]]
        elif kind == "ro-bind":
            argv += ["--ro-bind", op[1], op[2]]
        elif kind == "dev":
            argv += ["--dev", op[1]]
        elif kind == "proc":
            argv += ["--proc", op[1]]
        elif kind == "tmpfs":
            if "--perms" in feats:
                argv += ["--perms", format(op[1], "04o")]
            if "--size" in feats:
                argv += ["--size", str(op[2])]
            argv += ["--tmpfs", op[3]]
    argv += ["--ro-bind", prog_host, SANDBOX_DIR + "/prog.py", "--chdir", SANDBOX_DIR]
    return argv


# ---------------------------------------------------------------------------------------------------
# Running one program
# ---------------------------------------------------------------------------------------------------


def _clean_env(home: str, tmp: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {"PATH": _SAFE_PATH, "LANG": "C.UTF-8", "HOME": home, "TMPDIR": tmp}
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap, self.buf, self.dropped = cap, bytearray(), 0

    def add(self, data: bytes) -> None:
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        s = self.buf.decode("utf-8", errors="replace")
        if self.dropped:
            s += f"\n[... {self.dropped} more bytes truncated]"
        return s


def _read_some(fd: int, sink: Callable[[bytes], object], max_chunks: int = 64) -> bool:
    """Read what is there into ``sink`` (bounded: a leftover may keep writing); False at EOF."""
    for _ in range(max_chunks):
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        sink(data)
        if len(data) < 65536:
            return True
    return True


def _communicate(proc: subprocess.Popen, deadline: float, cap: int, ready_r: int) -> tuple[bytes, str, str, bool]:
    """Read stdout/stderr (capped) and the ready pipe until the process exits or the deadline passes.

    Returns (ready bytes, stdout, stderr, timed_out). Once the process we started has exited (the
    program itself, or bwrap / unshare after the program ended), everything the program wrote is
    already in the pipes: drain them without waiting for EOF, which would also wait for leftovers
    (and for bwrap's pid 1) to die.
    """
    out, err = _Capped(cap), _Capped(cap)
    ready = bytearray()
    assert proc.stdout is not None and proc.stderr is not None  # the caller opens both as pipes
    sinks: dict[int, Callable[[bytes], object]] = {
        proc.stdout.fileno(): out.add,
        proc.stderr.fileno(): err.add,
        ready_r: ready.extend,
    }
    fds = list(sinks)
    sel = selectors.DefaultSelector()
    for fd in fds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ)
    except (AttributeError, OSError):
        pidfd = None

    def read(fd: int) -> bool:
        return _read_some(fd, sinks[fd])

    timed_out = False
    try:
        open_fds = set(fds)
        while open_fds:
            if proc.poll() is not None:
                break
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            wait = min(deadline - now, 1.0 if pidfd is not None else 0.02)
            for key, _ in sel.select(timeout=wait):
                if key.fd != pidfd and not read(key.fd):
                    sel.unregister(key.fd)
                    open_fds.discard(key.fd)
        else:  # every pipe at EOF: the process is (about to be) gone
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        for fd in list(open_fds):  # final drain (non-blocking)
            read(fd)
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    return bytes(ready), out.text(), err.text(), timed_out


def _last_line(text: str, limit: int = 200) -> str:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith("[... "):
            return line[:limit]
    return ""


_MEMORY_RE = re.compile(r"^(MemoryError|.*Cannot allocate memory|.*std::bad_alloc)", re.MULTILINE)


def _classify(
    rc: int | None,
    timed_out: bool,
    ready: bool,
    stderr: str,
    *,
    timeout_s: float,
    cpu_s: int,
    memory_mb: int,
    max_file_mb: int,
) -> tuple[str, str]:
    if not ready:
        if timed_out:
            return "error", f"the sandbox did not start the program within {timeout_s:g}s"
        return "error", "sandbox error: " + (_last_line(stderr) or f"exit {rc} before the program started")
    if timed_out:
        return "timeout", f"wall-time limit of {timeout_s:g}s exceeded"
    if rc == 0:
        return "passed", "exit 0"
    tail = stderr[-4000:]
    if _MEMORY_RE.search(tail):
        return "memory", f"out of memory (address-space limit {memory_mb} MB): {_last_line(tail)}"
    if rc is not None and rc < 0:
        sig = -rc
        if sig == signal.SIGXCPU:
            return "timeout", f"CPU-time limit of {cpu_s}s exceeded (SIGXCPU)"
        if sig == signal.SIGXFSZ:
            return "failed", f"file-size limit of {max_file_mb} MB exceeded (SIGXFSZ)"
        if sig == signal.SIGKILL:
            return "killed", "killed by SIGKILL (CPU hard limit or the kernel's OOM killer)"
        return "killed", f"killed by {_signame(sig)}"
    line = _last_line(tail)
    if "File too large" in tail:
        return "failed", f"file-size limit of {max_file_mb} MB exceeded: {line}"
    return "failed", f"exit {rc}" + (f": {line}" if line else "")


def _kill_tree(proc: subprocess.Popen, uid: int | None, sweep: bool) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    if sweep and uid is not None:
        _sweep_uid(uid)


def run_program(
    code: str,
    *,
    timeout_s: float = 10.0,
    cpu_s: float | None = None,
    memory_mb: int = 512,
    max_procs: int = DEFAULT_MAX_PROCS,
    max_file_mb: int = 16,
    env: Mapping[str, str] | None = None,
    isolation: str = "auto",
    python: str | None = None,
    max_output_bytes: int = DEFAULT_OUTPUT_BYTES,
    disk_mb: int = DEFAULT_DISK_MB,
    site_packages: bool = False,
) -> Verdict:
    """Run ``code`` (as ``/sandbox/prog.py`` with ``python -I -S``) in a fresh sandboxed process;
    never raises for anything the program does.

    timeout_s: wall clock for the whole run (the process tree is killed when it passes).
    cpu_s: RLIMIT_CPU in seconds (default: ceil(timeout_s) + 1).
    memory_mb: RLIMIT_AS. max_procs: RLIMIT_NPROC (processes and threads of the program's uid).
    max_file_mb: RLIMIT_FSIZE. env: extra environment variables (the base environment is empty).
    isolation: "auto" (best that works here), "bwrap", "unshare" or "rlimits".
    python: the interpreter (default: the base interpreter behind this venv).
    max_output_bytes: cap per stream on captured stdout / stderr.
    disk_mb: size of each tmpfs (/sandbox, /tmp, /dev/shm) in bwrap / unshare mode.
    site_packages: run ``python -I prog.py`` (the interpreter's site-packages importable, read-only)
    instead of the default ``python -I -S`` (standard library only).
    """
    python = os.path.realpath(python or default_python())
    mode = detect_isolation() if isolation == "auto" else isolation
    if mode not in ISOLATIONS:
        raise ValueError(f"isolation must be 'auto' or one of {ISOLATIONS}, not {isolation!r}")
    if mode == "unshare" and not _is_root():
        raise ValueError("isolation='unshare' needs root (use bwrap as an unprivileged user)")
    cpu = math.ceil(cpu_s if cpu_s is not None else timeout_s + 1)
    root = _is_root()
    uid: int | None = None
    t0 = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="phr-sandbox-", dir=_workdir_parent(mode))
    ready_r = ready_w = -1
    proc: subprocess.Popen | None = None
    try:
        prog_host = _write_program(workdir, code)
        program_python, uid = _program_user(python, mode, root)
        cwd, tmp, prog_path = _program_paths(mode, workdir, prog_host, uid)
        limits = _rlimits(cpu, memory_mb, _nproc(max_procs, mode, root), max_file_mb)
        ready_r, ready_w = os.pipe()
        program = _runner_argv(program_python, site_packages, ready_w, uid, limits, mode, workdir, prog_path)
        if mode == "bwrap":
            argv = _bwrap_argv(_fs_plan(python, disk_mb * MB), prog_host) + ["--", *program]
        elif mode == "unshare":
            argv = _unshare_argv(python, program, workdir, prog_host, cwd, disk_mb, ready_w)
        else:
            argv = program
        proc = _start(argv, _clean_env(cwd, tmp, env), cwd if mode == "rlimits" else workdir, ready_w)
        os.close(ready_w)
        ready_w = -1
        ready, out, err, timed_out = _communicate(proc, t0 + timeout_s, max_output_bytes, ready_r)
        rc = _end(proc, uid, mode)
        wall = time.monotonic() - t0
        status, reason = _classify(
            rc,
            timed_out,
            bool(ready),
            err,
            timeout_s=timeout_s,
            cpu_s=cpu,
            memory_mb=memory_mb,
            max_file_mb=max_file_mb,
        )
        return Verdict(status, rc if ready else None, out, err, round(wall, 4), mode, reason, uid)
    except OSError as e:
        return Verdict(
            "error", None, "", "", round(time.monotonic() - t0, 4), mode, f"sandbox error: {type(e).__name__}: {e}", uid
        )
    finally:
        _release(proc, uid, mode, workdir, (ready_r, ready_w))


def _start(argv: list[str], env: dict[str, str], cwd: str, ready_w: int) -> subprocess.Popen:
    """The sandbox's process: stdin from /dev/null, stdout and stderr piped, a session of its own."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        pass_fds=(ready_w,),
        start_new_session=True,
        close_fds=True,
    )


def _write_program(workdir: str, code: str) -> str:
    """``code`` as ``workdir/prog.py``, readable by the program's uid; returns its path."""
    prog_host = os.path.join(workdir, "prog.py")
    with open(prog_host, "w", encoding="utf-8") as f:
        f.write(code)
    os.chmod(prog_host, 0o644)
    return prog_host


def _end(proc: subprocess.Popen, uid: int | None, mode: str) -> int:
    """After the program's run (timed out, or its main process done): nothing of the job outlives it. Returns
    the exit status, a death by signal N as -N whatever the isolation."""
    _kill_tree(proc, uid, sweep=False)
    rc = proc.wait()
    if mode == "rlimits" and uid is not None:
        _sweep_uid(uid)  # leftovers that left the process group (setsid) -- the uid is the job's own
        _remove_files_of(uid)
    if mode != "rlimits" and 128 < rc < 128 + 65:
        rc = -(rc - 128)  # bwrap and the unshare bootstrap report death by signal N as 128 + N
    return rc


def _program_user(python: str, mode: str, root: bool) -> tuple[str, int | None]:
    """The interpreter the program runs with and the uid it runs as (None: the caller's own)."""
    if not root:
        return python, None
    if mode != "rlimits":
        return python, _UIDS.acquire()
    alt = _python_for_uid_drop(python)  # no mount namespace: the dropped uid must reach a host interpreter
    return (python, None) if alt is None else (alt, _UIDS.acquire())


def _program_paths(mode: str, workdir: str, prog_host: str, uid: int | None) -> tuple[str, str, str]:
    """(cwd, TMPDIR, program path) as the program sees them: the host's work dir (given to the program's uid)
    under rlimits, else the sandbox's own."""
    if mode != "rlimits":
        return SANDBOX_DIR, "/tmp", SANDBOX_DIR + "/prog.py"
    if uid is not None:
        os.chown(workdir, uid, uid)
        os.chown(prog_host, uid, uid)
    return workdir, workdir, prog_host


def _nproc(max_procs: int, mode: str, root: bool) -> int:
    if root or (mode == "bwrap" and _kernel_at_least(5, 14)):
        return max_procs  # a uid of its own, or a user namespace of its own (counted per userns)
    # the count includes every task of the caller's uid: allow max_procs more than now
    return max_procs + _count_user_tasks(os.getuid())


def _rlimits(cpu: int, memory_mb: int, nproc: int, max_file_mb: int) -> str:
    """The runner's limits argument: ``NAME:soft:hard`` pairs, comma-separated."""
    return ",".join(
        f"{name}:{soft}:{hard}"
        for name, soft, hard in (
            ("CPU", cpu, cpu + 1),
            ("AS", memory_mb * MB, memory_mb * MB),
            ("NPROC", nproc, nproc),
            ("FSIZE", max_file_mb * MB, max_file_mb * MB),
            ("CORE", 0, 0),
            ("NOFILE", 1024, 1024),
        )
    )


def _runner_argv(
    python: str,
    site_packages: bool,
    ready_w: int,
    uid: int | None,
    limits: str,
    mode: str,
    workdir: str,
    prog_path: str,
) -> list[str]:
    """The command that runs the program: our RUNNER applies the limits (and drops to ``uid``), then runs it."""
    return [
        python,
        "-I",
        *([] if site_packages else ["-S"]),
        "-c",
        RUNNER,
        str(ready_w),
        "-" if uid is None else str(uid),
        limits,
        "0" if mode == "bwrap" else "1",  # bwrap sets no_new_privs + parent-death signal itself
        _confinement(python, workdir) if mode == "rlimits" else "-",  # else the namespaces do it
        prog_path,
    ]


def _unshare_argv(
    python: str, program: list[str], workdir: str, prog_host: str, cwd: str, disk_mb: int, ready_w: int
) -> list[str]:
    """util-linux unshare running our bootstrap, which builds the new root in ``workdir/root`` and execs ``program``."""
    newroot = os.path.join(workdir, "root")
    os.mkdir(newroot, 0o700)
    plan = [*_fs_plan(python, disk_mb * MB), ("ro-bind", prog_host, SANDBOX_DIR + "/prog.py")]
    spec = {"root": newroot, "plan": plan, "cwd": cwd, "argv": program, "ready_fd": ready_w}
    return [
        "unshare",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount",
        "--net",
        "--ipc",
        "--uts",
        "--propagation",
        "private",
        "--",
        python,
        "-I",
        "-S",
        "-c",
        BOOTSTRAP,
        json.dumps(spec),
    ]


def _release(proc: subprocess.Popen | None, uid: int | None, mode: str, workdir: str, fds: tuple[int, ...]) -> None:
    """Whatever way a run ended: its pipes closed, its process tree gone, its folder removed, its uid free."""
    for fd in fds:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass
    if proc is not None:
        for s in (proc.stdout, proc.stderr):
            if s:
                s.close()
        if proc.poll() is None:
            _kill_tree(proc, uid, sweep=mode == "rlimits")
            proc.wait()
    shutil.rmtree(workdir, ignore_errors=True)
    if uid is not None:
        _UIDS.release(uid)


# ---------------------------------------------------------------------------------------------------
# Isolation detection
# ---------------------------------------------------------------------------------------------------

_PROBE_LOCK = threading.Lock()
_PROBES: dict[tuple[str, str], Any] = {}


def isolation_available(mode: str, python: str | None = None) -> bool:
    """Whether ``mode`` works here: a trivial program must run through the full pipeline."""
    if mode not in ISOLATIONS:
        raise ValueError(mode)
    python = os.path.realpath(python or default_python())
    key = (mode, python)
    with _PROBE_LOCK:
        if key not in _PROBES:
            missing = (mode == "bwrap" and not shutil.which("bwrap")) or (
                mode == "unshare" and (not _is_root() or not shutil.which("unshare"))
            )
            if missing:
                ok = False
            else:
                v = run_program("import sys; sys.stdout.write('ok')", timeout_s=30, isolation=mode, python=python)
                ok = v.status == "passed" and v.stdout == "ok"
            _PROBES[key] = ok
        return _PROBES[key]


def detect_isolation(python: str | None = None) -> str:
    """The strongest isolation that works here: "bwrap", else "unshare" (root), else "rlimits".

    ``PHR_SANDBOX_ISOLATION`` (bwrap | unshare | rlimits) forces a mode.
    """
    forced = os.environ.get("PHR_SANDBOX_ISOLATION")
    if forced:
        if forced not in ISOLATIONS:
            raise ValueError(f"PHR_SANDBOX_ISOLATION must be one of {ISOLATIONS}, not {forced!r}")
        return forced
    return best_isolation(python)


def best_isolation(python: str | None = None) -> str:
    """The strongest mode that works here, whatever ``PHR_SANDBOX_ISOLATION`` says."""
    return next((m for m in ("bwrap", "unshare") if isolation_available(m, python)), "rlimits")


_RANK = {"bwrap": 3, "unshare": 2, "rlimits": 1}
_GUARDS_PROBE = (
    "import os, socket\n"
    "try:\n    socket.socket()\nexcept PermissionError:\n    print('sockets blocked')\n"
    "try:\n    os.listdir('/')\nexcept PermissionError:\n    print('files confined')\n"
)


def _rlimits_guards(python: str | None) -> tuple[bool, bool]:
    """Whether rlimits mode's seccomp filter (``socket()`` refused) and Landlock rules (``/`` unreadable) work here."""
    python = os.path.realpath(python or default_python())
    key = ("rlimits-guards", python)
    with _PROBE_LOCK:
        if key not in _PROBES:
            v = run_program(_GUARDS_PROBE, timeout_s=30, isolation="rlimits", python=python)
            lines = v.stdout.splitlines() if v.status == "passed" else []
            _PROBES[key] = ("sockets blocked" in lines, "files confined" in lines)
        return _PROBES[key]


def _sockets_blocked(python: str | None) -> bool:
    return _rlimits_guards(python)[0]


@dataclass(frozen=True)
class IsolationReport:
    """The isolation runs will use (``mode``), the strongest that works here (``best``), whether
    ``PHR_SANDBOX_ISOLATION`` chose it; for rlimits mode whether programs run as a uid of their own
    (``own_uid``), whether their sockets are blocked (seccomp) and their files confined (Landlock).
    ``weak``: rlimits (no namespaces), or weaker than what this machine can do."""

    mode: str
    best: str
    forced: bool
    own_uid: bool = True
    sockets_blocked: bool = True
    files_confined: bool = True

    @property
    def weak(self) -> bool:
        return self.mode == "rlimits" or _RANK[self.mode] < _RANK[self.best]

    def _why(self) -> str:
        if self.forced and self.best != self.mode:
            return f"PHR_SANDBOX_ISOLATION={self.mode}, though {self.best} works here"
        return "neither bwrap nor unshare works here" if self.mode == "rlimits" else "bwrap does not work here"

    def _remedy(self) -> str:
        if self.forced and _RANK[self.best] > _RANK[self.mode]:
            return "unset PHR_SANDBOX_ISOLATION"
        return "install bubblewrap (sudo scripts/install-sandbox.sh, docs/sandbox.md)"

    def line(self) -> str:
        """One line for the start of a run that executes model-written code (``WARNING:`` when weak)."""
        if not self.weak:
            if self.mode == "unshare":
                return f"code sandbox: unshare ({self._why()}; the same namespaces and read-only root as bwrap)"
            return "code sandbox: bwrap (new pid, net and mount namespaces; read-only system dirs; no network)"
        if self.mode != "rlimits":
            return f"WARNING: weak code sandbox: {self.mode} ({self._why()}); {self._remedy()}"
        who = "an unprivileged uid of their own" if self.own_uid else "YOUR uid"
        net = "sockets blocked (seccomp)" if self.sockets_blocked else "sockets NOT blocked"
        if self.files_confined:
            files = "files limited to the system dirs (Landlock)"
        else:
            files = "files NOT confined: they read " + ("what any user may" if self.own_uid else "what you can")
        return (
            f"WARNING: weak code sandbox: rlimits only ({self._why()}): no namespaces; model-written programs run "
            f"as {who}, {net}, {files}; {self._remedy()}"
        )

    def refusal(self) -> str:
        """The error of ``score`` / ``submit`` (someone else's code) in a weak sandbox without the flag."""
        what = "rlimits only" if self.mode == "rlimits" else self.mode
        return (
            f"the code sandbox here is weak ({what}: {self._why()}): to run someone else's code, "
            f"{self._remedy()}, or pass --allow-weak-sandbox (recorded in results.json)"
        )

    def record(self) -> dict:
        """What results.json records about it (``config.sandbox``)."""
        out: dict[str, Any] = {"isolation": self.mode, "best_available": self.best, "weak": self.weak}
        if self.mode == "rlimits":
            out.update(own_uid=self.own_uid, sockets_blocked=self.sockets_blocked, files_confined=self.files_confined)
        return out


def isolation_report(python: str | None = None) -> IsolationReport:
    """What ``run_program(isolation="auto")`` will use here, and how it compares with the best mode (probed
    once per process)."""
    mode, best = detect_isolation(python), best_isolation(python)
    forced = bool(os.environ.get("PHR_SANDBOX_ISOLATION"))
    if mode != "rlimits":
        return IsolationReport(mode, best, forced)
    own_uid = _is_root() and _python_for_uid_drop(os.path.realpath(python or default_python())) is not None
    return IsolationReport(mode, best, forced, own_uid, *_rlimits_guards(python))


# ---------------------------------------------------------------------------------------------------
# HumanEval / MBPP style checks and batches
# ---------------------------------------------------------------------------------------------------

_DEF_CHECK = re.compile(r"^def\s+check\s*\(", re.MULTILINE)
_CALL_CHECK = re.compile(r"^check\s*\(", re.MULTILINE)


def build_check_program(program: str, tests: str, entry_point: str | None) -> str:
    """program + tests (+ ``check(entry_point)`` when the tests define check and never call it)."""
    code = program.rstrip("\n") + "\n\n" + tests.rstrip("\n") + "\n"
    if entry_point and _DEF_CHECK.search(tests) and not _CALL_CHECK.search(tests):
        code += f"\n\ncheck({entry_point})\n"
    return code


def check_solution(program: str, tests: str, entry_point: str | None = None, **kwargs: Any) -> Verdict:
    """HumanEval / MBPP-style check: passed iff program + tests exits 0. kwargs go to run_program."""
    return run_program(build_check_program(program, tests, entry_point), **kwargs)


def _run_job(job: Any, defaults: Mapping[str, Any]) -> Verdict:
    if isinstance(job, str):
        return run_program(job, **defaults)
    if isinstance(job, Mapping):
        kw = {**defaults, **job}
        if "code" in kw:
            return run_program(kw.pop("code"), **kw)
        if "program" in kw:
            return check_solution(kw.pop("program"), kw.pop("tests", ""), kw.pop("entry_point", None), **kw)
    raise TypeError(f"a job is a code string or a mapping with 'code' or 'program' (+ 'tests'), not {job!r}")


def run_many(jobs: Iterable[Any], workers: int | None = None, **defaults: Any) -> list[Verdict]:
    """Run jobs concurrently, each in its own sandboxed process; results in the order of ``jobs``.

    A job is a code string (run_program), a mapping with "code" (run_program kwargs) or a mapping with
    "program", "tests", "entry_point" (check_solution kwargs). ``defaults`` apply to every job
    (e.g. timeout_s=5). The pool's threads only wait on their processes.
    """
    jobs = list(jobs)
    workers = max(1, workers or os.cpu_count() or 1)
    if not jobs:
        return []
    if defaults.get("isolation", "auto") == "auto":
        defaults = {**defaults, "isolation": detect_isolation(defaults.get("python"))}
    if workers == 1 or len(jobs) == 1:
        return [_run_job(j, defaults) for j in jobs]
    with ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="phr-sandbox") as pool:
        return list(pool.map(lambda j: _run_job(j, defaults), jobs))
