"""A stand-in for `swe-eval serve` on loopback, standard library only (threads and sockets),
that misbehaves on request: refuses connections (not listening), closes a connection with no
answer or in the middle of one, answers a garbled status line, hangs, answers 5xx, 429 (with or
without Retry-After) or 4xx, goes away and comes back on the same port. Its evaluations outlive
a restart (as the real server's do), and it keeps the real server's content rule: the same
(instance, patch) runs one job, later ones join it or are answered from the cache; `runs`
counts the jobs per content.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

Fault = Tuple[Any, ...]


class FakeServe:
    def __init__(self, done_after: float = 0.0, send_score: bool = True) -> None:
        self.lock = threading.RLock()
        # Evaluations by id, kept across stop() and start() as the real server keeps them.
        self.evals: Dict[str, Dict[str, Any]] = {}
        self.cache: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.flights: Dict[Tuple[str, str], Tuple[float, List[str]]] = {}
        self.runs: Counter = Counter()
        # Outcomes to give by (instance, patch); others are unresolved.
        self.verdicts: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.done_after = done_after
        self.send_score = send_score
        self.max_batch = 4096
        self.max_patch = 1 << 20
        self.faults: List[List[Any]] = []
        # (time, method, path) of every request read.
        self.requests: List[Tuple[float, str, str]] = []
        self.seq = 0
        self.port = 0
        self.listener: Optional[socket.socket] = None
        self.conns: set = set()
        self.generation = 0
        self.start()

    # Listening.

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self) -> None:
        """Listens (on the same port as before, after a stop)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        # A short timeout, so the accept loop sees a stop() soon (closing a socket does not
        # wake a thread blocked in accept on Linux).
        s.settimeout(0.05)
        self.port = s.getsockname()[1]
        with self.lock:
            self.listener = s
            self.generation += 1
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def stop(self) -> None:
        """Goes away: stops listening (connections are refused) and drops every connection."""
        with self.lock:
            s, self.listener = self.listener, None
            conns, self.conns = self.conns, set()
            self.generation += 1
        if s is not None:
            s.close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def come_back_in(self, seconds: float) -> None:
        t = threading.Timer(seconds, self.start)
        t.daemon = True
        t.start()

    def close(self) -> None:
        self.stop()

    def fault(self, method: str, path: str, *action: Any, times: int = 1) -> None:
        """The next `times` requests of `method` on `path` (a path ending in / is a prefix) get `action`:
        ("drop",) close with no answer; ("garbage", bytes) send bytes and close; ("cut",) half
        an answer and close; ("hang", s) wait s seconds and close; ("status", code, body,
        headers) that answer; ("accept_then_drop",) do the request, then close with no answer;
        ("away", s) go away (the connection dropped) and come back after s seconds;
        ("chunked",), ("to_end",) answer in chunks, or delimited by the end of the connection;
        ("then_close",) answer as if kept alive, then close the connection."""
        self.faults.append([method, path, action, times])

    def requests_of(self, method: str, path: str) -> List[float]:
        """When each request of `method` on `path` came (a path ending in / is a prefix)."""
        return [t for t, m, p in self.requests if m == method and _matches(p.split("?", 1)[0], path)]

    def _fault_for(self, method: str, path: str) -> Optional[Fault]:
        with self.lock:
            for f in self.faults:
                if f[0] == method and _matches(path, f[1]) and f[3] > 0:
                    f[3] -= 1
                    return f[2]  # type: ignore[no-any-return]
        return None

    def _accept(self, s: socket.socket) -> None:
        while True:
            with self.lock:
                if self.listener is not s:
                    return
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            with self.lock:
                if self.listener is not s:
                    c.close()
                    return
                self.conns.add(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    # One connection.

    def _serve(self, c: socket.socket) -> None:
        f = c.makefile("rb")
        try:
            while True:
                req = _read_request(f)
                if req is None:
                    return
                method, target, headers, body = req
                path = target.split("?", 1)[0]
                with self.lock:
                    self.requests.append((time.monotonic(), method, target))
                action = self._fault_for(method, path)
                close = headers.get("connection", "").lower() == "close"
                if action is None or action[0] in ("chunked", "to_end", "then_close"):
                    status, extra, payload = self._route(method, target, body)
                    kind = action[0] if action else None
                    c.sendall(_answer(status, extra, payload, kind, close))
                    if close or kind in ("to_end", "then_close"):
                        return
                    continue
                kind = action[0]
                if kind == "drop":
                    return
                if kind == "garbage":
                    c.sendall(action[1])
                    return
                if kind == "cut":
                    _, _, payload = self._route(method, target, body)
                    whole = _answer(200, {}, payload + b" " * 100, None, False)
                    c.sendall(whole[: len(whole) - 60])
                    return
                if kind == "hang":
                    time.sleep(action[1])
                    return
                if kind == "status":
                    code, obj, extra = action[1], action[2], action[3] if len(action) > 3 else {}
                    c.sendall(_answer(code, extra, json.dumps(obj).encode(), None, close))
                    if close:
                        return
                    continue
                if kind == "accept_then_drop":
                    self._route(method, target, body)
                    return
                if kind == "away":
                    self.stop()
                    self.come_back_in(action[1])
                    return
                raise AssertionError("unknown fault %r" % (action,))
        except OSError:
            return
        finally:
            with self.lock:
                self.conns.discard(c)
            try:
                f.close()
                c.close()
            except OSError:
                pass

    # The evaluator.

    def _settle(self) -> None:
        now = time.monotonic()
        with self.lock:
            for key, (at, members) in list(self.flights.items()):
                if now >= at:
                    del self.flights[key]
                    outcome = self._outcome(key)
                    if not outcome["mask"]:
                        self.cache[key] = outcome
                    for i, id_ in enumerate(members):
                        self.evals[id_].update(outcome, state="done", cached=i > 0)

    def _outcome(self, key: Tuple[str, str]) -> Dict[str, Any]:
        o = {
            "status": "unresolved",
            "mask": False,
            "resolved": False,
            "strict_status": "unresolved",
            "strict_resolved": False,
            "reason": None,
            "score": 0.0,
            "graded_by": "strict",
            "objections": [],
        }
        o.update(self.verdicts.get(key, {}))
        if not self.send_score:
            for k in ("score", "graded_by", "objections"):
                o.pop(k, None)
        return o

    def _route(self, method: str, target: str, body: bytes) -> Tuple[int, Dict[str, str], bytes]:
        u = urllib.parse.urlsplit(target)
        q = urllib.parse.parse_qs(u.query)
        try:
            if method == "POST" and u.path == "/v1/evaluations":
                return self._submit(json.loads(body))
            if method == "POST" and u.path == "/v1/evaluations/wait":
                obj = json.loads(body)
                got = self._wait(obj["ids"], float(obj.get("timeout_s") or 0))
                if isinstance(got, tuple):
                    return got
                done = [e for e in got if e["state"] == "done"]
                pending = [e["id"] for e in got if e["state"] != "done"]
                return 200, {}, json.dumps({"done": done, "pending": pending}).encode()
            if method == "GET" and u.path.startswith("/v1/evaluations/"):
                id_ = urllib.parse.unquote(u.path[len("/v1/evaluations/") :])
                got = self._wait([id_], float(q.get("wait", ["0"])[0]))
                return got if isinstance(got, tuple) else (200, {}, json.dumps(got[0]).encode())
            if method == "GET" and u.path == "/v1/health":
                return 200, {}, json.dumps({"accepting": True, "dispatching": True}).encode()
        except (ValueError, KeyError, TypeError) as e:
            return _refusal(400, "bad_request", "bad body: %s" % e, None)
        return _refusal(404, "not_found", "no endpoint %s" % u.path, None)

    def _submit(self, value: Any) -> Tuple[int, Dict[str, str], bytes]:
        items = value if isinstance(value, list) else [value]
        if len(items) > self.max_batch:
            return _refusal(413, "too_large", "%d predictions in one batch" % len(items), None)
        at = lambda i, f: ("[%d].%s" % (i, f)) if isinstance(value, list) else f  # noqa: E731
        for i, r in enumerate(items):
            if not str(r.get("instance_id", "")).count("__"):
                return _refusal(400, "bad_request", "not an instance of the server's dataset", at(i, "instance_id"))
            if len(r.get("model_patch") or "") > self.max_patch:
                return _refusal(413, "too_large", "patch too large", at(i, "model_patch"))
        ids = []
        with self.lock:
            self._settle()
            for r in items:
                self.seq += 1
                id_ = "e%d" % self.seq
                patch = r.get("model_patch") or ""
                key = (r["instance_id"], patch)
                e = {
                    "id": id_,
                    "instance_id": r["instance_id"],
                    "model_name_or_path": r.get("model_name_or_path") or "serve",
                    "sample": r.get("sample") or 0,
                    "state": "queued",
                    "similarity": 0.5,
                    "reward": 0.5,
                    "format": "ok",
                    "execute": r.get("execute", True),
                    "cached": False,
                }
                self.evals[id_] = e
                ids.append(id_)
                if not patch.strip():
                    e.update(self._outcome(key), status="empty", strict_status="empty", state="done")
                elif key in self.cache:
                    e.update(self.cache[key], state="done", cached=True)
                elif key in self.flights:
                    self.flights[key][1].append(id_)
                else:
                    self.runs[key] += 1
                    self.flights[key] = (time.monotonic() + self.done_after, [id_])
            self._settle()
            out = [dict(self.evals[i]) for i in ids]
        return 200, {}, json.dumps(out if isinstance(value, list) else out[0]).encode()

    def _wait(self, ids: List[str], wait: float) -> Any:
        gen = self.generation
        until = time.monotonic() + min(wait, 30.0)
        while True:
            with self.lock:
                self._settle()
                missing = [i for i in ids if i not in self.evals]
                if missing:
                    return _refusal(404, "not_found", "no evaluation %s" % missing[0], None)
                got = [dict(self.evals[i]) for i in ids]
                if self.generation != gen:
                    return got
            if all(e["state"] == "done" for e in got) or time.monotonic() >= until:
                return got
            time.sleep(0.01)


def _matches(path: str, pattern: str) -> bool:
    return path.startswith(pattern) if pattern.endswith("/") else path == pattern


def _refusal(status: int, code: str, message: str, field: Optional[str]) -> Tuple[int, Dict[str, str], bytes]:
    return status, {}, json.dumps({"code": code, "message": message, "field": field}).encode()


def _read_request(f: Any) -> Optional[Tuple[str, str, Dict[str, str], bytes]]:
    line = f.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = {}
    while True:
        h = f.readline()
        if not h:
            return None
        if h in (b"\r\n", b"\n"):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    body = f.read(n) if n else b""
    return method, target, headers, body


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large", 429: "Too Many Requests"}


def _answer(status: int, extra: Dict[str, str], payload: bytes, kind: Optional[str], close: bool) -> bytes:
    head = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Whatever")), "Content-Type: application/json"]
    head += ["%s: %s" % kv for kv in extra.items()]
    if kind == "chunked":
        head.append("Transfer-Encoding: chunked")
        mid = len(payload) // 2
        body = b""
        for part in (payload[:mid], payload[mid:]):
            if part:
                body += b"%x;ext=1\r\n%s\r\n" % (len(part), part)
        body += b"0\r\nX-Trailer: 1\r\n\r\n"
    elif kind == "to_end":
        head.append("Connection: close")
        body = payload
    else:
        head.append("Content-Length: %d" % len(payload))
        body = payload
    if close and kind != "to_end":
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def free_port() -> int:
    """A port nothing listens on (bound and let go)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)

