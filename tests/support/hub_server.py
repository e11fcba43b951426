"""A local HTTP server that speaks the Hugging Face Hub protocol well enough for the real clients.

Point the real ``huggingface_hub`` (2.x) and ``datasets`` (5.x) clients at it::

    with HubServer(tokens={"hf_test": "alice"}) as hub:
        api = HfApi(endpoint=hub.url, token="hf_test")      # explicit endpoint: no env needed
        api.create_repo("alice/demo", repo_type="dataset")
        ...
        subprocess.run([...], env=hub.client_env(tmp_path))  # HF_ENDPOINT etc. for a fresh process

See docs/hub_server.md for the env-at-import rules (``HF_ENDPOINT``, ``HF_HUB_DISABLE_XET``, ``HF_HUB_OFFLINE``).

Routes (bound to 127.0.0.1 only, HTTP/1.1 keep-alive, chunked request bodies accepted):

    GET    /api/whoami-v2
    POST   /api/repos/create                           {name, organization, type, private|visibility, sdk}
    DELETE /api/repos/delete                           {name, organization, type}
    PUT    /api/{type}s/{ns}/{name}/settings           {private|visibility}
    POST   /api/validate-yaml                          {content, repoType}
    GET    /api/{type}s/{ns}/{name}[/revision/{rev}]   repo info (sha, siblings, cardData, tags, ...)
    POST   /api/{type}s/{ns}/{name}/preupload/{rev}    regular vs lfs (.gitattributes, size, binary sample)
    POST   /api/{type}s/{ns}/{name}/commit/{rev}       NDJSON header/file/lfsFile/deletedFile/deletedFolder
    GET    /api/{type}s/{ns}/{name}/tree/{rev}[/{path}]  recursive, expand, cursor pagination (Link header)
    POST   /api/{type}s/{ns}/{name}/paths-info/{rev}   form or JSON {paths, expand}
    GET    /api/{type}s/{ns}/{name}/commits/{rev}      history, paginated (Link header)
    GET    /api/{type}s/{ns}/{name}/refs               branches / tags / converts [/ pullRequests]
    POST   /api/{type}s/{ns}/{name}/tag/{rev}          {tag, message}; DELETE .../tag/{tag}
    POST   /api/{type}s/{ns}/{name}/branch/{branch}    {startingPoint}; DELETE .../branch/{branch}
    GET    /api/{type}s/{ns}/{name}/discussions        POST to open a discussion / pull request
    GET    /api/{type}s/{ns}/{name}/discussions/{num}  details (events, changes, diff)
    POST   /api/{type}s/{ns}/{name}/discussions/{num}/comment  {comment}
    POST   /api/{type}s/{ns}/{name}/discussions/{num}/status   {status: open|closed, comment} (PATCH too)
    POST   /api/{type}s/{ns}/{name}/discussions/{num}/merge    {comment}: the PR's changes as a commit on its base
    POST   /{prefix}{ns}/{name}.git/info/lfs/objects/batch   LFS batch API, "basic" transfer
    PUT    /_lfs/upload/{ticket}                        LFS object upload (href from the batch answer)
    POST   /_lfs/verify/{ticket}                        LFS verify
    GET|HEAD /{prefix}{ns}/{name}/resolve/{rev}/{path}  file content: ETag, X-Repo-Commit, X-Linked-*, Range

``{prefix}`` is ``""`` for models, ``datasets/`` and ``spaces/`` otherwise. Errors carry ``X-Error-Code``
(``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) and ``X-Error-Message`` so that the client raises
its typed errors. Xet is not spoken: clients must run with ``HF_HUB_DISABLE_XET=1`` (xet routes answer 501).

Storage is in memory. All state changes happen under one lock; a commit is validated completely before the
branch moves, so a rejected or fault-injected commit leaves the repo unchanged (LFS objects uploaded for it are
kept in the repo's LFS store, as on the Hub, but never appear in a tree). ``drop_reply_next`` is the other fault:
the request takes effect and its reply is lost (the connection is closed unanswered).
"""

from __future__ import annotations

import argparse
import base64
import codecs
import contextlib
import difflib
import fnmatch
import hashlib
import html
import json
import os
import posixpath
import re
import secrets
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode

import yaml

from tests.support.local_server import LocalServer

REPO_TYPES = ("model", "dataset", "space")
_PLURAL = {"models": "model", "datasets": "dataset", "spaces": "space"}
_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}

#: Files at least this big must go through LFS (the Hub's limit for regular git blobs).
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024

#: The ``.gitattributes`` the Hub writes in a new repo's initial commit (models, spaces).
DEFAULT_GITATTRIBUTES = "".join(
    f"{p} filter=lfs diff=lfs merge=lfs -text\n"
    for p in (
        "*.7z",
        "*.arrow",
        "*.bin",
        "*.bz2",
        "*.ckpt",
        "*.ftz",
        "*.gz",
        "*.h5",
        "*.joblib",
        "*.lfs.*",
        "*.mlmodel",
        "*.model",
        "*.msgpack",
        "*.npy",
        "*.npz",
        "*.onnx",
        "*.ot",
        "*.parquet",
        "*.pb",
        "*.pickle",
        "*.pkl",
        "*.pt",
        "*.pth",
        "*.rar",
        "*.safetensors",
        "saved_model/**/*",
        "*.tar.*",
        "*.tar",
        "*.tflite",
        "*.tgz",
        "*.wasm",
        "*.xz",
        "*.zip",
        "*.zst",
        "*tfevents*",
    )
)
#: Dataset repos additionally track media files.
DATASET_GITATTRIBUTES = DEFAULT_GITATTRIBUTES + "".join(
    f"{p} filter=lfs diff=lfs merge=lfs -text\n"
    for p in (
        "*.lz4",
        "*.mds",
        "*.pcm",
        "*.sam",
        "*.raw",
        "*.aac",
        "*.flac",
        "*.mp3",
        "*.ogg",
        "*.wav",
        "*.bmp",
        "*.gif",
        "*.png",
        "*.tiff",
        "*.jpg",
        "*.jpeg",
        "*.webp",
        "*.mp4",
        "*.webm",
    )
)

_YAML_BLOCK = re.compile(r"^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HEX = re.compile(r"^[0-9a-f]{5,40}$")


# ---- small helpers ------------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def _looks_binary(sample: bytes) -> bool:
    """NUL bytes or invalid UTF-8 (a multi-byte character cut at the end of a 512-byte sample is fine)."""
    if b"\0" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _match_pattern(pattern: str, path: str) -> bool:
    """gitattributes / gitignore style: a slash-less pattern matches the basename at any depth."""
    pattern = pattern.strip()
    if pattern.endswith("/"):  # directory pattern
        d = pattern.strip("/")
        return path.startswith(d + "/") or f"/{d}/" in f"/{path}"
    if "/" not in pattern:
        return fnmatch.fnmatchcase(posixpath.basename(path), pattern)
    return fnmatch.fnmatchcase(path, pattern.lstrip("/"))


def _lfs_patterns(gitattributes: str) -> list[tuple[str, bool]]:
    out = []
    for line in gitattributes.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *attrs = line.split()
        if "filter=lfs" in attrs:
            out.append((pattern, True))
        elif "-filter" in attrs or "!filter" in attrs:
            out.append((pattern, False))
    return out


def _is_lfs_path(patterns: list[tuple[str, bool]], path: str) -> bool:
    result = False
    for pattern, lfs in patterns:  # last match wins, as in git
        if _match_pattern(pattern, path):
            result = lfs
    return result


def _is_ignored(gitignore: str, path: str) -> bool:
    ignored = False
    for line in gitignore.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if _match_pattern(line[1:] if negate else line, path):
            ignored = not negate
    return ignored


def parse_card_metadata(content: str) -> tuple[Any, str | None]:
    """(metadata, yaml error) of a README's front matter; metadata is None when there is none."""
    m = _YAML_BLOCK.search(content)
    if not m:
        return None, None
    try:
        return yaml.safe_load(m.group(2)), None
    except yaml.YAMLError as e:
        return None, " ".join(str(e).split())


def validate_card(content: str, repo_type: str = "model") -> tuple[list[str], list[str]]:
    """What ``POST /api/validate-yaml`` checks: ``(errors, warnings)``.

    Errors: YAML that does not parse, metadata that is not a mapping, ``configs`` (dataset repos) that is not a
    list of mappings each with a unique non-empty ``config_name`` and well-formed ``data_files`` (a path, a list
    of paths, or a list of ``{split, path}``), ``default`` not a bool or set on more than one config.
    Warnings: no metadata at all.
    """
    meta, err = parse_card_metadata(content)
    if err is not None:
        return [f"Invalid YAML in README.md metadata: {err}"], []
    if meta is None:
        return [], ["empty or missing yaml metadata in repo card"]
    if not isinstance(meta, dict):
        return [f'"metadata" must be a YAML mapping (object), got {type(meta).__name__}'], []
    errors: list[str] = []
    if repo_type == "dataset" and "configs" in meta:
        errors += _configs_errors(meta["configs"])
    if "tags" in meta and not isinstance(meta["tags"], (list, str)):
        errors.append('"tags" must be an array of strings')
    return errors, []


def _configs_errors(configs: Any) -> list[str]:
    """The errors of a dataset card's ``configs``: a list of objects, each with a unique non-empty
    ``config_name`` and well-formed ``data_files``, at most one the default."""
    if not isinstance(configs, list):
        return ['"configs" must be an array of config objects']
    errors: list[str] = []
    seen: set[str] = set()
    n_default = 0
    for i, cfg in enumerate(configs):
        where = f'"configs[{i}]"'
        if not isinstance(cfg, dict):
            errors.append(f"{where} must be an object with config_name and data_files")
            continue
        name = cfg.get("config_name")
        if not isinstance(name, str) or not name.strip():
            errors.append(f"{where}.config_name is required and must be a non-empty string")
        elif name in seen:
            errors.append(f'{where}.config_name "{name}" is duplicated')
        else:
            seen.add(name)
        if "data_files" not in cfg:
            errors.append(f"{where}.data_files is required")
        else:
            errors.extend(_data_files_errors(cfg["data_files"], f"{where}.data_files"))
        if "default" in cfg:
            if not isinstance(cfg["default"], bool):
                errors.append(f"{where}.default must be a boolean")
            elif cfg["default"]:
                n_default += 1
    if n_default > 1:
        errors.append('"configs": at most one config can be the default')
    return errors


def _data_files_errors(df: Any, where: str) -> list[str]:
    if isinstance(df, str):
        return [] if df.strip() else [f"{where} must not be empty"]
    if not isinstance(df, list) or not df:
        return [f"{where} must be a path, a list of paths or a list of {{split, path}} objects"]
    errors = []
    for j, item in enumerate(df):
        if isinstance(item, str):
            continue
        if not isinstance(item, dict):
            errors.append(f"{where}[{j}] must be a path or a {{split, path}} object")
            continue
        if not isinstance(item.get("split"), str) or not item["split"]:
            errors.append(f"{where}[{j}].split is required and must be a string")
        path = item.get("path")
        if not (isinstance(path, str) and path) and not (
            isinstance(path, list) and path and all(isinstance(p, str) and p for p in path)
        ):
            errors.append(f"{where}[{j}].path is required and must be a path or a list of paths")
    return errors


# ---- state ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    oid: str  # git blob oid (of the pointer file for LFS files)
    size: int
    lfs: str | None = None  # sha256 of the content for LFS files

    def payload(self, path: str) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "file", "oid": self.oid, "size": self.size, "path": path}
        if self.lfs is not None:
            d["lfs"] = {"oid": self.lfs, "size": self.size, "pointerSize": len(_lfs_pointer(self.lfs, self.size))}
        return d


