"""What the synchronous and the asyncio client share: settings, records, batching, and reading
an answer."""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._errors import ProtocolError, ServeError, error_of
from ._retry import RetryPolicy

__version__ = "0.2.0"

DEFAULT_URL = "http://127.0.0.1:8321"
# A long poll asks the server to wait at most this long per request.
POLL_S = 30.0
# The server's own bounds (`swe-eval serve`): predictions or ids in one request, request body.
SERVER_MAX_BATCH = 4096
SERVER_MAX_BODY = 64 << 20

Json = Any
Record = Dict[str, Any]


class Settings:
    """A client's settings: where the server is, its token, the attempt timeout, the retry
    policy and how large one request may be."""

    def __init__(
        self,
        url: Optional[str],
        token: Optional[str],
        timeout: float,
        retry: Optional[RetryPolicy],
        retry_deadline: Optional[float],
        max_batch: int,
        max_body: int,
    ) -> None:
        self.url = (url or os.environ.get("SWE_EVAL_URL") or DEFAULT_URL).rstrip("/")
        u = urllib.parse.urlsplit(self.url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("the server's URL is http://HOST[:PORT][/PREFIX] or https://..., not %r" % self.url)
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.token = token if token is not None else os.environ.get("SWE_EVAL_TOKEN")
        if not timeout > 0:
            raise ValueError("timeout must be more than 0 seconds, not %r" % (timeout,))
        self.timeout = float(timeout)
        retry = retry or RetryPolicy()
        if retry_deadline is not None:
            retry = RetryPolicy(
                deadline=retry_deadline,
                backoff=retry.backoff,
                backoff_max=retry.backoff_max,
                retry_after_max=retry.retry_after_max,
                jitter=retry.jitter,
            )
        self.retry = retry
        if not 1 <= max_batch <= SERVER_MAX_BATCH:
            raise ValueError("max_batch is 1 to %d, not %r" % (SERVER_MAX_BATCH, max_batch))
        if not max_body >= 1:
            raise ValueError("max_body must be 1 or more, not %r" % (max_body,))
        self.max_batch = max_batch
        self.max_body = max_body

    def headers(self, has_body: bool) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "swe-eval-client/" + __version__}
        if has_body:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h


def encode(body: Optional[Json]) -> Optional[bytes]:
    return None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")


def decode(status: int, body: bytes, retry_after: Optional[str]) -> Json:
    """The JSON of a 2xx answer; raises `ServeError` for an error status and `ProtocolError` for
    a 2xx body that is not JSON."""
    if 200 <= status <= 299:
        try:
            return json.loads(body.decode("utf-8"))
        except ValueError as e:
            raise ProtocolError("a %d answer whose body is not JSON (%s): %r" % (status, e, body[:100])) from e
    raise error_of(status, body, retry_after)


def record(
    instance_id: str,
    model_patch: Optional[str],
    model_name_or_path: Optional[str] = None,
    sample: Optional[int] = None,
    deadline_s: Optional[float] = None,
    execute: bool = True,
) -> Record:
    """A prediction record as the server reads it."""
    r: Record = {"instance_id": instance_id, "model_patch": model_patch}
    if model_name_or_path is not None:
        r["model_name_or_path"] = model_name_or_path
    if sample is not None:
        r["sample"] = sample
    if deadline_s is not None:
        r["deadline_s"] = deadline_s
    if not execute:
        r["execute"] = False
    return r


def eval_path(eval_id: str, wait: Optional[float] = None) -> str:
    path = "/v1/evaluations/" + urllib.parse.quote(str(eval_id), safe="")
    return path if wait is None else "%s?wait=%.3f" % (path, wait)


def batches(records: Sequence[Record], max_batch: int, max_body: int) -> List[Tuple[int, List[Record]]]:
    """`records` cut into requests of at most `max_batch` records and about `max_body` bytes of
    JSON (a record larger than that alone goes alone): (index of the first, records)."""
    out: List[Tuple[int, List[Record]]] = []
    start, size, cur = 0, 2, []  # type: int, int, List[Record]
    for i, r in enumerate(records):
        n = len(encode(r) or b"") + 1
        if cur and (len(cur) >= max_batch or size + n > max_body):
            out.append((start, cur))
            start, size, cur = i, 2, []
        cur.append(r)
        size += n
    if cur:
        out.append((start, cur))
    return out


_AT = re.compile(r"\[(\d+)\]")


def shift_field(e: ServeError, offset: int) -> ServeError:
    """`e` with the index in its field (`[3].model_patch`) counted from the whole batch rather
    than from the request that carried part of it."""
    if offset and e.field:
        field = _AT.sub(lambda m: "[%d]" % (int(m.group(1)) + offset), e.field, count=1)
        if field != e.field:
            return type(e)(e.status, e.code, e.message, field, e.retry_after)
    return e


def as_list(accepted: Json, n: int) -> List[Dict[str, Any]]:
    """The evaluations a batch submission answered: a list of `n` objects with an `id`."""
    if (
        not isinstance(accepted, list)
        or len(accepted) != n
        or not all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in accepted)
    ):
        raise ProtocolError("a batch of %d was not answered with %d evaluations" % (n, n))
    return accepted


def waited(got: Json) -> Tuple[List[Dict[str, Any]], List[str]]:
    """(done, pending) of a `POST /v1/evaluations/wait` answer."""
    if not isinstance(got, dict) or not isinstance(got.get("done"), list) or not isinstance(got.get("pending"), list):
        raise ProtocolError("a wait was not answered with {done, pending}")
    return got["done"], got["pending"]


def chunks(ids: Sequence[str], n: int) -> List[List[str]]:
    return [list(ids[i : i + n]) for i in range(0, len(ids), n)]


def quick(asked: float, took: float) -> bool:
    """Whether a long poll came back not done well before the wait it asked for (a server
    shutting down answers at once): the next one then waits a little first."""
    return asked > 0.2 and took < asked / 2
