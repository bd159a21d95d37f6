"""verl-style reward functions: a model's answer in, a dict with `score` out."""

from __future__ import annotations

import atexit
import re
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._async import AsyncClient
from ._common import Record, record
from ._sync import Client

Result = Dict[str, Any]

_DIFF_BLOCK = re.compile(r"```(?:diff|patch)?[ \t]*\r?\n(.*?)```", re.S)


def patch_of(solution_str: Optional[str]) -> str:
    """The patch in a model's answer: the last ```diff block, else the text from its first
    `diff --git` line, else the whole text."""
    text = solution_str or ""
    blocks = _DIFF_BLOCK.findall(text)
    if blocks:
        return str(blocks[-1])
    at = text.find("diff --git")
    return text[at:] if at >= 0 else text


def instance_of(ground_truth: Any, extra_info: Any) -> str:
    """The instance: `extra_info['instance_id']`, else `ground_truth['instance_id']`, else
    `ground_truth` itself when it is a string."""
    if isinstance(extra_info, dict) and extra_info.get("instance_id"):
        return str(extra_info["instance_id"])
    if isinstance(ground_truth, dict) and ground_truth.get("instance_id"):
        return str(ground_truth["instance_id"])
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    raise ValueError("compute_score needs the instance id: extra_info['instance_id'] or ground_truth")


def _record_of(solution_str: Optional[str], ground_truth: Any, extra_info: Any, kw: Dict[str, Any]) -> Record:
    info = extra_info if isinstance(extra_info, dict) else {}
    model = info.get("model_name_or_path", kw.get("model_name_or_path"))
    sample = info.get("sample", kw.get("sample"))
    deadline = info.get("deadline_s", kw.get("deadline_s"))
    # Plain types: a dataset's columns may come as numpy scalars, which JSON does not take.
    return record(
        instance_of(ground_truth, extra_info),
        patch_of(None if solution_str is None else str(solution_str)),
        model_name_or_path=None if model is None else str(model),
        sample=None if sample is None else int(sample),
        deadline_s=None if deadline is None else float(deadline),
    )


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def result_of(e: Dict[str, Any], timeout: Optional[float] = None) -> Result:
    """The reward of one evaluation, every value a scalar (a string, number, bool or None).
    `score` is the server's (1.0 when the verdict it rewards by is resolved: the strict one by
    default), or `1.0 if resolved else 0.0` from a server that sends none. `mask` true: the
    infrastructure decided (an infrastructure error, a deadline passed, or no verdict yet when
    the wait ended): drop the sample; its `score` is 0.0. `objections`: what the strict grading
    objected to, joined by `; ` ("" when nothing)."""
    outcome = e.get("status") is not None
    mask = bool(e.get("mask")) or not outcome
    score = float(e["score"]) if _number(e.get("score")) else (1.0 if e.get("resolved") else 0.0)
    objections = e.get("objections")
    reason = e.get("reason")
    if not outcome and reason is None:
        reason = "no verdict %s (state %s): masked" % (
            "yet" if timeout is None else "within %g s" % timeout,
            e.get("state"),
        )
    return {
        "score": 0.0 if mask else score,
        "mask": mask,
        "status": e.get("status"),
        "strict_status": e.get("strict_status"),
        "resolved": bool(e.get("resolved")),
        "strict_resolved": bool(e.get("strict_resolved")),
        "graded_by": e.get("graded_by"),
        # One string, not the server's list: verl makes an array of each key's values across a
        # batch, which lists of different lengths cannot be.
        "objections": "; ".join(str(o) for o in objections) if isinstance(objections, list) else "",
        "reason": reason,
        "similarity": e.get("similarity"),
        "reward": e.get("reward"),
        "cached": bool(e.get("cached")),
        "id": e.get("id"),
        "state": e.get("state"),
    }


# Clients kept between calls, by settings (each thread keeps its own connection). The asyncio
# functions make a client per call instead: connections belong to one event loop.
_lock = threading.Lock()
_clients: Dict[Tuple[Any, ...], Client] = {}


def _settings(kw: Dict[str, Any]) -> Tuple[Any, ...]:
    return (kw.get("url"), kw.get("token"), kw.get("request_timeout", 60.0), kw.get("retry"), kw.get("retry_deadline"))


