"""A harness's output as a leaderboard submission: the responses of an lm-evaluation-harness ``--log_samples``
file or an inspect_ai log, one submission line each (``{"instance_id", "sample", "response"}``), for
``phr.eval.submission.validate_submission`` to check and ``phr-publish score`` to score like any submission.

- lm-eval (``samples_<task>_<time>.jsonl``): one line per instance; ``doc.id`` is the instance, the responses are
  ``filtered_resps`` (what the task scored; our tasks keep every sample), sample k the k-th.
- inspect (``.eval`` or ``.json``): one sample per instance and epoch; ``id`` is the instance, epoch e is sample
  e - 1, the response is the output's completion. A sample that ended in an error has no response (missing).

Only JSON is parsed (inspect's own reader for its zip), as for any submission.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

#: (where in the file, a number for "first on" messages, the submission line or None, the problem or None)
Entry = tuple[str, int, str | None, str | None]


class HarnessLogError(ValueError):
    """The file looks like a harness's output but cannot be read as one."""


def _line(instance_id: Any, sample: int, response: Any) -> str:
    return json.dumps({"instance_id": instance_id, "sample": sample, "response": response}, ensure_ascii=False)


def kind_of(path: Path, head: bytes) -> str | None:
    """``"lm-eval"``, ``"inspect"`` or None (a plain submission), from the name and the first bytes."""
    if head.startswith(b"PK\x03\x04") or path.suffix == ".eval":
        return "inspect"
    first = head.split(b"\n", 1)[0]
    if first.lstrip().startswith(b"{") and b'"doc_id"' in first and b'"resps"' in first:
        return "lm-eval"
    if path.suffix == ".json" and b'"eval"' in head and b'"samples"' in head:
        return "inspect"
    return None


def _context(obj: dict) -> str | None:
    """The text lm-eval sent the model for a record (``arguments.gen_args_0.arg_0``), if the record has it."""
    args = obj.get("arguments")
    first = args.get("gen_args_0") if isinstance(args, dict) else None
    context = first.get("arg_0") if isinstance(first, dict) else None
    return context if isinstance(context, str) else None


def prompt_problem(sent: str | None, prompt: str | None, *, templated: bool) -> str | None:
    """What is wrong with the text a harness sent for an instance whose prompt is ``prompt``: not the instance's
    prompt, or (``templated``: the harness shows the rendered text) the raw prompt, no chat template around it."""
    if sent is None or prompt is None:
        return None
    if templated and sent == prompt:
        return (
            "lm-eval sent the raw prompt, without the model's chat template: rerun lm_eval with --apply_chat_template "
            "(PHRBench's prompt is one user turn of the chat template)"
        )
    if prompt not in sent:
        return "the prompt the harness sent is not this instance's prompt (another dataset or prompt version?)"
    return None


def lm_eval_entries(lines: Iterator[tuple[int, str]], prompts: Mapping[str, str]) -> Iterator[Entry]:
    """The responses of an lm-eval samples file, given its (line number, text) lines and the instances' prompts
    by id (a record whose context is not its instance's chat-templated prompt is a problem)."""
    for lineno, text in lines:
        where = f"line {lineno}"
        try:
            obj = json.loads(text)
        except ValueError as e:
            yield where, lineno, None, f"not valid JSON ({e})"
            continue
        doc = obj.get("doc") if isinstance(obj, dict) else None
        iid = doc.get("id") if isinstance(doc, dict) else None
        resps = obj.get("filtered_resps") if isinstance(obj, dict) else None
        if iid is None or not isinstance(resps, list):
            yield (
                where,
                lineno,
                None,
                f"not an lm-eval sample record (no {'doc.id' if iid is None else 'filtered_resps'})",
            )
            continue
        if problem := prompt_problem(_context(obj), prompts.get(iid) if isinstance(iid, str) else None, templated=True):
            yield where, lineno, None, problem
            continue
        responses = resps[0] if len(resps) == 1 and isinstance(resps[0], list) else resps
        for k, response in enumerate(responses):
            yield where, lineno, _line(iid, k, response), None


def inspect_entries(path: Path, prompts: Mapping[str, str]) -> Iterator[Entry]:
    """The responses of an inspect log (``.eval`` or ``.json``), given the instances' prompts by id (a sample whose
    input is not its instance's prompt is a problem; inspect applies the chat template itself)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise HarnessLogError(
            f"{path} is an inspect_ai log: reading it needs inspect-ai (pip install -c constraints.txt -e '.[harness]')"
        ) from None
    try:
        log = read_eval_log(str(path))
    except Exception as e:  # noqa: BLE001 - inspect's reader raises many kinds for a damaged log
        raise HarnessLogError(f"{path}: not a readable inspect_ai log ({type(e).__name__}: {e})") from None
    if log.status != "success" and not log.samples:
        raise HarnessLogError(f"{path}: the inspect_ai run has no samples (status {log.status})")
    for n, s in enumerate(log.samples or [], 1):
        if s.error is not None:
            continue  # no response: the instance is missing (or uncovered)
        sent = s.input if isinstance(s.input, str) else (s.input[-1].text if s.input else None)
        if problem := prompt_problem(sent, prompts.get(str(s.id)), templated=False):
            yield f"sample {n} (id {s.id!r}, epoch {s.epoch})", n, None, problem
            continue
        yield f"sample {n} (id {s.id!r}, epoch {s.epoch})", n, _line(s.id, s.epoch - 1, s.output.completion), None
