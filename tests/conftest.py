"""Shared test fixtures.

Every test runs with its own ``$PHR_HOME`` (call cache, exported datasets) under its tmp_path, so the suite never
reads or writes the user's ``~/.cache/phr``; ``pytest_sessionfinish`` fails the run if it did. The offline model is
converted once into ``.cache/test-models`` of the checkout (``$PHR_MODELS``) and reused across sessions.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from phr.core import memory
from phr.core.threads import cpu_times, host_share
from tests.support.guard import phr_test_guard

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never download models

# commands run in-process (CliRunner) leave the worker's malloc as glibc set it, so that no test runs under the
# settings an earlier one happened to apply (tests/test_memory.py tests them in processes of their own)
memory._DONE = "left as it is (a test session)"

# ---- isolation from the user's files --------------------------------------------------------------------------

REAL_HOME = Path(os.environ.get("PHR_HOME") or "~/.cache/phr").expanduser()
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="phr-test-home-"))
os.environ["PHR_HOME"] = str(_SESSION_HOME)  # session fixtures (built before any test's own home) write here
os.environ.pop("PHR_CACHE", None)
os.environ.pop("PHR_HUB_DIR", None)
os.environ.setdefault("PHR_MODELS", str(Path(__file__).resolve().parents[1] / ".cache" / "test-models"))


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    if not folder.is_dir():
        return {}
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*") if p.is_file()}


_REAL_BEFORE = _snapshot(REAL_HOME)
_CPU_BEFORE = cpu_times()  # the host's CPU counters when the session started (see pytest_terminal_summary)


def pytest_terminal_summary(terminalreporter):
    """One line on the host under the run: a suite time means "quiet" only with no steal (a virtual machine whose
    vCPUs waited for real ones) and no other load; the suite's time goal is for a quiet 2-core machine."""
    share = host_share(_CPU_BEFORE, cpu_times())
    if share is not None:
        terminalreporter.write_line(
            f"host during the run: {os.cpu_count()} CPUs, {share['busy']:.0%} busy, {share['steal']:.0%} of CPU time"
            " taken by the hypervisor (steal)"
        )


@pytest.fixture(autouse=True)
def _own_phr_home(tmp_path, monkeypatch):
    """A fresh $PHR_HOME per test (the call cache lives in it unless a fixture points PHR_CACHE elsewhere; the
    user's PHR_CACHE and PHR_HUB_DIR were dropped when the session started)."""
    monkeypatch.setenv("PHR_HOME", str(tmp_path / "phr-home"))


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SESSION_HOME, ignore_errors=True)
    _GUARD_FILE.unlink(missing_ok=True)
    for folder, before in _SHARED.items():
        if _digests(folder) != before:
            print(f"\nERROR: a test changed the shared read-only folder {folder}: copy it before changing it")
            session.exitstatus = 1
    after = _snapshot(REAL_HOME)
    if after != _REAL_BEFORE:
        changed = sorted(k for k in set(after) | set(_REAL_BEFORE) if after.get(k) != _REAL_BEFORE.get(k))
        print(f"\nERROR: the test suite changed the user's {REAL_HOME}: {changed[:5]}")
        session.exitstatus = 1


# ---- local model (phr.llm.providers.hf_local) -----------------------------------------------------


@pytest.fixture(scope="session")
def smollm2():
    """local:smollm2, loaded once per session (converted once into $PHR_MODELS if needed)."""
    from phr.core.errors import ModelNotInstalledError
    from phr.llm.providers.hf_local import local_provider

    try:
        provider = local_provider("smollm2")
    except ModelNotInstalledError as e:
        pytest.skip(str(e))
    return provider.load()


# ---- PHRBench-mini, built once per session (read-only: copy it before changing it) -------------------------------

_SHARED: dict[Path, dict[str, str]] = {}  # shared read-only folders -> their files' SHA-256 when made


