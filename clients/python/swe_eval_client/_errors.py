"""What the clients raise."""

from __future__ import annotations

import json
from typing import Optional


class ClientError(Exception):
    """Everything this package raises about talking to the server."""


class ServeError(ClientError):
    """An error answer: HTTP `status`, and the server's `code`, `message` and `field`
    (`retry_after`: the seconds the server asked to wait, for 429 and some 503)."""

    def __init__(
        self,
        status: int,
        code: Optional[str],
        message: Optional[str],
        field: Optional[str] = None,
        retry_after: Optional[str] = None,
    ) -> None:
        super().__init__(
            "%s %s: %s%s" % (status, code, message, " (field %s)" % field if field else "")
        )
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after


class ProtocolError(ClientError):
    """A reply that is not the HTTP/JSON the server speaks: an empty or garbled status line, a
    body cut short, a 2xx body that is not JSON. Retried like a dropped connection."""


class RetriesExhausted(ClientError):
    """A request kept failing (connection errors, 5xx, 429) until its retry deadline: what was
    sent, how many `attempts` over how many seconds (`elapsed`), and the `last` error."""

    def __init__(
        self, method: str, path: str, attempts: int, elapsed: float, deadline: float, last: BaseException
    ) -> None:
        super().__init__(
            "%s %s: gave up after %d attempt%s over %.1f s (retry deadline %.1f s); last error: %s"
            % (method, _short(path), attempts, "" if attempts == 1 else "s", elapsed, deadline, describe(last))
        )
        self.method = method
        self.path = path
        self.attempts = attempts
        self.elapsed = elapsed
        self.deadline = deadline
        self.last = last

    @property
    def status(self) -> Optional[int]:
        """The HTTP status of the last answer, when the last error was one."""
        return self.last.status if isinstance(self.last, ServeError) else None


def describe(e: BaseException) -> str:
    """`Type: message`, for error texts."""
    text = str(e)
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


def _short(path: str) -> str:
    return path if len(path) <= 120 else path[:117] + "..."


def error_of(status: int, body: bytes, retry_after: Optional[str] = None) -> ServeError:
    """The ServeError of an error answer (the server's JSON `{code, message, field}`, or the
    start of whatever else came)."""
    try:
        e = json.loads(body.decode("utf-8"))
        if isinstance(e, dict):
            return ServeError(status, e.get("code"), e.get("message"), e.get("field"), retry_after)
    except ValueError:
        pass
    return ServeError(status, "http", body[:200].decode("utf-8", "replace"), None, retry_after)
