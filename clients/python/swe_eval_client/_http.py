"""Reading one HTTP/1.x answer from an asyncio stream: the status line, the headers, and a
body sized by `Content-Length`, sent in chunks, or running to the end of the connection.
Anything else raises `ProtocolError`, never an IndexError or ValueError."""

from __future__ import annotations

import asyncio
import re
from typing import Dict, NamedTuple

from ._errors import ProtocolError

_STATUS = re.compile(rb"HTTP/(\d)\.(\d) ([1-9]\d\d)(?:[ \t][^\r\n]*)?\r?\n\Z")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}\Z")
_MAX_HEADERS = 200
_MAX_HEAD_BYTES = 256 << 10
# Far beyond anything the server sends (its largest answers are batches of evaluations).
_MAX_BODY = 1 << 30


class NoAnswer(ProtocolError):
    """The connection closed before any byte of an answer."""


class Answer(NamedTuple):
    """One answer: status, headers (lower-case names; repeated ones joined by `, `), body, and
    whether the connection may carry another request."""

    status: int
    headers: Dict[str, str]
    body: bytes
    keep_alive: bool


async def _line(reader: asyncio.StreamReader, what: str) -> bytes:
    try:
        return await reader.readline()
    except (asyncio.LimitOverrunError, ValueError) as e:
        raise ProtocolError("%s longer than the reader's limit: %s" % (what, e)) from e


async def read_answer(reader: asyncio.StreamReader, method: str) -> Answer:
    """Reads one answer to a `method` request (1xx interim answers are skipped)."""
    while True:
        line = await _line(reader, "status line")
        if not line:
            raise NoAnswer("the connection closed before an answer (empty status line)")
        m = _STATUS.match(line)
        if m is None:
            raise ProtocolError("garbled status line %r" % (line[:100],))
        version = (int(m.group(1)), int(m.group(2)))
        status = int(m.group(3))
        headers = await _headers(reader)
        if 100 <= status <= 199 and status != 101:
            continue
        break
    if status == 101:
        raise ProtocolError("unexpected 101 Switching Protocols")
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep_alive = "close" not in tokens and (version >= (1, 1) or "keep-alive" in tokens)
    if method == "HEAD" or status in (204, 304):
        return Answer(status, headers, b"", keep_alive)
    coding = headers.get("transfer-encoding")
    if coding is not None:
        codings = [c.strip().lower() for c in coding.split(",") if c.strip()]
        if not codings or codings[-1] != "chunked":
            # Only the end of the connection delimits such a body (RFC 9112, 6.3).
            body = await _to_end(reader)
            return Answer(status, headers, body, False)
        if codings != ["chunked"]:
            raise ProtocolError("unsupported transfer coding %r" % (coding,))
        return Answer(status, headers, await _chunked(reader), keep_alive)
    length = headers.get("content-length")
    if length is not None:
        values = {v.strip() for v in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ProtocolError("bad Content-Length %r" % (length,))
        n = int(next(iter(values)))
        if n > _MAX_BODY:
            raise ProtocolError("a body of %d bytes is larger than %d" % (n, _MAX_BODY))
        return Answer(status, headers, await _exactly(reader, n, "body"), keep_alive)
    return Answer(status, headers, await _to_end(reader), False)


async def _headers(reader: asyncio.StreamReader) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    last = None
    size = 0
    for _ in range(_MAX_HEADERS + 1):
        line = await _line(reader, "header line")
        size += len(line)
        if size > _MAX_HEAD_BYTES:
            raise ProtocolError("headers longer than %d bytes" % _MAX_HEAD_BYTES)
        if not line:
            raise ProtocolError("the connection closed in the middle of the headers")
        if line in (b"\r\n", b"\n"):
            return headers
        text = line.decode("latin-1").rstrip("\r\n")
        if text[:1] in (" ", "\t"):
            # An obsolete folded line continues the header before it.
            if last is None:
                raise ProtocolError("a folded header line with no header before it")
            headers[last] += " " + text.strip()
            continue
        name, colon, value = text.partition(":")
        name = name.strip().lower()
        if not colon or not name:
            raise ProtocolError("garbled header line %r" % (line[:100],))
        value = value.strip()
        headers[name] = headers[name] + ", " + value if name in headers else value
        last = name
    raise ProtocolError("more than %d header lines" % _MAX_HEADERS)


async def _exactly(reader: asyncio.StreamReader, n: int, what: str) -> bytes:
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError as e:
        raise ProtocolError("%s cut short: %d of %d bytes" % (what, len(e.partial), n)) from e


async def _to_end(reader: asyncio.StreamReader) -> bytes:
    body = await reader.read(_MAX_BODY + 1)
    rest = body
    while rest and len(body) <= _MAX_BODY:
        rest = await reader.read(_MAX_BODY + 1 - len(body))
        body += rest
    if len(body) > _MAX_BODY:
        raise ProtocolError("a body larger than %d bytes" % _MAX_BODY)
    return body


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    total = 0
    while True:
        line = await _line(reader, "chunk size line")
        if not line:
            raise ProtocolError("the connection closed in the middle of a chunked body")
        size = line.split(b";", 1)[0].strip()
        if not _HEX.match(size):
            raise ProtocolError("garbled chunk size line %r" % (line[:100],))
        n = int(size, 16)
        if n == 0:
            break
        total += n
        if total > _MAX_BODY:
            raise ProtocolError("a body larger than %d bytes" % _MAX_BODY)
        parts.append(await _exactly(reader, n, "chunk"))
        end = await _line(reader, "chunk end")
        if end not in (b"\r\n", b"\n"):
            raise ProtocolError("a chunk not followed by its line end: %r" % (end[:100],))
    # Trailer fields, up to the blank line.
    for _ in range(_MAX_HEADERS + 1):
        line = await _line(reader, "trailer line")
        if not line:
            raise ProtocolError("the connection closed in the middle of the trailers")
        if line in (b"\r\n", b"\n"):
            return b"".join(parts)
    raise ProtocolError("more than %d trailer lines" % _MAX_HEADERS)