def _client(kw: Dict[str, Any]) -> Client:
    c = kw.get("client")
    if isinstance(c, Client):
        return c
    key = _settings(kw)
    with _lock:
        if key not in _clients:
            _clients[key] = Client(*key)
        return _clients[key]


@atexit.register
def _close_clients() -> None:
    with _lock:
        for c in _clients.values():
            c.close()
        _clients.clear()


async def _evaluate_async(records: List[Record], kw: Dict[str, Any]) -> List[Dict[str, Any]]:
    c = kw.get("client")
    if isinstance(c, AsyncClient):
        return await c.evaluate_batch(records, timeout=kw.get("timeout"))
    async with AsyncClient(*_settings(kw)) as mine:
        return await mine.evaluate_batch(records, timeout=kw.get("timeout"))


def _column(values: Any, n: int, name: str) -> List[Any]:
    if values is None:
        return [None] * n
    out = list(values)
    if len(out) != n:
        raise ValueError("%s has %d items, solution_strs %d" % (name, len(out), n))
    return out


def _records(solution_strs: Sequence[Optional[str]], ground_truths: Any, extra_infos: Any, kw: Dict[str, Any]) -> List[Record]:
    answers = list(solution_strs)
    n = len(answers)
    truths = _column(ground_truths, n, "ground_truths")
    infos = _column(extra_infos, n, "extra_infos")
    return [_record_of(s, g, i, kw) for s, g, i in zip(answers, truths, infos)]


def compute_score(
    data_source: Any,
    solution_str: Optional[str],
    ground_truth: Any,
    extra_info: Optional[Dict[str, Any]] = None,
    **kw: Any,
) -> Result:
    """A verl-style reward function: executes the patch in `solution_str` on the instance
    (`extra_info['instance_id']`, else `ground_truth`) and returns a dict (see `result_of`):
    `score`, `mask`, `status`, `strict_status`, `resolved` (official), `strict_resolved`,
    `graded_by`, `objections`, `reason`, `similarity`, `reward`, `cached`, `id`, `state`.

    Keywords (verl's `reward_kwargs`): `url`, `token`, `timeout` (seconds to wait for the
    verdict; None: no limit; a sample not done by then comes back masked), `retry_deadline`,
    `retry` (a RetryPolicy), `request_timeout` (one attempt's), `client` (a Client to use),
    and `model_name_or_path`, `sample`, `deadline_s` for the record (`extra_info` may carry
    them too). Others are ignored. `data_source` is not used."""
    del data_source
    r = _record_of(solution_str, ground_truth, extra_info, kw)
    timeout = kw.get("timeout")
    e = _client(kw).evaluate_batch([r], timeout=timeout)[0]
    return result_of(e, timeout)


def compute_scores(
    data_sources: Any,
    solution_strs: Sequence[Optional[str]],
    ground_truths: Any,
    extra_infos: Any = None,
    **kw: Any,
) -> List[Result]:
    """compute_score for a whole batch (verl's batch reward manager): every sample submitted at
    once (in requests within the server's bounds), one result per sample in order. Keywords as
    compute_score's."""
    del data_sources
    records = _records(solution_strs, ground_truths, extra_infos, kw)
    if not records:
        return []
    timeout = kw.get("timeout")
    return [result_of(e, timeout) for e in _client(kw).evaluate_batch(records, timeout=timeout)]


async def compute_score_async(
    data_source: Any,
    solution_str: Optional[str],
    ground_truth: Any,
    extra_info: Optional[Dict[str, Any]] = None,
    **kw: Any,
) -> Result:
    """compute_score for reward managers that await their reward function (`client` may be an
    AsyncClient)."""
    del data_source
    r = _record_of(solution_str, ground_truth, extra_info, kw)
    timeout = kw.get("timeout")
    e = (await _evaluate_async([r], kw))[0]
    return result_of(e, timeout)


async def compute_scores_async(
    data_sources: Any,
    solution_strs: Sequence[Optional[str]],
    ground_truths: Any,
    extra_infos: Any = None,
    **kw: Any,
) -> List[Result]:
    """compute_scores, awaited."""
    del data_sources
    records = _records(solution_strs, ground_truths, extra_infos, kw)
    if not records:
        return []
    timeout = kw.get("timeout")
    return [result_of(e, timeout) for e in await _evaluate_async(records, kw)]