@dataclass
class _Commit:
    oid: str
    parents: list[str]
    tree: dict[str, _Entry]
    title: str
    message: str
    author: str
    date: str


@dataclass
class _Discussion:
    num: int
    title: str
    author: str
    created_at: str
    is_pr: bool
    status: str = "open"
    base: str = "refs/heads/main"
    fork_point: str | None = None  # commit the PR started from
    merge_commit: str | None = None  # the commit a merge added to the base branch
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Repo:
    type: str
    id: str
    private: bool
    created_at: str
    sdk: str | None = None
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    prs: dict[int, str] = field(default_factory=dict)  # refs/pr/N -> commit
    commits: dict[str, _Commit] = field(default_factory=dict)
    lfs: dict[str, bytes] = field(default_factory=dict)  # sha256 -> content (uploaded, maybe not committed)
    discussions: dict[int, _Discussion] = field(default_factory=dict)
    last_modified: str = ""

    @property
    def namespace(self) -> str:
        return self.id.split("/", 1)[0]


class HubError(Exception):
    """An error answer: status, message, optional ``X-Error-Code``."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
    ):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.headers = dict(headers or {})
        self.body = body


@dataclass
class _Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(
        cls,
        obj: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json; charset=utf-8",
    ) -> _Reply:
        return cls(status, json.dumps(obj).encode(), {"Content-Type": content_type, **(headers or {})})


@dataclass
class _RepoRequest:
    """A request to a repo's API (``/api/{type}s/NS/NAME/REST...``): what its route handlers read."""

    method: str
    repo_type: str
    repo_id: str
    rest: list[str]
    q: dict[str, str]
    headers: Mapping[str, str]
    body: bytes
    user: str | None


@dataclass
class _Fault:
    route: str | None
    status: int
    count: int
    body: Any = None
    headers: dict[str, str] | None = None
    after_uploads: int | None = None  # armed once the server has seen this many LFS uploads


# ---- the server ----------------------------------------------------------------------------------------------------


