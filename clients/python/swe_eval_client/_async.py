"""The asyncio client (asyncio streams, HTTP/1.1 with kept-alive connections)."""

from __future__ import annotations

import asyncio
import ssl
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
from ._http import Answer, NoAnswer, read_answer
from ._retry import Attempts, RetryPolicy

Conn = Tuple[asyncio.StreamReader, asyncio.StreamWriter]
# Errors of a kept-alive connection the server closed while idle: the request is sent again at
# once on a new connection (not counted as a failed attempt).
_STALE = (NoAnswer, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
# Idle connections kept for later calls.
_IDLE_MAX = 32


def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except Exception:  # its loop may be closed already
        pass


class AsyncClient:
    """An asyncio client of `swe-eval serve`: the same methods and settings as `Client`, to be
    awaited. Connections are kept alive and reused within one event loop (a client used from
    another loop starts new ones); `await aclose()` (or `async with`) closes the idle ones."""

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
        self._idle: List[Conn] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    @property
    def url(self) -> str:
        return self.settings.url

    # The transport.

    async def aclose(self) -> None:
        """Closes the idle connections."""
        idle, self._idle = self._idle, []
        for _, w in idle:
            _close(w)

    def __del__(self) -> None:
        # Idle connections of a client never closed: closed with it, not left to the collector.
        for _, w in getattr(self, "_idle", ()):
            _close(w)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _connection(self) -> Tuple[Conn, bool]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            for _, w in self._idle:
                _close(w)
            self._idle, self._loop = [], loop
        while self._idle:
            r, w = self._idle.pop()
            if not r.at_eof() and not w.is_closing():
                return (r, w), True
            _close(w)
        s = self.settings
        ctx = ssl.create_default_context() if s.https else None
        r, w = await asyncio.open_connection(s.host, s.port, ssl=ctx)
        return (r, w), False

    async def _exchange(self, method: str, path: str, data: Optional[bytes]) -> Answer:
        """Sends the request and reads its answer; a kept-alive connection found closed before
        any answer is replaced once at once."""
        s = self.settings
        host = "[%s]" % s.host if ":" in s.host else s.host
        head = ["%s %s HTTP/1.1" % (method, s.prefix + path), "Host: %s:%d" % (host, s.port)]
        head += ["%s: %s" % kv for kv in s.headers(data is not None).items()]
        if data is not None:
            head.append("Content-Length: %d" % len(data))
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (data or b"")
        for _ in range(2):
            (reader, writer), reused = await self._connection()
            try:
                writer.write(message)
                await writer.drain()
                answer = await read_answer(reader, method)
            except BaseException as e:
                _close(writer)
                if reused and isinstance(e, _STALE):
                    continue
                raise
            if answer.keep_alive and len(self._idle) < _IDLE_MAX:
                self._idle.append((reader, writer))
            else:
                _close(writer)
            return answer
        raise AssertionError("unreachable")

    async def _call(
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
                a = await asyncio.wait_for(self._exchange(method, path, data), self.settings.timeout + wait)
                return decode(a.status, a.body, a.headers.get("retry-after"))
            except Exception as e:
                await asyncio.sleep(attempts.failed(e, sent=not isinstance(e, (ConnectionRefusedError, ServeError))))

    # The API (see Client for each method).

    async def submit(self, instance_id: str, model_patch: Optional[str], retry_deadline: Optional[float] = None, **kw: Any) -> Dict[str, Any]:
        """See Client.submit."""
        return await self._call("POST", "/v1/evaluations", record(instance_id, model_patch, **kw), retry_deadline=retry_deadline)  # type: ignore[no-any-return]

    async def submit_many(self, records: Iterable[Record], retry_deadline: Optional[float] = None) -> List[Dict[str, Any]]:
        """See Client.submit_many."""
        records = list(records)
        out: List[Dict[str, Any]] = []
        for start, part in batches(records, self.settings.max_batch, self.settings.max_body):
            try:
                got = await self._call("POST", "/v1/evaluations", part, retry_deadline=retry_deadline)
            except ServeError as e:
                raise shift_field(e, start) from None
            out.extend(as_list(got, len(part)))
        return out

    async def get(self, eval_id: str, retry_deadline: Optional[float] = None) -> Dict[str, Any]:
        """See Client.get."""
        return await self._call("GET", eval_path(eval_id), retry_deadline=retry_deadline)  # type: ignore[no-any-return]

    async def wait(self, eval_id: str, timeout: Optional[float] = None, retry_deadline: Optional[float] = None) -> Dict[str, Any]:
        """See Client.wait."""
        loop = asyncio.get_running_loop()
        until = None if timeout is None else loop.time() + timeout
        pause = 0.05
        while True:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - loop.time()))
            t0 = loop.time()
            e = await self._call("GET", eval_path(eval_id, left), wait=left, retry_deadline=retry_deadline)
            if e.get("state") == "done" or (until is not None and loop.time() >= until):
                return e  # type: ignore[no-any-return]
            if quick(left, loop.time() - t0):
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)

    async def wait_many(self, ids: Iterable[str], timeout: float = 0.0, retry_deadline: Optional[float] = None) -> Dict[str, List[Any]]:
        """See Client.wait_many."""
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout
        done: List[Dict[str, Any]] = []
        pending: List[str] = []
        for part in chunks(list(ids), self.settings.max_batch):
            left = max(0.0, until - loop.time())
            got = await self._call("POST", "/v1/evaluations/wait", {"ids": part, "timeout_s": left}, wait=left, retry_deadline=retry_deadline)
            d, p = waited(got)
            done.extend(d)
            pending.extend(p)
        return {"done": done, "pending": pending}

    async def evaluate(self, instance_id: str, model_patch: Optional[str], timeout: Optional[float] = None, retry_deadline: Optional[float] = None, **kw: Any) -> Dict[str, Any]:
        """See Client.evaluate."""
        e = await self.submit(instance_id, model_patch, retry_deadline=retry_deadline, **kw)
        return e if e.get("state") == "done" else await self.wait(e["id"], timeout, retry_deadline)

    async def evaluate_batch(self, records: Iterable[Record], timeout: Optional[float] = None, retry_deadline: Optional[float] = None) -> List[Dict[str, Any]]:
        """See Client.evaluate_batch."""
        loop = asyncio.get_running_loop()
        accepted = await self.submit_many(records, retry_deadline)
        by_id = {e["id"]: e for e in accepted}
        until = None if timeout is None else loop.time() + timeout
        pending = [e["id"] for e in accepted if e.get("state") != "done"]
        pause = 0.05
        while pending:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - loop.time()))
            t0 = loop.time()
            got = await self.wait_many(pending, left, retry_deadline)
            for e in got["done"]:
                by_id[e["id"]] = e
            pending = got["pending"]
            if until is not None and loop.time() >= until:
                break
            if pending and quick(left, loop.time() - t0):
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)
        return [by_id[e["id"]] for e in accepted]

    async def health(self, retry_deadline: float = 0.0) -> Dict[str, Any]:
        """See Client.health."""
        attempts = Attempts(self.settings.retry, "GET", "/v1/health", retry_deadline)
        while True:
            try:
                a = await asyncio.wait_for(self._exchange("GET", "/v1/health", None), self.settings.timeout)
            except Exception as e:
                await asyncio.sleep(attempts.failed(e))
                continue
            return decode(a.status, a.body, a.headers.get("retry-after"))  # type: ignore[no-any-return]
