"""The synchronous client (http.client, one keep-alive connection per thread)."""

from __future__ import annotations

import http.client
import ssl
import threading
import time
import weakref
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ._common import (
    POLL_S,
    SERVER_MAX_BODY,
    Json,
    Record,
    Settings,
    as_list,
    batches,
    chunks,
    decode,
    encode,
    eval_path,
    quick,
    record,
    shift_field,
    waited,
)
from ._errors import ServeError
from ._retry import Attempts, RetryPolicy

# Errors of a kept-alive connection the server closed while idle: the request is sent again at
# once on a new connection (not counted as a failed attempt).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class _Held:
    """A thread's connection, closed when the thread ends (its thread-local goes)."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn

    def __del__(self) -> None:
        self.conn.close()


class Client:
    """A synchronous client of `swe-eval serve` (safe to share between threads: each thread
    keeps its own connection).

    - `url`: the server (default `$SWE_EVAL_URL`, else http://127.0.0.1:8321); `token`: its
      bearer token (default `$SWE_EVAL_TOKEN`).
    - `timeout`: seconds one attempt may take (a long poll adds the wait it asks for); an
      attempt that takes longer is retried.
    - `retry`: a `RetryPolicy`; `retry_deadline` overrides its `deadline` (seconds a failing
      request keeps being retried from its first failure). Every method takes
      `retry_deadline=` for itself too.
    - `max_batch`, `max_body`: a batch is sent in requests of at most this many predictions and
      about this many bytes (the server's bounds are 4096 and 64 MiB).
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 60.0,
        retry: Optional[RetryPolicy] = None,
        retry_deadline: Optional[float] = None,
        max_batch: int = 4096,
        max_body: int = SERVER_MAX_BODY // 2,
    ) -> None:
        self.settings = Settings(url, token, timeout, retry, retry_deadline, max_batch, max_body)
        self._local = threading.local()
        self._lock = threading.Lock()
        # Every thread's connection, to close them all (a thread that ends lets go of its own).
        self._conns: "weakref.WeakSet[http.client.HTTPConnection]" = weakref.WeakSet()

    @property
    def url(self) -> str:
        return self.settings.url

    # The transport.

    def close(self) -> None:
        """Closes the connections of every thread (a later call opens a new one)."""
        with self._lock:
            conns, self._conns = list(self._conns), weakref.WeakSet()
        for conn in conns:
            conn.close()

    def _drop(self) -> None:
        """Closes this thread's connection."""
        held = getattr(self._local, "held", None)
        conn = held.conn if held is not None else None
        if conn is not None:
            conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _connection(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        held = getattr(self._local, "held", None)
        conn: Optional[http.client.HTTPConnection] = held.conn if held is not None else None
        reused = conn is not None and conn.sock is not None
        if conn is None:
            s = self.settings
            if s.https:
                conn = http.client.HTTPSConnection(s.host, s.port, timeout=timeout, context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(s.host, s.port, timeout=timeout)
            self._local.held = _Held(conn)
        if conn.sock is None:
            # About to connect (again, after a close): close() closes it too.
            with self._lock:
                self._conns.add(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, reused

    def _once(self, method: str, path: str, data: Optional[bytes], timeout: float) -> Tuple[int, Optional[str], bytes]:
        """One attempt: (status, Retry-After, body). A kept-alive connection found closed is
        replaced once at once."""
        for _ in range(2):
            conn, reused = self._connection(timeout)
            try:
                conn.request(method, self.settings.prefix + path, body=data, headers=self.settings.headers(data is not None))
                resp = conn.getresponse()
                body = resp.read()
            except BaseException as e:
                self._drop()
                if reused and isinstance(e, _STALE):
                    continue
                raise
            if resp.will_close:
                self._drop()
            return resp.status, resp.getheader("Retry-After"), body
        raise AssertionError("unreachable")

    def _call(
        self,
        method: str,
        path: str,
        body: Optional[Json] = None,
        wait: float = 0.0,
        retry_deadline: Optional[float] = None,
    ) -> Json:
        """One request, retried by the policy; its JSON answer."""
        data = encode(body)
        attempts = Attempts(self.settings.retry, method, path, retry_deadline)
        while True:
            try:
                status, retry_after, raw = self._once(method, path, data, self.settings.timeout + wait)
                return decode(status, raw, retry_after)
            except Exception as e:
                time.sleep(attempts.failed(e, sent=not isinstance(e, (ConnectionRefusedError, ServeError))))

    # The API.

    def submit(self, instance_id: str, model_patch: Optional[str], retry_deadline: Optional[float] = None, **kw: Any) -> Dict[str, Any]:
        """Sends one prediction (`model_name_or_path`, `sample`, `deadline_s`, `execute` as
        keywords); returns its evaluation at once (`state` queued, or done)."""
        return self._call("POST", "/v1/evaluations", record(instance_id, model_patch, **kw), retry_deadline=retry_deadline)  # type: ignore[no-any-return]

    def submit_many(self, records: Iterable[Record], retry_deadline: Optional[float] = None) -> List[Dict[str, Any]]:
        """Sends prediction records (dicts), in as few requests as the bounds allow; returns
        their evaluations in order. A refusal names the field by its index in `records`."""
        records = list(records)
        out: List[Dict[str, Any]] = []
        for start, part in batches(records, self.settings.max_batch, self.settings.max_body):
            try:
                got = self._call("POST", "/v1/evaluations", part, retry_deadline=retry_deadline)
            except ServeError as e:
                raise shift_field(e, start) from None
            out.extend(as_list(got, len(part)))
        return out

    def get(self, eval_id: str, retry_deadline: Optional[float] = None) -> Dict[str, Any]:
        """The evaluation as it stands."""
        return self._call("GET", eval_path(eval_id), retry_deadline=retry_deadline)  # type: ignore[no-any-return]

    def wait(self, eval_id: str, timeout: Optional[float] = None, retry_deadline: Optional[float] = None) -> Dict[str, Any]:
        """The evaluation once done, or as it stands when `timeout` seconds have passed (None:
        no limit). Long polls; the server going away and coming back in between is retried."""
        until = None if timeout is None else time.monotonic() + timeout
        pause = 0.05
        while True:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
            t0 = time.monotonic()
            e = self._call("GET", eval_path(eval_id, left), wait=left, retry_deadline=retry_deadline)
            if e.get("state") == "done" or (until is not None and time.monotonic() >= until):
                return e  # type: ignore[no-any-return]
            if quick(left, time.monotonic() - t0):
                time.sleep(pause)
                pause = min(2.0, pause * 2)

    def wait_many(self, ids: Iterable[str], timeout: float = 0.0, retry_deadline: Optional[float] = None) -> Dict[str, List[Any]]:
        """{"done": [evaluations], "pending": [ids]} after at most `timeout` seconds."""
        until = time.monotonic() + timeout
        done: List[Dict[str, Any]] = []
        pending: List[str] = []
        for part in chunks(list(ids), self.settings.max_batch):
            left = max(0.0, until - time.monotonic())
            got = self._call("POST", "/v1/evaluations/wait", {"ids": part, "timeout_s": left}, wait=left, retry_deadline=retry_deadline)
            d, p = waited(got)
            done.extend(d)
            pending.extend(p)
        return {"done": done, "pending": pending}

    def evaluate(self, instance_id: str, model_patch: Optional[str], timeout: Optional[float] = None, retry_deadline: Optional[float] = None, **kw: Any) -> Dict[str, Any]:
        """Submits one prediction and waits for its result (as it stands after `timeout`)."""
        e = self.submit(instance_id, model_patch, retry_deadline=retry_deadline, **kw)
        return e if e.get("state") == "done" else self.wait(e["id"], timeout, retry_deadline)

    def evaluate_batch(self, records: Iterable[Record], timeout: Optional[float] = None, retry_deadline: Optional[float] = None) -> List[Dict[str, Any]]:
        """Submits a batch and waits for every result (those not done by `timeout` are returned
        as they stand); results in the order of `records`."""
        accepted = self.submit_many(records, retry_deadline)
        by_id = {e["id"]: e for e in accepted}
        until = None if timeout is None else time.monotonic() + timeout
        pending = [e["id"] for e in accepted if e.get("state") != "done"]
        pause = 0.05
        while pending:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
            t0 = time.monotonic()
            got = self.wait_many(pending, left, retry_deadline)
            for e in got["done"]:
                by_id[e["id"]] = e
            pending = got["pending"]
            if until is not None and time.monotonic() >= until:
                break
            if pending and quick(left, time.monotonic() - t0):
                time.sleep(pause)
                pause = min(2.0, pause * 2)
        return [by_id[e["id"]] for e in accepted]

    def health(self, retry_deadline: float = 0.0) -> Dict[str, Any]:
        """The server's health; raises ServeError 503 when it cannot evaluate. Tried once unless
        `retry_deadline` says otherwise (a 503 here is the answer, so it is never retried)."""
        attempts = Attempts(self.settings.retry, "GET", "/v1/health", retry_deadline)
        while True:
            try:
                status, retry_after, raw = self._once("GET", "/v1/health", None, self.settings.timeout)
            except Exception as e:
                time.sleep(attempts.failed(e))
                continue
            return decode(status, raw, retry_after)  # type: ignore[no-any-return]