class HubServer(LocalServer):
    """Fake Hugging Face Hub. ``with HubServer(tokens={"hf_x": "alice"}) as hub: hub.url``.

    Args:
        tokens: bearer token -> username. A request with an unknown token gets 401 (as on the Hub).
        orgs: org name -> member usernames. ``None`` (default): any known token may write to any namespace.
            Otherwise a user writes to their own namespace and to the orgs they belong to (403 elsewhere).
        port: 0 picks a free port.
        tree_page_size / commits_page_size / discussions_page_size: pagination sizes (the Hub: 1000 tree
            entries, 50 with ``expand``; small values let tests exercise the client's pagination).
    """

    thread_name = "hub-server"

    def __init__(
        self,
        tokens: Mapping[str, str] | None = None,
        *,
        orgs: Mapping[str, list[str]] | None = None,
        port: int = 0,
        tree_page_size: int = 1000,
        commits_page_size: int = 50,
        discussions_page_size: int = 50,
    ):
        self.tokens: dict[str, str] = dict(tokens or {})
        self.orgs: dict[str, list[str]] | None = {k: list(v) for k, v in orgs.items()} if orgs is not None else None
        self.tree_page_size = tree_page_size
        self.commits_page_size = commits_page_size
        self.discussions_page_size = discussions_page_size
        self._lock = threading.RLock()
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._blobs: dict[str, bytes] = {}  # git blob oid -> content of regular files
        self._tickets: dict[str, tuple[str, str, str, int]] = {}  # ticket -> (type, id, sha256, size)
        self._requests: list[dict[str, Any]] = []
        self._faults: list[_Fault] = []
        self._drops: list[list[Any]] = []  # [route, count]: handled, then the connection closed unanswered
        self._uploads = 0
        self._seq = 0
        #: Unexpected exceptions raised while handling requests (answered with 500): tests can assert it is empty.
        self.errors: list[str] = []
        super().__init__(_make_handler(self), port)

    # -- client configuration --------------------------------------------------------------------------------------
    def client_env(
        self,
        home: str | os.PathLike[str] | None = None,
        base: Mapping[str, str] | None = None,
        token: str | None = None,
    ) -> dict[str, str]:
        """Environment for a subprocess running the real clients against this server.

        Sets ``HF_ENDPOINT``, ``HF_HUB_DISABLE_XET=1`` and quietening flags; removes the offline switches
        (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``TRANSFORMERS_OFFLINE``) and any inherited ``HF_TOKEN``.
        With ``home``: a fresh ``HF_HOME`` (and ``HF_HUB_CACHE`` / ``HF_DATASETS_CACHE`` / ``HF_XET_CACHE`` under
        it) so no cached file or stored token of the machine leaks in. ``token`` sets ``HF_TOKEN``; without it
        ``HF_HUB_DISABLE_IMPLICIT_TOKEN=1`` keeps a token stored on the machine from being sent.
        """
        env = dict(os.environ if base is None else base)
        for k in (
            "HF_HUB_OFFLINE",
            "HF_DATASETS_OFFLINE",
            "TRANSFORMERS_OFFLINE",
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "HUGGINGFACE_CO_STAGING",
        ):
            env.pop(k, None)
        env.update(
            HF_ENDPOINT=self.url,
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_DISABLE_PROGRESS_BARS="1",
            HF_HUB_DISABLE_UPDATE_CHECK="1",
        )
        if home is not None:
            home = os.fspath(home)
            env.update(
                HF_HOME=home,
                HF_HUB_CACHE=os.path.join(home, "hub"),
                HF_DATASETS_CACHE=os.path.join(home, "datasets"),
                HF_XET_CACHE=os.path.join(home, "xet"),
                HF_TOKEN_PATH=os.path.join(home, "token"),
            )
        if token is not None:
            env["HF_TOKEN"] = token
            env.pop("HF_HUB_DISABLE_IMPLICIT_TOKEN", None)
        else:  # never send a token stored on this machine to the fake Hub (an unknown token gets 401)
            env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
        return env

    @contextlib.contextmanager
    def patch_clients(self, endpoint: bool = True, implicit_token: bool = False) -> Iterator[None]:
        """In-process: make already-imported ``huggingface_hub`` (and ``datasets``, if imported) use this server.

        Sets ``huggingface_hub.constants.HF_HUB_OFFLINE = False``, ``HF_HUB_DISABLE_XET = True`` and (unless
        ``implicit_token``) ``HF_HUB_DISABLE_IMPLICIT_TOKEN = True`` -- all read at call time -- and, with
        ``endpoint``, ``constants.ENDPOINT`` / ``HUGGINGFACE_CO_URL_TEMPLATE`` and ``datasets.config.HF_ENDPOINT`` /
        ``HUB_DATASETS_URL`` / offline flags, so code that does not pass ``endpoint=`` reaches this server too.
        Everything is restored on exit. Not thread-safe with respect to other code using the clients meanwhile.
        """
        from huggingface_hub import constants

        saved: list[tuple[Any, str, Any]] = []

        def setattr_(obj: Any, name: str, value: Any) -> None:
            saved.append((obj, name, getattr(obj, name)))
            setattr(obj, name, value)

        setattr_(constants, "HF_HUB_OFFLINE", False)
        setattr_(constants, "HF_HUB_DISABLE_XET", True)
        if not implicit_token:
            setattr_(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", True)
        if endpoint:
            setattr_(constants, "ENDPOINT", self.url)
            setattr_(constants, "HUGGINGFACE_CO_URL_TEMPLATE", self.url + "/{repo_id}/resolve/{revision}/{filename}")
            ds_config = sys.modules.get("datasets.config")
            if ds_config is not None:
                setattr_(ds_config, "HF_ENDPOINT", self.url)
                setattr_(ds_config, "HUB_DATASETS_URL", self.url + "/datasets/{repo_id}/resolve/{revision}/{path}")
                setattr_(ds_config, "HF_HUB_OFFLINE", False)
                setattr_(ds_config, "HF_DATASETS_OFFLINE", False)
        try:
            yield
        finally:
            for obj, name, value in reversed(saved):
                setattr(obj, name, value)

    # -- fault injection -------------------------------------------------------------------------------------------
    def fail_next(
        self,
        route: str | None,
        status: int = 500,
        count: int = 1,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next ``count`` requests whose ``"METHOD /raw/path"`` contains ``route`` (None: any) with
        ``status`` (JSON ``{"error": ...}`` unless ``body`` is given). Nothing else happens for those requests.

        Note the client retries some calls on 408/429/5xx with 1 s, 2 s, ... sleeps (preupload, LFS batch and
        upload, tree/commit listings); the commit POST itself is not retried.
        """
        with self._lock:
            self._faults.append(_Fault(route, status, count, body, headers))

    def fail_after_uploads(self, n: int, status: int = 500, *, route: str = "/commit/", count: int = 1) -> None:
        """Once ``n`` more LFS objects have been uploaded (counted from now), fail the next ``count`` requests
        matching ``route`` (default: the commit endpoint) with ``status``."""
        with self._lock:
            self._faults.append(_Fault(route, status, count, after_uploads=self._uploads + n))

    def drop_reply_next(self, route: str, count: int = 1) -> None:
        """Handle the next ``count`` requests whose ``"METHOD /raw/path"`` contains ``route`` as usual (a commit is
        applied), then close the connection without answering: the client sees the connection dropped, as when a
        reply is lost on the way back."""
        with self._lock:
            self._drops.append([route, count])

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._drops.clear()

    def _take_drop(self, method: str, path: str) -> bool:
        key = f"{method} {path}"
        with self._lock:
            for d in self._drops:
                if d[0] in key:
                    d[1] -= 1
                    if d[1] <= 0:
                        self._drops.remove(d)
                    return True
        return False

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        key = f"{method} {path}"
        with self._lock:
            for f in self._faults:
                if f.after_uploads is not None and self._uploads < f.after_uploads:
                    continue
                if f.route is None or f.route in key:
                    f.count -= 1
                    if f.count <= 0:
                        self._faults.remove(f)
                    return f
        return None

    # -- inspection helpers ----------------------------------------------------------------------------------------
    @property
    def requests(self) -> list[dict[str, Any]]:
        """Request log: ``{method, path, query, status, user, authenticated, fault}`` per request. The token is
        never stored (only whether one was sent and whose it is)."""
        with self._lock:
            return [dict(r) for r in self._requests]

    def repo_exists(self, repo_type: str, repo_id: str) -> bool:
        with self._lock:
            return (repo_type, repo_id) in self._repos

    def head(self, repo_type: str, repo_id: str, revision: str = "main") -> str:
        with self._lock:
            repo = self._get_repo(repo_type, repo_id)
            return self._resolve(repo, revision).oid

    def commits(self, repo_type: str, repo_id: str, revision: str = "main") -> list[dict[str, Any]]:
        """History of ``revision``, newest first: ``{oid, parents, title, message, author, date, files}``."""
        with self._lock:
            repo = self._get_repo(repo_type, repo_id)
            return [
                {
                    "oid": c.oid,
                    "parents": list(c.parents),
                    "title": c.title,
                    "message": c.message,
                    "author": c.author,
                    "date": c.date,
                    "files": sorted(c.tree),
                }
                for c in self._history(repo, self._resolve(repo, revision))
            ]

    def files(self, repo_type: str, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        """Content of every file at ``revision``."""
        with self._lock:
            repo = self._get_repo(repo_type, repo_id)
            tree = self._resolve(repo, revision).tree
            return {p: self._content(repo, e) for p, e in sorted(tree.items())}

    def lfs_objects(self, repo_type: str, repo_id: str) -> set[str]:
        """sha256 of every LFS object uploaded to the repo (committed or not)."""
        with self._lock:
            return set(self._get_repo(repo_type, repo_id).lfs)

    # -- seeding helpers (no HTTP) ---------------------------------------------------------------------------------
    def create_repo(self, repo_type: str, repo_id: str, *, private: bool = False, sdk: str | None = None) -> None:
        """Create a repo directly (with the Hub's initial ``.gitattributes`` commit)."""
        with self._lock:
            self._create_repo(repo_type, repo_id, private=private, sdk=sdk, author=repo_id.split("/")[0])

    def commit(
        self,
        repo_type: str,
        repo_id: str,
        files: Mapping[str, bytes | str],
        *,
        message: str = "Seed files",
        deletions: tuple[str, ...] = (),
        revision: str = "main",
        author: str | None = None,
    ) -> str:
        """Commit files directly (LFS vs regular decided as the preupload endpoint would). Returns the oid."""
        with self._lock:
            repo = self._get_repo(repo_type, repo_id)
            parent = self._resolve(repo, revision)
            tree = dict(parent.tree)
            patterns = _lfs_patterns(self._text(repo, tree, ".gitattributes"))
            for path in deletions:
                tree.pop(path, None)
            for path, data in files.items():
                data = data.encode() if isinstance(data, str) else data
                if len(data) >= LFS_SIZE_THRESHOLD or _is_lfs_path(patterns, path) or _looks_binary(data[:512]):
                    sha = hashlib.sha256(data).hexdigest()
                    repo.lfs[sha] = data
                    tree[path] = _Entry(_git_blob_oid(_lfs_pointer(sha, len(data))), len(data), sha)
                else:
                    oid = _git_blob_oid(data)
                    self._blobs[oid] = data
                    tree[path] = _Entry(oid, len(data))
            c = self._new_commit(repo, [parent.oid], tree, message, "", author or repo.namespace)
            repo.branches[revision] = c.oid
            return c.oid

    # -- internals: repos, revisions, content ----------------------------------------------------------------------
    def _get_repo(self, repo_type: str, repo_id: str) -> _Repo:
        try:
            return self._repos[(repo_type, repo_id)]
        except KeyError:
            raise HubError(404, f"Repository Not Found: {repo_type} {repo_id}", "RepoNotFound") from None

    def _create_repo(self, repo_type: str, repo_id: str, *, private: bool, sdk: str | None, author: str) -> _Repo:
        repo = _Repo(type=repo_type, id=repo_id, private=private, created_at=_now(), sdk=sdk)
        ga = (DATASET_GITATTRIBUTES if repo_type == "dataset" else DEFAULT_GITATTRIBUTES).encode()
        oid = _git_blob_oid(ga)
        self._blobs[oid] = ga
        c = self._new_commit(repo, [], {".gitattributes": _Entry(oid, len(ga))}, "initial commit", "", author)
        repo.branches["main"] = c.oid
        self._repos[(repo_type, repo_id)] = repo
        return repo

    def _new_commit(
        self, repo: _Repo, parents: list[str], tree: dict[str, _Entry], title: str, message: str, author: str
    ) -> _Commit:
        self._seq += 1
        tree_hash = hashlib.sha1("".join(f"{p}\0{e.oid}\n" for p, e in sorted(tree.items())).encode()).hexdigest()
        oid = hashlib.sha1(
            json.dumps(
                {
                    "tree": tree_hash,
                    "parents": parents,
                    "title": title,
                    "message": message,
                    "author": author,
                    "seq": self._seq,
                }
            ).encode()
        ).hexdigest()
        c = _Commit(oid, parents, tree, title, message, author, _now())
        repo.commits[oid] = c
        repo.last_modified = c.date
        return c

    def _resolve(self, repo: _Repo, rev: str) -> _Commit:
        """Branch, tag, refs/heads|tags|pr/..., or a commit oid (full or unique prefix)."""
        oid = None
        if rev in repo.branches:
            oid = repo.branches[rev]
        elif rev in repo.tags:
            oid = repo.tags[rev]
        elif rev.startswith("refs/heads/"):
            oid = repo.branches.get(rev[len("refs/heads/") :])
        elif rev.startswith("refs/tags/"):
            oid = repo.tags.get(rev[len("refs/tags/") :])
        elif m := re.fullmatch(r"refs/pr/(\d+)", rev):
            oid = repo.prs.get(int(m.group(1)))
        elif _HEX.fullmatch(rev):
            found = [o for o in repo.commits if o.startswith(rev)]
            oid = found[0] if len(found) == 1 else None
        if oid is None:
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return repo.commits[oid]

    def _history(self, repo: _Repo, commit: _Commit) -> list[_Commit]:
        out, c = [], commit
        while True:
            out.append(c)
            if not c.parents:
                return out
            c = repo.commits[c.parents[0]]

    def _content(self, repo: _Repo, e: _Entry) -> bytes:
        return repo.lfs[e.lfs] if e.lfs is not None else self._blobs[e.oid]

    def _text(self, repo: _Repo, tree: dict[str, _Entry], path: str) -> str:
        e = tree.get(path)
        return self._content(repo, e).decode("utf-8", "replace") if e is not None else ""

    def _card_data(self, repo: _Repo, tree: dict[str, _Entry]) -> dict[str, Any] | None:
        meta, _ = parse_card_metadata(self._text(repo, tree, "README.md"))
        return meta if isinstance(meta, dict) else None

    def _last_commit(self, repo: _Repo, head: _Commit, path: str, is_dir: bool) -> dict[str, str]:
        def sub(tree: dict[str, _Entry]) -> dict[str, str]:
            if not is_dir:
                return {path: tree[path].oid} if path in tree else {}
            prefix = path + "/" if path else ""
            return {p: e.oid for p, e in tree.items() if p.startswith(prefix)}

        c = head
        while c.parents:
            parent = repo.commits[c.parents[0]]
            if sub(c.tree) != sub(parent.tree):
                break
            c = parent
        return {"id": c.oid, "title": c.title, "date": c.date}

    def _dir_oid(self, tree: dict[str, _Entry], d: str) -> str:
        prefix = d + "/" if d else ""
        return hashlib.sha1(
            "".join(f"{p}\0{e.oid}\n" for p, e in sorted(tree.items()) if p.startswith(prefix)).encode()
        ).hexdigest()

    def _entry_payload(self, repo: _Repo, head: _Commit, path: str, expand: bool) -> dict[str, Any] | None:
        tree = head.tree
        if path in tree:
            d = tree[path].payload(path)
            if expand:
                d["lastCommit"] = self._last_commit(repo, head, path, False)
                d["securityFileStatus"] = {
                    "status": "safe",
                    "avScan": {"virusFound": False, "virusNames": None},
                    "pickleImportScan": None,
                }
            return d
        if path and any(p.startswith(path + "/") for p in tree):
            d = {"type": "directory", "oid": self._dir_oid(tree, path), "size": 0, "path": path}
            if expand:
                d["lastCommit"] = self._last_commit(repo, head, path, True)
            return d
        return None

    # -- auth ------------------------------------------------------------------------------------------------------
    def _can_write(self, user: str | None, namespace: str) -> bool:
        if user is None:
            return False
        if self.orgs is None or user == namespace:
            return True
        return user in self.orgs.get(namespace, ())

    def _read_repo(self, user: str | None, repo_type: str, repo_id: str) -> _Repo:
        repo = self._repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not self._can_write(user, repo.namespace)):
            others = [
                t
                for t in REPO_TYPES
                if t != repo_type
                and (t, repo_id) in self._repos
                and (not self._repos[(t, repo_id)].private or self._can_write(user, repo_id.split("/")[0]))
            ]
            hint = f" (a {others[0]} repo with this id exists: check repo_type)" if others else ""
            status = 401 if user is None else 404
            raise HubError(status, f"Repository Not Found for {repo_type} '{repo_id}'{hint}", "RepoNotFound")
        return repo

    def _write_repo(self, user: str | None, repo_type: str, repo_id: str) -> _Repo:
        repo = self._read_repo(user, repo_type, repo_id)
        if user is None:
            raise HubError(401, "Invalid username or password.")
        if not self._can_write(user, repo.namespace):
            raise HubError(403, f"You don't have the rights to write to {repo_type} '{repo_id}'")
        return repo

    # -- request handling ------------------------------------------------------------------------------------------
    def _handle(
        self, method: str, raw_path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[_Reply, str | None, bool]:
        """-> (reply, user, faulted)."""
        user: str | None = None
        auth = headers.get("authorization") or headers.get("Authorization")
        fault = self._take_fault(method, raw_path)
        if fault is not None:
            msg = f"Injected fault: {fault.status} for {method} {raw_path}"
            b = fault.body if fault.body is not None else {"error": msg}
            reply = (
                _Reply.json(b)
                if not isinstance(b, (bytes, str))
                else _Reply(body=b.encode() if isinstance(b, str) else b, headers={"Content-Type": "text/plain"})
            )
            reply.status = fault.status
            reply.headers.update({"X-Error-Message": msg, **(fault.headers or {})})
            return reply, None, True
        try:
            if auth:
                scheme, _, tok = auth.partition(" ")
                user = self.tokens.get(tok.strip()) if scheme.lower() == "bearer" else None
                if user is None:
                    raise HubError(401, "Invalid credentials in Authorization header")
            q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
            segs = [unquote(s) for s in raw_path.split("/")[1:]]
            if segs and segs[-1] == "" and len(segs) > 1:
                segs = segs[:-1]
            return self._route(method, segs, q, headers, body, user), user, False
        except HubError as e:
            h = {"X-Error-Message": e.message, **e.headers}
            if e.code:
                h["X-Error-Code"] = e.code
            b = e.body if e.body is not None else {"error": e.message}
            return _Reply.json(b, e.status, h), user, False

    def _api_route(
        self, method: str, segs: list[str], q: dict[str, str], headers: Mapping[str, str], body: bytes, user: str | None
    ) -> _Reply:
        """The routes under ``/api``: the account, creating and deleting repos, the card check, a repo's API."""
        rest = segs[1:]
        if rest == ["whoami-v2"] and method == "GET":
            return self._whoami(user)
        if rest == ["repos", "create"] and method == "POST":
            return self._api_create_repo(user, _json(body))
        if rest == ["repos", "delete"] and method == "DELETE":
            return self._api_delete_repo(user, _json(body))
        if rest == ["validate-yaml"] and method == "POST":
            return self._api_validate_yaml(_json(body), headers)
        if len(rest) >= 3 and rest[0] in _PLURAL:
            request = _RepoRequest(method, _PLURAL[rest[0]], f"{rest[1]}/{rest[2]}", rest[3:], q, headers, body, user)
            return self._repo_api(request)
        raise HubError(404, f"Unknown API route: {method} /{'/'.join(segs)}")

    def _route(
        self, method: str, segs: list[str], q: dict[str, str], headers: Mapping[str, str], body: bytes, user: str | None
    ) -> _Reply:
        if segs[:1] == ["api"]:
            return self._api_route(method, segs, q, headers, body, user)
        if segs[:1] == ["_lfs"] and len(segs) == 3:
            if segs[1] == "upload" and method == "PUT":
                return self._lfs_put(segs[2], body)
            if segs[1] == "verify" and method == "POST":
                return self._lfs_verify(segs[2], _json(body))
        repo_type = "model"
        if segs and segs[0] in ("datasets", "spaces", "models"):
            repo_type, segs = _PLURAL[segs[0]], segs[1:]
        if len(segs) >= 5 and segs[2] == "resolve" and method in ("GET", "HEAD"):
            rev, path = _take_rev(segs[3:])
            return self._resolve_file(method, repo_type, f"{segs[0]}/{segs[1]}", rev, "/".join(path), headers, user)
        if (
            len(segs) == 6
            and segs[1].endswith(".git")
            and segs[2:] == ["info", "lfs", "objects", "batch"]
            and method == "POST"
        ):
            return self._lfs_batch(repo_type, f"{segs[0]}/{segs[1][:-4]}", _json(body), user)
        raise HubError(404, f"Unknown route: {method} /{'/'.join(segs)}")

    def _repo_api(self, r: _RepoRequest) -> _Reply:
        route = r.rest[0] if r.rest else ""
        if any(part.startswith("xet-") for part in r.rest):
            raise HubError(501, "Xet is not supported by this test Hub: run the client with HF_HUB_DISABLE_XET=1")
        if route == "" and r.method == "GET":
            return self._repo_info(r.repo_type, r.repo_id, None, r.q, r.user)
        if route == "settings" and r.method == "PUT":
            return self._settings(r.repo_type, r.repo_id, _json(r.body), r.user)
        if r.rest == ["refs"] and r.method == "GET":
            return self._refs(r.repo_type, r.repo_id, r.q, r.user)
        reply = self._revision_api(r) if len(r.rest) >= 2 else None
        if route in ("tag", "branch") and len(r.rest) >= 2:
            reply = self._ref_api(r, route)
        if route == "discussions":
            reply = self._discussions_api(r)
        if reply is None:
            raise HubError(404, f"Unknown repo route: {r.method} {'/'.join(r.rest)}")
        return reply

    def _revision_api(self, r: _RepoRequest) -> _Reply | None:
        """The routes at a revision (``ROUTE/REV[/PATH]``): the repo's info, preupload, commit, tree, paths-info and
        the commit list; None for another route."""
        route, method, repo_type, repo_id = r.rest[0], r.method, r.repo_type, r.repo_id
        rev, path = _take_rev(r.rest[1:])
        if route == "revision" and method == "GET":
            return self._repo_info(repo_type, repo_id, rev, r.q, r.user)
        if route == "preupload" and method == "POST":
            create_pr = r.q.get("create_pr", "").lower() in ("1", "true")
            return self._preupload(repo_type, repo_id, rev, _json(r.body), create_pr, r.user)
        if route == "commit" and method == "POST":
            return self._commit(repo_type, repo_id, rev, r.q, r.headers, r.body, r.user)
        if route == "tree" and method == "GET":
            return self._tree(repo_type, repo_id, rev, "/".join(path), r.q, r.user)
        if route == "paths-info" and method == "POST":
            return self._paths_info(repo_type, repo_id, rev, r.headers, r.body, r.user)
        if route == "commits" and method == "GET":
            return self._list_commits(repo_type, repo_id, rev, r.q, r.user)
        return None

    def _ref_api(self, r: _RepoRequest, route: str) -> _Reply | None:
        """Creating (POST) or deleting (DELETE) a tag or branch; None for another method."""
        name, _ = _take_rev(r.rest[1:])
        if r.method == "POST":
            create = self._create_tag if route == "tag" else self._create_branch
            return create(r.repo_type, r.repo_id, name, _json(r.body), r.user)
        if r.method == "DELETE":
            return self._delete_ref(r.repo_type, r.repo_id, route, name, r.user)
        return None

    def _discussions_api(self, r: _RepoRequest) -> _Reply | None:
        """The discussion and pull request routes (list, create, details, comment, status, merge); None for an
        unknown one."""
        rest, method, repo_type, repo_id, user = r.rest, r.method, r.repo_type, r.repo_id, r.user
        if len(rest) == 1 and method == "GET":
            return self._list_discussions(repo_type, repo_id, r.q, user)
        if len(rest) == 1 and method == "POST":
            return self._create_discussion(repo_type, repo_id, _json(r.body), user)
        if len(rest) == 2 and rest[1].isdigit() and method == "GET":
            return self._discussion_details(repo_type, repo_id, int(rest[1]), r.q, user)
        if len(rest) == 3 and rest[1].isdigit():
            num, action = int(rest[1]), rest[2]
            if action == "comment" and method == "POST":
                return self._comment_discussion(repo_type, repo_id, num, _json(r.body), user)
            if action == "status" and method in ("POST", "PATCH"):  # the client POSTs
                return self._change_status(repo_type, repo_id, num, _json(r.body), user)
            if action == "merge" and method == "POST":
                return self._merge_pr(repo_type, repo_id, num, _json(r.body), user)
        return None

    def _repo_url(self, repo: _Repo) -> str:
        return f"{self.url}/{_PREFIX[repo.type]}{repo.id}"

    # -- endpoints: account and repos ------------------------------------------------------------------------------
    def _whoami(self, user: str | None) -> _Reply:
        if user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        orgs = [o for o, members in (self.orgs or {}).items() if user in members]
        return _Reply.json(
            {
                "type": "user",
                "id": hashlib.sha1(user.encode()).hexdigest()[:24],
                "name": user,
                "fullname": user,
                "email": f"{user}@example.invalid",
                "emailVerified": True,
                "canPay": False,
                "isPro": False,
                "periodEnd": None,
                "avatarUrl": "",
                "orgs": [{"type": "org", "name": o, "fullname": o} for o in orgs],
                "auth": {
                    "type": "access_token",
                    "accessToken": {"displayName": "test", "role": "write", "createdAt": "2024-01-01T00:00:00.000Z"},
                },
            }
        )

    def _api_create_repo(self, user: str | None, payload: dict[str, Any]) -> _Reply:
        if user is None:
            raise HubError(401, "Invalid username or password.")
        repo_type = payload.get("type") or "model"
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"Invalid repo type: {repo_type}")
        name = payload.get("name")
        if (
            not isinstance(name, str)
            or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}", name)
            or "--" in name
            or ".." in name
        ):
            raise HubError(400, f"Invalid repo name: {name!r}")
        namespace = payload.get("organization") or user
        if not self._can_write(user, namespace):
            raise HubError(403, f'You don\'t have the rights to create a {repo_type} under the namespace "{namespace}"')
        if repo_type == "space" and payload.get("sdk") is None:
            raise HubError(400, "A space needs an sdk")
        private = payload.get("private")
        if "visibility" in payload:
            private = payload["visibility"] != "public"
        repo_id = f"{namespace}/{name}"
        with self._lock:
            if (repo_type, repo_id) in self._repos:
                url = f"{self.url}/{_PREFIX[repo_type]}{repo_id}"
                raise HubError(
                    409,
                    f"You already created this {repo_type} repo",
                    body={"error": f"You already created this {repo_type} repo", "url": url},
                )
            repo = self._create_repo(repo_type, repo_id, private=bool(private), sdk=payload.get("sdk"), author=user)
            return _Reply.json({"url": self._repo_url(repo), "name": repo_id, "id": repo_id})

    def _api_delete_repo(self, user: str | None, payload: dict[str, Any]) -> _Reply:
        repo_type = payload.get("type") or "model"
        namespace = payload.get("organization") or user or ""
        repo_id = f"{namespace}/{payload.get('name')}"
        with self._lock:
            self._write_repo(user, repo_type, repo_id)
            del self._repos[(repo_type, repo_id)]
        return _Reply.json({})

    def _settings(self, repo_type: str, repo_id: str, payload: dict[str, Any], user: str | None) -> _Reply:
        with self._lock:
            repo = self._write_repo(user, repo_type, repo_id)
            if "private" in payload:
                repo.private = bool(payload["private"])
            if "visibility" in payload:
                repo.private = payload["visibility"] != "public"
            return _Reply.json({})

    def _api_validate_yaml(self, payload: dict[str, Any], headers: Mapping[str, str]) -> _Reply:
        content = payload.get("content")
        if not isinstance(content, str):
            raise HubError(400, '"content" must be a string')
        errors, warnings = validate_card(content, payload.get("repoType") or "model")
        status = 400 if errors else 200
        if "text/plain" in (headers.get("accept") or headers.get("Accept") or ""):
            return _Reply(status, "\n".join(errors).encode(), {"Content-Type": "text/plain; charset=utf-8"})
        return _Reply.json(
            {"errors": [{"message": e} for e in errors], "warnings": [{"message": w} for w in warnings]}, status
        )

    def _repo_info(self, repo_type: str, repo_id: str, rev: str | None, q: dict[str, str], user: str | None) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            c = self._resolve(repo, rev or "main")
            blobs = q.get("blobs", "").lower() in ("1", "true")
            siblings = []
            for p, e in sorted(c.tree.items()):
                s: dict[str, Any] = {"rfilename": p}
                if blobs:
                    s.update(size=e.size, blobId=e.oid)
                    if e.lfs:
                        s["lfs"] = {"sha256": e.lfs, "size": e.size, "pointerSize": len(_lfs_pointer(e.lfs, e.size))}
                siblings.append(s)
            card = self._card_data(repo, c.tree)
            tags: list[str] = []
            if card:
                t = card.get("tags")
                tags += [str(x) for x in (t if isinstance(t, list) else [t] if t else [])]
                if isinstance(card.get("license"), str):
                    tags.append(f"license:{card['license']}")
            info: dict[str, Any] = {
                "_id": hashlib.sha1(f"{repo.type}/{repo.id}".encode()).hexdigest()[:24],
                "id": repo.id,
                "author": repo.namespace,
                "sha": c.oid,
                "lastModified": c.date,
                "createdAt": repo.created_at,
                "private": repo.private,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": tags,
                "siblings": siblings,
            }
            if card is not None:
                info["cardData"] = card
            if repo.type == "model":
                info["library_name"] = (card or {}).get("library_name")
                info["pipeline_tag"] = (card or {}).get("pipeline_tag")
            if repo.type == "space":
                info["sdk"] = repo.sdk
            return _Reply.json(info)

    # -- endpoints: uploads and commits ----------------------------------------------------------------------------
    def _preupload(
        self, repo_type: str, repo_id: str, rev: str, payload: dict[str, Any], create_pr: bool, user: str | None
    ) -> _Reply:
        files = payload.get("files")
        if not isinstance(files, list):
            raise HubError(400, '"files" must be an array')
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:
                raise HubError(401, "Invalid username or password.")
            if not create_pr and not rev.startswith("refs/pr/") and not self._can_write(user, repo.namespace):
                raise HubError(403, f"You don't have the rights to write to {repo_type} '{repo_id}'")
            head = self._resolve(repo, rev)
            patterns = _lfs_patterns(self._text(repo, head.tree, ".gitattributes"))
            gitignore = payload.get("gitIgnore")
            if not isinstance(gitignore, str):
                gitignore = self._text(repo, head.tree, ".gitignore")
            out = []
            for f in files:
                path, size = f.get("path"), f.get("size")
                if not isinstance(path, str) or not isinstance(size, int):
                    raise HubError(400, "each file needs a path and a size")
                try:
                    sample = base64.b64decode(f.get("sample") or "")
                except ValueError:
                    raise HubError(400, f"invalid base64 sample for {path}") from None
                lfs = size >= LFS_SIZE_THRESHOLD or _is_lfs_path(patterns, path) or _looks_binary(sample)
                e = head.tree.get(path)
                oid = None if e is None else (e.lfs or e.oid)
                out.append(
                    {
                        "path": path,
                        "uploadMode": "lfs" if lfs else "regular",
                        "shouldIgnore": _is_ignored(gitignore, path),
                        "oid": oid,
                    }
                )
            return _Reply.json({"files": out, "commitOid": head.oid})

    def _lfs_batch(self, repo_type: str, repo_id: str, payload: dict[str, Any], user: str | None) -> _Reply:
        ctype = {"Content-Type": "application/vnd.git-lfs+json"}
        if payload.get("operation") != "upload":
            raise HubError(422, "only the upload operation is supported by this test Hub")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:
                raise HubError(401, "Invalid username or password.")
            objects = []
            for obj in payload.get("objects") or []:
                oid, size = obj.get("oid"), obj.get("size")
                if not isinstance(oid, str) or not _SHA256.fullmatch(oid) or not isinstance(size, int) or size < 0:
                    objects.append(
                        {
                            "oid": str(oid),
                            "size": size if isinstance(size, int) else 0,
                            "error": {"code": 422, "message": "invalid oid or size"},
                        }
                    )
                    continue
                if oid in repo.lfs:
                    if len(repo.lfs[oid]) != size:
                        objects.append(
                            {
                                "oid": oid,
                                "size": size,
                                "error": {"code": 422, "message": "size does not match the stored object"},
                            }
                        )
                    else:
                        objects.append({"oid": oid, "size": size})  # already there: no actions
                    continue
                ticket = secrets.token_urlsafe(24)
                self._tickets[ticket] = (repo_type, repo_id, oid, size)
                objects.append(
                    {
                        "oid": oid,
                        "size": size,
                        "authenticated": True,
                        "actions": {
                            "upload": {"href": f"{self.url}/_lfs/upload/{ticket}", "header": {}},
                            "verify": {"href": f"{self.url}/_lfs/verify/{ticket}", "header": {}},
                        },
                    }
                )
            return _Reply.json(
                {"transfer": "basic", "objects": objects, "hash_algo": "sha256"}, content_type=ctype["Content-Type"]
            )

    def _lfs_put(self, ticket: str, body: bytes) -> _Reply:
        with self._lock:
            t = self._tickets.get(ticket)
            if t is None:
                raise HubError(403, "Invalid or expired upload URL")
            repo_type, repo_id, oid, size = t
            if len(body) != size or hashlib.sha256(body).hexdigest() != oid:
                raise HubError(400, f"Uploaded content does not match oid {oid} / size {size}")
            repo = self._repos.get((repo_type, repo_id))
            if repo is None:
                raise HubError(404, "Repository was deleted", "RepoNotFound")
            repo.lfs[oid] = body
            self._uploads += 1
            return _Reply(200, b"", {"ETag": f'"{hashlib.md5(body).hexdigest()}"'})

    def _lfs_verify(self, ticket: str, payload: dict[str, Any]) -> _Reply:
        with self._lock:
            t = self._tickets.get(ticket)
            if t is None:
                raise HubError(403, "Invalid or expired verify URL")
            repo_type, repo_id, oid, size = t
            repo = self._repos.get((repo_type, repo_id))
            if payload.get("oid") != oid or payload.get("size") != size:
                raise HubError(422, "verify payload does not match the upload")
            if repo is None or oid not in repo.lfs:
                raise HubError(404, f"LFS object {oid} was not uploaded")
            return _Reply.json({"oid": oid, "size": size})

    def _commit_base(
        self, repo: _Repo, rev: str, user: str, *, create_pr: bool, repo_type: str, repo_id: str
    ) -> tuple[_Commit, int | None, str | None]:
        """(the head of what a commit at ``rev`` builds on, the pull request number when ``rev`` is one, else the
        branch name); refused for a revision that is no branch or pull request, or without the rights."""
        if m := re.fullmatch(r"refs/pr/(\d+)", rev):
            pr_num = int(m.group(1))
            if create_pr:
                raise HubError(400, "create_pr=1 needs a branch as base, not a pull request")
            if pr_num not in repo.prs:
                raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            d = repo.discussions[pr_num]
            if d.author != user and not self._can_write(user, repo.namespace):
                raise HubError(403, "You can only push to your own pull requests")
            return repo.commits[repo.prs[pr_num]], pr_num, None
        branch = rev.removeprefix("refs/heads/")
        if branch not in repo.branches:
            if rev in repo.tags or _HEX.fullmatch(rev):
                raise HubError(400, f"Cannot commit to {rev}: not a branch")
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        if not create_pr and not self._can_write(user, repo.namespace):
            raise HubError(403, f"You don't have the rights to write to {repo_type} '{repo_id}'")
        return repo.commits[repo.branches[branch]], None, branch

    @staticmethod
    def _commit_parent(repo: _Repo, parent_commit: Any, branch_head: _Commit, *, create_pr: bool) -> _Commit:
        """The commit a new commit's tree starts from: the head, or the ``parentCommit`` of a pull request;
        refused when ``parentCommit`` is unknown, or (not for a pull request) is not the head."""
        parent = branch_head
        if parent_commit is not None:
            found = [o for o in repo.commits if isinstance(parent_commit, str) and o.startswith(parent_commit)]
            if len(found) != 1:
                raise HubError(404, f"parentCommit {parent_commit} not found", "RevisionNotFound")
            if create_pr:
                parent = repo.commits[found[0]]
            elif found[0] != branch_head.oid:
                raise HubError(
                    412,
                    "A commit has happened since. Please refresh and try again. "
                    f"(parentCommit {parent_commit} is not the head {branch_head.oid})",
                )
        return parent

    def _check_card(
        self, repo: _Repo, tree: dict[str, _Entry], ops: list[tuple[str, str, dict[str, Any]]], repo_type: str
    ) -> None:
        """A commit that writes README.md is refused when the card's metadata does not validate."""
        if any(op[0] == "file" and op[1] == "README.md" for op in ops) and "README.md" in tree:
            errors, _ = validate_card(self._text(repo, tree, "README.md"), repo_type)
            if errors:
                raise HubError(
                    400,
                    "Invalid metadata in README.md: " + "; ".join(errors),
                    body={"error": "Invalid metadata in README.md", "errors": [{"message": e} for e in errors]},
                )

    def _commit(
        self,
        repo_type: str,
        repo_id: str,
        rev: str,
        q: dict[str, str],
        headers: Mapping[str, str],
        body: bytes,
        user: str | None,
    ) -> _Reply:
        header, ops = _parse_commit_body(body, headers)
        create_pr = q.get("create_pr", "").lower() in ("1", "true")
        summary = header.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise HubError(400, "A commit needs a summary")
        description = header.get("description") or ""
        parent_commit = header.get("parentCommit")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:
                raise HubError(401, "Invalid username or password.")
            branch_head, pr_num, branch = self._commit_base(
                repo, rev, user, create_pr=create_pr, repo_type=repo_type, repo_id=repo_id
            )
            parent = self._commit_parent(repo, parent_commit, branch_head, create_pr=create_pr)
            tree = self._apply_ops(repo, dict(parent.tree), ops)
            self._check_card(repo, tree, ops, repo_type)
            c = self._new_commit(repo, [parent.oid], tree, summary, description, user)
            pr_url = None
            if create_pr:
                num = max(repo.discussions, default=0) + 1
                d = _Discussion(num, summary, user, c.date, True, base=f"refs/heads/{branch}", fork_point=parent.oid)
                d.events.append(_comment_event(user, description or summary, c.date))
                d.events.append(_commit_event(user, c))
                repo.discussions[num] = d
                repo.prs[num] = c.oid
                pr_url = f"{self._repo_url(repo)}/discussions/{num}"
            elif pr_num is not None:
                repo.prs[pr_num] = c.oid
                repo.discussions[pr_num].events.append(_commit_event(user, c))
            else:
                assert branch is not None  # not a pull request: a branch
                repo.branches[branch] = c.oid
            return _Reply.json(
                {
                    "success": True,
                    "commitOid": c.oid,
                    "commitUrl": f"{self._repo_url(repo)}/commit/{c.oid}",
                    "hookOutput": "",
                    "pullRequestUrl": pr_url,
                }
            )

    @staticmethod
    def _file_op(path: str, value: dict[str, Any], tree: dict[str, _Entry], new_blobs: dict[str, bytes]) -> None:
        """A regular file of a commit (base64 or plain text), refused when it is large or binary (LFS's)."""
        enc = value.get("encoding", "base64")
        content = value.get("content", "")
        try:
            data = base64.b64decode(content, validate=True) if enc == "base64" else str(content).encode()
        except ValueError:
            raise HubError(400, f"Invalid base64 content for {path}") from None
        if len(data) >= LFS_SIZE_THRESHOLD:
            raise HubError(
                400,
                f"Your push was rejected because {path} is larger than 10 MiB: "
                "upload it with LFS (preupload says uploadMode=lfs)",
            )
        if _looks_binary(data[:8000]):
            raise HubError(
                400,
                f"Your push was rejected because it contains binary files ({path}): "
                "upload them with LFS (preupload says uploadMode=lfs)",
            )
        oid = _git_blob_oid(data)
        new_blobs[oid] = data
        tree[path] = _Entry(oid, len(data))

    @staticmethod
    def _lfs_file_op(repo: _Repo, path: str, value: dict[str, Any], tree: dict[str, _Entry]) -> None:
        """An LFS file of a commit: its object must have been uploaded, with the size given."""
        oid, size = value.get("oid"), value.get("size")
        if value.get("algo", "sha256") != "sha256" or not isinstance(oid, str) or oid not in repo.lfs:
            raise HubError(
                400,
                f"Your push was rejected because an LFS pointer pointed to a file that "
                f"does not exist: {path} (oid {oid}); upload it through the LFS batch API "
                "first",
            )
        actual = len(repo.lfs[oid])
        if size is not None and size != actual:
            raise HubError(400, f"LFS object {oid} has size {actual}, not {size} ({path})")
        tree[path] = _Entry(_git_blob_oid(_lfs_pointer(oid, actual)), actual, oid)

    @staticmethod
    def _delete_op(kind: str, path: str, tree: dict[str, _Entry]) -> None:
        """A deleted file or folder of a commit: it must exist."""
        if kind == "deletedFile":
            if path not in tree:
                raise HubError(404, f"A file with this name doesn't exist: {path}", "EntryNotFound")
            del tree[path]
        elif kind == "deletedFolder":
            prefix = path.rstrip("/") + "/"
            doomed = [p for p in tree if p.startswith(prefix)]
            if not doomed:
                raise HubError(404, f"A folder with this name doesn't exist: {path}", "EntryNotFound")
            for p in doomed:
                del tree[p]

    def _apply_ops(
        self, repo: _Repo, tree: dict[str, _Entry], ops: list[tuple[str, str, dict[str, Any]]]
    ) -> dict[str, _Entry]:
        new_blobs: dict[str, bytes] = {}
        for kind, path, value in ops:
            if kind == "file":
                self._file_op(path, value, tree, new_blobs)
            elif kind == "lfsFile":
                self._lfs_file_op(repo, path, value, tree)
            else:
                self._delete_op(kind, path, tree)
        # a path can't be both a file and a folder
        for p in tree:
            parts = p.split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in tree:
                    raise HubError(400, f"'{'/'.join(parts[:i])}' is a file, it can't also be a folder ({p})")
        self._blobs.update(new_blobs)
        return tree

    # -- endpoints: files ------------------------------------------------------------------------------------------
    def _tree(self, repo_type: str, repo_id: str, rev: str, path: str, q: dict[str, str], user: str | None) -> _Reply:
        recursive = q.get("recursive", "").lower() in ("1", "true")
        expand = q.get("expand", "").lower() in ("1", "true")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            head = self._resolve(repo, rev)
            path = path.strip("/")
            prefix = path + "/" if path else ""
            if path and not any(p.startswith(prefix) for p in head.tree):
                raise HubError(
                    404,
                    f"Entry not found: {path} is not a folder at {rev}",
                    "EntryNotFound",
                    {"X-Repo-Commit": head.oid},
                )
            names: set[str] = set()
            for p in head.tree:
                if not p.startswith(prefix):
                    continue
                parts = p[len(prefix) :].split("/")
                if recursive:
                    names.update(prefix + "/".join(parts[:i]) for i in range(1, len(parts) + 1))
                else:
                    names.add(prefix + parts[0])
            # folders first, then files, each sorted (as the Hub does per level)
            ordered = sorted(names, key=lambda n: (n.count("/") if recursive else 0, n in head.tree, n))
            page = min(self.tree_page_size, 50) if expand else self.tree_page_size
            start = int(q.get("cursor") or 0)
            chunk = ordered[start : start + page]
            entries = [self._entry_payload(repo, head, n, expand) for n in chunk]
            hdrs = {"X-Repo-Commit": head.oid}
            if start + page < len(ordered):
                nq = {k: v for k, v in q.items() if k != "cursor"}
                nq["cursor"] = str(start + page)
                base = f"{self.url}/api/{repo_type}s/{repo_id}/tree/{quote(rev, safe='')}"
                if path:
                    base += "/" + quote(path)
                hdrs["Link"] = f'<{base}?{urlencode(nq)}>; rel="next"'
            return _Reply.json(entries, headers=hdrs)

    def _paths_info(
        self, repo_type: str, repo_id: str, rev: str, headers: Mapping[str, str], body: bytes, user: str | None
    ) -> _Reply:
        ctype = headers.get("content-type") or headers.get("Content-Type") or ""
        if "json" in ctype:
            payload = _json(body)
            paths, expand = payload.get("paths") or [], bool(payload.get("expand"))
        else:
            form = parse_qs(body.decode(), keep_blank_values=True)
            paths = form.get("paths", [])
            expand = (form.get("expand") or ["false"])[-1].lower() in ("1", "true")
        if isinstance(paths, str):
            paths = [paths]
        if len(paths) > 1000:
            raise HubError(413, "too many parameters")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            head = self._resolve(repo, rev)
            out = [e for p in paths if (e := self._entry_payload(repo, head, p.strip("/"), expand)) is not None]
            return _Reply.json(out, headers={"X-Repo-Commit": head.oid})

    def _resolve_file(
        self,
        method: str,
        repo_type: str,
        repo_id: str,
        rev: str,
        path: str,
        headers: Mapping[str, str],
        user: str | None,
    ) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            head = self._resolve(repo, rev)
            e = head.tree.get(path)
            if e is None:
                raise HubError(404, f"Entry not found: {path} at {rev}", "EntryNotFound", {"X-Repo-Commit": head.oid})
            data = self._content(repo, e)
        h = {
            "X-Repo-Commit": head.oid,
            "ETag": f'"{e.lfs or e.oid}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream" if e.lfs else "text/plain; charset=utf-8",
            "Content-Disposition": f'inline; filename="{posixpath.basename(path)}"',
        }
        if e.lfs:
            h.update({"X-Linked-Etag": f'"{e.lfs}"', "X-Linked-Size": str(e.size)})
        rng = headers.get("range") or headers.get("Range")
        if rng:
            m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", rng)
            if not m or (not m.group(1) and not m.group(2)):
                raise HubError(416, f"Invalid range {rng}", headers={"Content-Range": f"bytes */{len(data)}"})
            if m.group(1):
                start = int(m.group(1))
                end = min(int(m.group(2)), len(data) - 1) if m.group(2) else len(data) - 1
            else:
                start, end = max(len(data) - int(m.group(2)), 0), len(data) - 1
            if start >= len(data) or start > end:
                raise HubError(416, f"Range not satisfiable: {rng}", headers={"Content-Range": f"bytes */{len(data)}"})
            h["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return _Reply(206, data[start : end + 1], h)
        return _Reply(200, data, h)

    def _list_commits(self, repo_type: str, repo_id: str, rev: str, q: dict[str, str], user: str | None) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            history = self._history(repo, self._resolve(repo, rev))
            p = int(q.get("p") or 0)
            n = self.commits_page_size
            out = []
            for c in history[p * n : (p + 1) * n]:
                item = {
                    "id": c.oid,
                    "title": c.title,
                    "message": c.message,
                    "date": c.date,
                    "parents": c.parents,
                    "authors": [{"user": c.author, "avatar": None}],
                }
                if q.get("expand[]") == "formatted":
                    item["formatted"] = {"title": html.escape(c.title), "message": html.escape(c.message)}
                out.append(item)
            hdrs = {}
            if (p + 1) * n < len(history):
                nq = {**q, "p": str(p + 1)}
                hdrs["Link"] = (
                    f'<{self.url}/api/{repo_type}s/{repo_id}/commits/{quote(rev, safe="")}?{urlencode(nq)}>; rel="next"'
                )
            return _Reply.json(out, headers=hdrs)

    # -- endpoints: refs -------------------------------------------------------------------------------------------
    def _refs(self, repo_type: str, repo_id: str, q: dict[str, str], user: str | None) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            out: dict[str, Any] = {
                "branches": [
                    {"name": b, "ref": f"refs/heads/{b}", "targetCommit": o} for b, o in sorted(repo.branches.items())
                ],
                "converts": [],
                "tags": [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": o} for t, o in sorted(repo.tags.items())],
            }
            if q.get("include_prs", "").lower() in ("1", "true"):
                out["pullRequests"] = [
                    {"name": f"refs/pr/{n}", "ref": f"refs/pr/{n}", "targetCommit": o}
                    for n, o in sorted(repo.prs.items())
                ]
            return _Reply.json(out)

    def _create_tag(self, repo_type: str, repo_id: str, rev: str, payload: dict[str, Any], user: str | None) -> _Reply:
        tag = payload.get("tag")
        if not isinstance(tag, str) or not re.fullmatch(r"[A-Za-z0-9._/-]+", tag) or tag.startswith("refs/"):
            raise HubError(400, f"Invalid tag name: {tag!r}")
        with self._lock:
            repo = self._write_repo(user, repo_type, repo_id)
            c = self._resolve(repo, rev)
            if tag in repo.tags:
                raise HubError(409, f"Tag {tag} already exists")
            repo.tags[tag] = c.oid
            return _Reply.json({})

    def _create_branch(
        self, repo_type: str, repo_id: str, branch: str, payload: dict[str, Any], user: str | None
    ) -> _Reply:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", branch) or branch.startswith("refs/"):
            raise HubError(400, f"Invalid branch name: {branch!r}")
        with self._lock:
            repo = self._write_repo(user, repo_type, repo_id)
            if branch in repo.branches:
                raise HubError(409, f"Branch {branch} already exists")
            repo.branches[branch] = self._resolve(repo, payload.get("startingPoint") or "main").oid
            return _Reply.json({})

    def _delete_ref(self, repo_type: str, repo_id: str, kind: str, name: str, user: str | None) -> _Reply:
        with self._lock:
            repo = self._write_repo(user, repo_type, repo_id)
            refs = repo.tags if kind == "tag" else repo.branches
            if name not in refs:
                raise HubError(404, f"Invalid rev id: {name}", "RevisionNotFound")
            if kind == "branch" and name == "main":
                raise HubError(403, "Cannot delete the main branch")
            del refs[name]
            return _Reply.json({})

    # -- endpoints: discussions ------------------------------------------------------------------------------------
    def _discussion_payload(self, repo: _Repo, d: _Discussion) -> dict[str, Any]:
        return {
            "num": d.num,
            "title": d.title,
            "status": d.status,
            "createdAt": d.created_at,
            "author": {"name": d.author, "type": "user"},
            "isPullRequest": d.is_pr,
            "repo": {"name": repo.id, "type": repo.type},
            "pinned": False,
            "topReactions": [],
            "numComments": sum(1 for e in d.events if e["type"] == "comment"),
        }

    def _list_discussions(self, repo_type: str, repo_id: str, q: dict[str, str], user: str | None) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            items = sorted(repo.discussions.values(), key=lambda d: -d.num)
            kind = q.get("type", "all")
            if kind in ("discussion", "pull_request"):
                items = [d for d in items if d.is_pr == (kind == "pull_request")]
            status = q.get("status", "all")
            if status in ("open", "closed"):
                items = [d for d in items if (d.status in ("open", "draft")) == (status == "open")]
            if q.get("author"):
                items = [d for d in items if d.author == q["author"]]
            p, n = int(q.get("p") or 0), self.discussions_page_size
            return _Reply.json(
                {
                    "discussions": [self._discussion_payload(repo, d) for d in items[p * n : (p + 1) * n]],
                    "count": len(items),
                    "start": p * n,
                    "numClosedDiscussions": 0,
                }
            )

    def _create_discussion(self, repo_type: str, repo_id: str, payload: dict[str, Any], user: str | None) -> _Reply:
        title = (payload.get("title") or "").strip()
        if len(title) < 3:
            raise HubError(400, "title must be at least 3 characters long")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:
                raise HubError(401, "Invalid username or password.")
            num = max(repo.discussions, default=0) + 1
            is_pr = bool(payload.get("pullRequest"))
            d = _Discussion(
                num,
                title,
                user,
                _now(),
                is_pr,
                status="draft" if is_pr else "open",
                fork_point=repo.branches["main"] if is_pr else None,
            )
            d.events.append(_comment_event(user, payload.get("description") or "", d.created_at))
            repo.discussions[num] = d
            if is_pr:
                repo.prs[num] = repo.branches["main"]
            return _Reply.json(
                {"num": num, "pullRequest": is_pr, "url": {"web": f"{self._repo_url(repo)}/discussions/{num}"}}
            )

    def _discussion_details(
        self, repo_type: str, repo_id: str, num: int, q: dict[str, str], user: str | None
    ) -> _Reply:
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            d = repo.discussions.get(num)
            if d is None:
                raise HubError(404, f"Discussion {num} not found")
            out = self._discussion_payload(repo, d)
            out["events"] = [dict(e) for e in d.events]
            if d.is_pr:
                out["changes"] = {"base": d.base}
                if d.merge_commit is not None:
                    out["changes"]["mergeCommitId"] = d.merge_commit
                out["filesWithConflicts"] = (
                    self._merge_tree(repo, d)[1]
                    if d.status in ("open", "draft") and d.base.removeprefix("refs/heads/") in repo.branches
                    else []
                )
                if q.get("diff") == "1":
                    out["diff"] = self._diff(
                        repo, repo.commits[d.fork_point or repo.prs[num]], repo.commits[repo.prs[num]]
                    )
            return _Reply.json(out)

    def _discussion(self, repo: _Repo, num: int) -> _Discussion:
        d = repo.discussions.get(num)
        if d is None:
            raise HubError(404, f"Discussion {num} not found")
        return d

    def _comment_discussion(
        self, repo_type: str, repo_id: str, num: int, payload: dict[str, Any], user: str | None
    ) -> _Reply:
        text = payload.get("comment")
        if not isinstance(text, str) or not text.strip():
            raise HubError(400, "comment must be a non-empty string")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:  # anyone logged in who can read the repo may comment
                raise HubError(401, "Invalid username or password.")
            d = self._discussion(repo, num)
            event = _comment_event(user, text, _now())
            d.events.append(event)
            return _Reply.json({"newMessage": event})

    def _change_status(
        self, repo_type: str, repo_id: str, num: int, payload: dict[str, Any], user: str | None
    ) -> _Reply:
        status, comment = payload.get("status"), payload.get("comment")
        if status not in ("open", "closed"):
            raise HubError(400, f"status must be 'open' or 'closed', not {status!r}")
        with self._lock:
            repo = self._read_repo(user, repo_type, repo_id)
            if user is None:
                raise HubError(401, "Invalid username or password.")
            d = self._discussion(repo, num)
            if d.author != user and not self._can_write(user, repo.namespace):
                raise HubError(403, f"You don't have the rights to change the status of discussion #{num} of {repo_id}")
            if d.status == "merged":
                raise HubError(400, f"Pull request #{num} is merged: its status cannot change")
            if (d.status in ("open", "draft")) == (status == "open"):
                raise HubError(400, f"Discussion #{num} is already {status}")
            date = _now()
            if isinstance(comment, str) and comment.strip():
                d.events.append(_comment_event(user, comment, date))
            d.status = status
            event = _status_event(user, status, date)
            d.events.append(event)
            return _Reply.json({"newStatus": event})

    def _merge_tree(self, repo: _Repo, d: _Discussion) -> tuple[dict[str, _Entry], list[str]]:
        """(the base branch's tree with the PR's changes against its fork point, the paths both changed, differently,
        or that would be a file and a folder at once)."""
        base = repo.commits[d.fork_point or repo.prs[d.num]]
        head = repo.commits[repo.prs[d.num]]
        target = repo.commits[repo.branches[d.base.removeprefix("refs/heads/")]]
        tree, conflicts = dict(target.tree), set()
        for p in set(base.tree) | set(head.tree):
            old, new = base.tree.get(p), head.tree.get(p)
            if old == new:
                continue
            if target.tree.get(p) not in (old, new):
                conflicts.add(p)
            elif new is None:
                tree.pop(p, None)
            else:
                tree[p] = new
        folders = {p.rsplit("/", i)[0] for p in tree for i in range(1, p.count("/") + 1)}
        return tree, sorted(conflicts | (set(tree) & folders))

    def _merge_pr(self, repo_type: str, repo_id: str, num: int, payload: dict[str, Any], user: str | None) -> _Reply:
        comment = payload.get("comment")
        with self._lock:
            repo = self._write_repo(user, repo_type, repo_id)
            assert user is not None  # _write_repo refuses anonymous requests
            d = self._discussion(repo, num)
            if not d.is_pr:
                raise HubError(400, f"Discussion #{num} is not a pull request")
            if d.status == "merged":
                raise HubError(400, f"Pull request #{num} is already merged")
            if d.status == "closed":
                raise HubError(400, f"Pull request #{num} is closed: reopen it before merging")
            branch = d.base.removeprefix("refs/heads/")
            if branch not in repo.branches:
                raise HubError(400, f"The base branch {branch} of pull request #{num} does not exist")
            tree, conflicts = self._merge_tree(repo, d)
            if conflicts:
                message = (
                    f"Merge conflict: pull request #{num} and {branch} both changed {', '.join(conflicts)} since "
                    "the pull request was opened"
                )
                raise HubError(409, message, body={"error": message, "filesWithConflicts": conflicts})
            c = self._new_commit(
                repo, [repo.branches[branch]], tree, f"{d.title} (#{num})", f"Merge of pull request #{num}", user
            )
            repo.branches[branch] = c.oid
            if isinstance(comment, str) and comment.strip():
                d.events.append(_comment_event(user, comment, c.date))
            d.status, d.merge_commit = "merged", c.oid
            event = _status_event(user, "merged", c.date)
            d.events.append(event)
            return _Reply.json({"newStatus": event, "mergeCommitId": c.oid})

    def _diff(self, repo: _Repo, old: _Commit, new: _Commit) -> str:
        out = []
        for p in sorted(set(old.tree) | set(new.tree)):
            a, b = old.tree.get(p), new.tree.get(p)
            if a == b:
                continue
            out.append(f"diff --git a/{p} b/{p}\n")

            def lines(e: _Entry | None) -> list[str]:
                if e is None:
                    return []
                data = _lfs_pointer(e.lfs, e.size) if e.lfs else self._content(repo, e)
                return data.decode("utf-8", "replace").splitlines(keepends=True)

            out.extend(
                difflib.unified_diff(lines(a), lines(b), f"a/{p}" if a else "/dev/null", f"b/{p}" if b else "/dev/null")
            )
        return "".join(out)


# ---- request parsing -----------------------------------------------------------------------------------------------


def _take_rev(parts: list[str]) -> tuple[str, list[str]]:
    """A revision is one (percent-encoded) segment, or unencoded ``refs/{pr,heads,tags,convert}/<name>``."""
    if len(parts) >= 3 and parts[0] == "refs" and parts[1] in ("pr", "heads", "tags", "convert"):
        return "/".join(parts[:3]), parts[3:]
    return parts[0], parts[1:]


def _json(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        obj = json.loads(body)
    except ValueError:
        raise HubError(400, "Request body is not valid JSON") from None
    if not isinstance(obj, dict):
        raise HubError(400, "Request body must be a JSON object")
    return obj


def _ndjson_items(body: bytes) -> list[Any]:
    """The ``{"key", "value"}`` items of an NDJSON commit body (blank lines skipped)."""
    items = []
    for i, line in enumerate(body.splitlines()):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except ValueError:
            raise HubError(400, f"Invalid NDJSON line {i + 1}") from None
    return items


def _legacy_items(body: bytes) -> list[Any]:
    """The ``{"key", "value"}`` items of a legacy JSON commit body: the header, then the operations by kind."""
    obj = _json(body)
    items = [{"key": "header", "value": {k: obj[k] for k in ("summary", "description", "parentCommit") if k in obj}}]
    for key, src in (
        ("file", "files"),
        ("lfsFile", "lfsFiles"),
        ("deletedFile", "deletedFiles"),
        ("deletedFolder", "deletedFolders"),
    ):
        items += [{"key": key, "value": v} for v in obj.get(src) or []]
    return items


def _parse_commit_body(
    body: bytes, headers: Mapping[str, str]
) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    """NDJSON ``{"key": header|file|lfsFile|deletedFile|deletedFolder, "value": {...}}`` lines, or the legacy JSON
    object ``{summary, description, parentCommit, files, lfsFiles, deletedFiles, deletedFolders}``."""
    ctype = (headers.get("content-type") or headers.get("Content-Type") or "").lower()
    header: dict[str, Any] = {}
    ops: list[tuple[str, str, dict[str, Any]]] = []
    items = _ndjson_items(body) if "ndjson" in ctype else _legacy_items(body)
    for item in items:
        key, value = item.get("key"), item.get("value")
        if not isinstance(value, dict):
            raise HubError(400, f"Invalid commit line: {item!r}"[:200])
        if key == "header":
            header = value
            continue
        if key not in ("file", "lfsFile", "deletedFile", "deletedFolder"):
            raise HubError(400, f"Unknown commit operation: {key!r}")
        path = value.get("path")
        if not isinstance(path, str) or not path.strip("/"):
            raise HubError(400, f"Invalid path in {key}: {path!r}")
        parts = path.strip("/").split("/")
        if any(p in ("", ".", "..") for p in parts) or parts[0] == ".git" or path.startswith("/"):
            raise HubError(400, f"Invalid path in {key}: {path!r}")
        ops.append((key, path if key == "deletedFolder" else path.strip("/"), value))
    if not header:
        raise HubError(400, "The commit has no header line")
    return header, ops


def _event(kind: str, user: str, date: str, data: dict[str, Any]) -> dict[str, Any]:
    """A discussion event of ``kind`` by ``user`` at ``date``, with what the kind says in ``data``."""
    return {
        "id": secrets.token_hex(12),
        "type": kind,
        "createdAt": date,
        "author": {"name": user, "type": "user"},
        "data": data,
    }


def _comment_event(user: str, text: str, date: str) -> dict[str, Any]:
    latest = {
        "raw": text,
        "html": f"<p>{html.escape(text)}</p>",
        "updatedAt": date,
        "author": {"name": user, "type": "user"},
    }
    return _event(
        "comment",
        user,
        date,
        {
            "edited": False,
            "hidden": False,
            "numEdits": 0,
            "editors": [user],
            "reactions": [],
            "identifiedLanguage": None,
            "isReport": False,
            "latest": latest,
        },
    )


def _status_event(user: str, status: str, date: str) -> dict[str, Any]:
    return _event("status-change", user, date, {"status": status})


def _commit_event(user: str, c: _Commit) -> dict[str, Any]:
    return _event("commit", user, c.date, {"subject": c.title, "oid": c.oid})


def _make_handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "phr-test-hub/1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                chunks = []
                while True:
                    size_line = self.rfile.readline()
                    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()  # CRLF after each chunk
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n > 0 else b""

        def _dispatch(self) -> None:
            method = self.command
            raw_path, _, query = self.path.partition("?")
            body = self._read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                reply, user, faulted = hub._handle(method, raw_path, query, headers, body)
            except Exception as e:  # noqa: BLE001 -- a bug in the fake: answer 500, keep it for the test to see
                tb = traceback.format_exc()
                with hub._lock:
                    hub.errors.append(tb)
                reply = _Reply.json(
                    {"error": f"test hub internal error: {e!r}"},
                    500,
                    {"X-Error-Message": f"test hub internal error: {type(e).__name__}"},
                )
                user, faulted = None, False
            dropped = hub._take_drop(method, raw_path)
            with hub._lock:
                hub._requests.append(
                    {
                        "method": method,
                        "path": raw_path,
                        "query": query,
                        "status": reply.status,
                        "user": user,
                        "authenticated": "authorization" in headers,
                        "fault": faulted or dropped,
                        "request_bytes": len(body),
                    }
                )
            if dropped:  # the request took effect; its reply is lost
                self.close_connection = True
                return
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                # header values must be one latin-1 line
                self.send_header(k, " ".join(str(v).split()).encode("latin-1", "replace").decode("latin-1"))
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(reply.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _dispatch

    return Handler


@contextlib.contextmanager
def online_hub(monkeypatch: Any, token: str) -> Iterator[HubServer]:
    """The fixture of the online push tests: a server that knows ``token`` as alice, the in-process clients
    patched to it (``patch_clients``), ``HF_TOKEN`` set to ``token`` as a user would, no ``PHR_HUB_DIR``, no
    progress bars; on the way out, the server logged no protocol error."""
    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with HubServer(tokens={token: "alice"}) as server, server.patch_clients():
        yield server
        assert server.errors == [], server.errors[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Run the fake Hugging Face Hub (tests / local dry runs).")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="TOKEN:USER",
        help="a bearer token and the user it belongs to (repeatable)",
    )
    args = ap.parse_args(argv)
    tokens = dict(t.split(":", 1) for t in args.token)
    with HubServer(tokens=tokens, port=args.port) as hub:
        print(f"HF_ENDPOINT={hub.url} HF_HUB_DISABLE_XET=1", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