def _digests(folder: Path) -> dict[str, str]:
    from phr.core.fs import sha256_file

    return {str(p.relative_to(folder)): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def shared(folder: Path) -> Path:
    """Register ``folder`` as shared by the session's tests: the run fails if one of them changed it."""
    _SHARED[folder] = _digests(folder)
    return folder


@pytest.fixture(scope="session")
def mini_build(tmp_path_factory):
    """``build_mini``'s result for PHRBench-mini, built once per session; its folder is read-only."""
    from phr.builders.phrbench import build_mini

    res = build_mini(tmp_path_factory.mktemp("mini") / "phrbench")
    shared(res.out)
    return res


@pytest.fixture(scope="session")
def mini_folder(mini_build):
    """The shared PHRBench-mini folder (read-only: copy it before changing it)."""
    return mini_build.out


# ---- a fake LLM: the local OpenAI-protocol server, the real openai client pointed at it ------------------------


class FakeOpenAI:
    """A running ``ProtocolServer`` with the environment of the real ``openai`` client pointed at it."""

    def __init__(self, server, cache):
        self.server, self.cache = server, cache

    def llm(self, spec: str = "openai:gpt-4o", **kw):
        """An ``LLM`` on the server with fast retries and the test's own cache file."""
        from phr.llm import LLM

        opts = dict(cache=self.cache, progress=False, timeout=30, backoff_initial=0.01, backoff_max=0.05) | kw
        return LLM(spec, **opts)


@pytest.fixture
def fake_openai(monkeypatch, tmp_path):
    """``fake_openai(responder)`` starts a local OpenAI-protocol server answering with ``responder`` (default: echo)
    and points ``OPENAI_*`` and ``PHR_CACHE`` at it; servers stop when the test ends."""
    from contextlib import ExitStack

    from tests.support.protocol_server import ProtocolServer

    with ExitStack() as stack:

        def start(responder=None, **kw) -> FakeOpenAI:
            srv = stack.enter_context(ProtocolServer(**({"responder": responder} if responder else {}), **kw))
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
            monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
            monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
            return FakeOpenAI(srv, tmp_path / "calls.sqlite")

        yield start


# ---- the slow tier: every test that loads the local model is marked slow, wherever it is written --------------


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "smollm2" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    # the files with the most slow tests run first, each file's tests together and in order: with -n, the long
    # tests start early and the short ones even out the end, instead of one worker finishing a long test alone
    slow: dict[str, int] = {}
    for item in items:
        slow[item.nodeid.split("::")[0]] = slow.get(item.nodeid.split("::")[0], 0) + bool(
            item.get_closest_marker("slow")
        )
    items.sort(key=lambda item: -slow[item.nodeid.split("::")[0]])  # stable: file order kept among equals


# ...and a test not marked slow that builds a language model or a trainer, in the pytest process or in a Python
# subprocess it starts (tests/support/guard), fails: the fast tier loads no model and trains nothing.

_GUARD_DIR = Path(__file__).parent / "support" / "guard"
_GUARD_FILE = _SESSION_HOME.parent / f"{_SESSION_HOME.name}-model-guard.txt"
_PYTHONPATH = os.environ.get("PYTHONPATH")
phr_test_guard.install()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before the test's fixtures: arm the guard for a fast test, disarm it for a slow one."""
    _GUARD_FILE.write_text("")
    if item.get_closest_marker("slow"):
        os.environ.pop(phr_test_guard.ENV, None)
        _set_pythonpath(_PYTHONPATH)
    else:
        os.environ[phr_test_guard.ENV] = str(_GUARD_FILE)
        _set_pythonpath(os.pathsep.join(filter(None, (str(_GUARD_DIR), _PYTHONPATH))))


def _set_pythonpath(value: str | None) -> None:
    if value:
        os.environ["PYTHONPATH"] = value
    else:
        os.environ.pop("PYTHONPATH", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if call.when == "teardown" and not item.get_closest_marker("slow") and _GUARD_FILE.exists():
        loaded = _GUARD_FILE.read_text().splitlines()
        if loaded and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is not marked slow but it (or a fixture it set up) "
                + "; ".join(list(dict.fromkeys(loaded))[:3])
                + ": mark it @pytest.mark.slow (the fast tier loads no model and trains nothing)"
            )


@pytest.fixture
def hf_token() -> str:
    """The token the ``hf`` server knows as alice (``HF_TOKEN`` while it runs)."""
    return "hf_publish_test_token_0123456789"


@pytest.fixture
def hf(monkeypatch, hf_token):
    """The fake Hub of the online push tests (``tests.support.hub_server.online_hub``); yields the server."""
    hub_server = pytest.importorskip("tests.support.hub_server")
    with hub_server.online_hub(monkeypatch, hf_token) as server:
        yield server


@pytest.fixture
def api_server(monkeypatch, tmp_path):
    """One local server speaking the OpenAI, Anthropic and Gemini protocols, with every provider's key and base
    URL pointed at it and ``PHR_CACHE`` in the test's folder; yields the server."""
    from tests.support.llm import API_KEY
    from tests.support.protocol_server import ProtocolServer

    with ProtocolServer() as srv:
        for name, value in (
            ("OPENAI_API_KEY", API_KEY),
            ("OPENAI_BASE_URL", srv.url + "/v1"),
            ("ANTHROPIC_API_KEY", API_KEY),
            ("ANTHROPIC_BASE_URL", srv.url),
            ("GEMINI_API_KEY", API_KEY),
            ("GOOGLE_GEMINI_BASE_URL", srv.url),
            ("PHR_CACHE", str(tmp_path / "calls.sqlite")),
        ):
            monkeypatch.setenv(name, value)
        yield srv
