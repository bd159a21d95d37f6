"""When a request is tried again, and after how long: one rule for both clients."""

from __future__ import annotations

import asyncio
import email.utils
import http.client
import logging
import random
import ssl
import time
from dataclasses import dataclass
from typing import Callable, Optional

from ._errors import ProtocolError, RetriesExhausted, ServeError, describe

log = logging.getLogger("swe_eval_client")


@dataclass(frozen=True)
class RetryPolicy:
    """How a failing request is retried.

    Retried: connection errors (refused, reset, closed before or during the answer, an empty or
    garbled status line, a body cut short), an attempt that took longer than the client's
    `timeout`, HTTP 5xx and 429. Not retried: every other 4xx (400, 401, 404, 405, 413, ...),
    which raise `ServeError` at once.

    - `deadline`: seconds a failing request keeps being retried, counted from its first
      failure; then `RetriesExhausted` (attempts, time, last error). A server restarted within
      it is not noticed by the caller.
    - `backoff`, `backoff_max`: the wait before the n-th retry is `backoff * 2**(n-1)`, at most
      `backoff_max`, less a random part of up to `jitter` of it (so many clients spread out).
    - `retry_after_max`: a `Retry-After` the server sends is honoured up to this many seconds,
      plus up to a tenth of it at random (with `jitter` 0.5), so clients told the same time do
      not all come back at once.

    A wait never goes past the deadline: the last attempt is made at it.
    """

    deadline: float = 600.0
    backoff: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 60.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        for name in ("deadline", "backoff", "backoff_max", "retry_after_max"):
            if not getattr(self, name) >= 0:
                raise ValueError("RetryPolicy.%s must be 0 or more, not %r" % (name, getattr(self, name)))
        if not 0 <= self.jitter <= 1:
            raise ValueError("RetryPolicy.jitter must be from 0 to 1, not %r" % (self.jitter,))


def retriable(e: BaseException) -> bool:
    """Whether a failed attempt may be tried again."""
    if isinstance(e, ServeError):
        return e.status == 429 or 500 <= e.status <= 599
    if isinstance(e, ssl.SSLCertVerificationError):
        return False
    # OSError: refused, reset, broken pipe, timeouts (socket.timeout is one); HTTPException:
    # RemoteDisconnected, BadStatusLine, IncompleteRead, LineTooLong; asyncio's timeout is its
    # own class before Python 3.11.
    return isinstance(e, (ProtocolError, OSError, http.client.HTTPException, asyncio.TimeoutError, EOFError))


def retry_after_s(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """The seconds a `Retry-After` header asks for (a number, or an HTTP date), if it is one."""
    if value is None:
        return None
    value = value.strip()
    try:
        s = float(value)
        return s if s >= 0 and s == s and s != float("inf") else None
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None:
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


class Attempts:
    """The attempts of one request: `failed(e)` gives the wait before the next attempt, or
    raises (`e` itself when it is not retried, `RetriesExhausted` past the deadline)."""

    def __init__(
        self,
        policy: RetryPolicy,
        method: str,
        path: str,
        deadline: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self.method = method
        self.path = path
        self.deadline = policy.deadline if deadline is None else deadline
        if not self.deadline >= 0:
            raise ValueError("retry_deadline must be 0 or more, not %r" % (self.deadline,))
        self.clock = clock
        self.rand = rand
        self.count = 0
        self.first_failure: Optional[float] = None
        self.retries = 0

    def failed(self, e: BaseException, sent: bool = False) -> float:
        """The seconds to wait after attempt failure `e` (`sent`: the request may have reached
        the server, for the log)."""
        self.count += 1
        if not retriable(e):
            raise e
        now = self.clock()
        if self.first_failure is None:
            self.first_failure = now
        until = self.first_failure + self.deadline
        if now >= until:
            raise RetriesExhausted(self.method, self.path, self.count, now - self.first_failure, self.deadline, e) from e
        p = self.policy
        asked = retry_after_s(e.retry_after) if isinstance(e, ServeError) else None
        if asked is not None:
            wait = min(asked, p.retry_after_max) * (1.0 + 0.2 * p.jitter * self.rand())
        else:
            full = min(p.backoff_max, p.backoff * 2.0 ** min(self.retries, 60))
            wait = full * (1.0 - p.jitter * self.rand())
        self.retries += 1
        wait = max(0.0, min(wait, until - now))
        # A request's first failure is a warning (a full queue only information); its later
        # ones are information: many waits on one server going away say it once each.
        level = logging.INFO if self.count > 1 or (isinstance(e, ServeError) and e.status == 429) else logging.WARNING
        log.log(
            level,
            "%s %s: %s%s; attempt %d failed, retrying in %.2f s (retry deadline %.0f s from the first failure)",
            self.method,
            self.path,
            describe(e),
            " after the request was sent (a submission sent again is answered from the server's cache or its running job)"
            if sent and self.method == "POST"
            else "",
            self.count,
            wait,
            self.deadline,
        )
        return wait
