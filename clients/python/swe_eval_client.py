"""Client for `swe-eval serve`: executed SWE-bench rewards for training loops.

Standard library only (Python 3.8+); copy this file next to your trainer. Synchronous
(`Client`) and asyncio (`AsyncClient`) clients, and `compute_score`, shaped like verl's
reward functions.

    from swe_eval_client import Client
    c = Client()                                  # http://127.0.0.1:8321, or $SWE_EVAL_URL
    r = c.evaluate("swe-eval-mini__calc-1", patch)
    r["status"], r["mask"], r["similarity"]       # 'resolved', False, 0.97

Every result carries `status` (resolved, unresolved, patch_failed, empty, timeout,
infra_error) and `mask`: true where the infrastructure, not the patch, decided (drop the
sample rather than scoring it 0). `similarity` and `reward` (the SWE-RL similarity reward) are
in the first answer already; the rest once the tests ran. Errors raise `ServeError` with the
server's `code`, `message` and `field`; a full queue (429) is retried after `Retry-After`.
"""

import asyncio
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "AsyncClient", "ServeError", "compute_score", "compute_score_async"]

DEFAULT_URL = "http://127.0.0.1:8321"
# A long poll asks the server to wait at most this long per request.
POLL_S = 30.0


class ServeError(Exception):
    """An error answer: HTTP `status`, and the server's `code`, `message` and `field`."""

    def __init__(self, status, code, message, field=None, retry_after=None):
        super().__init__("%s %s: %s%s" % (status, code, message, " (field %s)" % field if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after


def _record(instance_id, model_patch, model_name_or_path=None, sample=None, deadline_s=None, execute=True):
    r = {"instance_id": instance_id, "model_patch": model_patch}
    if model_name_or_path is not None:
        r["model_name_or_path"] = model_name_or_path
    if sample is not None:
        r["sample"] = sample
    if deadline_s is not None:
        r["deadline_s"] = deadline_s
    if not execute:
        r["execute"] = False
    return r


def _error(status, body, retry_after=None):
    try:
        e = json.loads(body.decode("utf-8"))
        return ServeError(status, e.get("code"), e.get("message"), e.get("field"), retry_after)
    except (ValueError, AttributeError):
        return ServeError(status, "http", body[:200].decode("utf-8", "replace"), None, retry_after)


class _Base:
    def __init__(self, url=None, token=None, timeout=60.0, retries_429=8):
        self.url = (url or os.environ.get("SWE_EVAL_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("SWE_EVAL_TOKEN")
        self.timeout = timeout
        self.retries_429 = retries_429

    def _headers(self, has_body):
        h = {"Accept": "application/json"}
        if has_body:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h


class Client(_Base):
    """A synchronous client (urllib)."""

    def _call(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        for attempt in range(self.retries_429 + 1):
            req = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers=self._headers(data is not None))
            try:
                with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                retry = e.headers.get("Retry-After")
                err = _error(e.code, e.read(), retry)
                if e.code == 429 and attempt < self.retries_429:
                    time.sleep(min(float(retry or 1), 60.0))
                    continue
                raise err

    def submit(self, instance_id, model_patch, **kw):
        """Sends one prediction; returns its evaluation at once (`state` queued, or done)."""
        return self._call("POST", "/v1/evaluations", _record(instance_id, model_patch, **kw))

    def submit_many(self, records):
        """Sends a batch of prediction records (dicts); returns their evaluations in order."""
        return self._call("POST", "/v1/evaluations", list(records))

    def get(self, eval_id):
        """The evaluation as it stands."""
        return self._call("GET", "/v1/evaluations/" + urllib.parse.quote(eval_id, safe=""))

    def wait(self, eval_id, timeout=None):
        """The evaluation once done (or as it stands when `timeout` seconds have passed)."""
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
            path = "/v1/evaluations/%s?wait=%.3f" % (urllib.parse.quote(eval_id, safe=""), left)
            e = self._call("GET", path, timeout=left + self.timeout)
            if e.get("state") == "done" or (until is not None and time.monotonic() >= until):
                return e

    def wait_many(self, ids, timeout=0.0):
        """{"done": [...], "pending": [ids]} after at most `timeout` seconds."""
        return self._call("POST", "/v1/evaluations/wait", {"ids": list(ids), "timeout_s": timeout},
                          timeout=timeout + self.timeout)

    def evaluate(self, instance_id, model_patch, timeout=None, **kw):
        """Submits one prediction and waits for its result."""
        e = self.submit(instance_id, model_patch, **kw)
        return e if e.get("state") == "done" else self.wait(e["id"], timeout)

    def evaluate_batch(self, records, timeout=None):
        """Submits a batch and waits for every result (those not done by `timeout` are
        returned as they stand); results in the order of `records`."""
        accepted = self.submit_many(records)
        by_id = {e["id"]: e for e in accepted}
        until = None if timeout is None else time.monotonic() + timeout
        pending = [e["id"] for e in accepted if e.get("state") != "done"]
        while pending:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
            got = self.wait_many(pending, left)
            for e in got["done"]:
                by_id[e["id"]] = e
            pending = got["pending"]
            if until is not None and time.monotonic() >= until:
                break
        return [by_id[e["id"]] for e in accepted]

    def health(self):
        """The server's health (raises ServeError 503 when it cannot evaluate)."""
        return self._call("GET", "/v1/health")


class AsyncClient(_Base):
    """An asyncio client (one HTTP/1.1 connection per call, asyncio streams)."""

    async def _call(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        u = urllib.parse.urlsplit(self.url)
        if u.scheme != "http":
            raise ValueError("AsyncClient speaks plain http (put TLS in front of it): " + self.url)
        host, port = u.hostname, u.port or 80
        base = u.path.rstrip("/")
        for attempt in range(self.retries_429 + 1):
            status, headers, raw = await asyncio.wait_for(
                self._once(host, port, method, base + path, data), timeout or self.timeout)
            if status < 400:
                return json.loads(raw.decode("utf-8"))
            retry = headers.get("retry-after")
            if status == 429 and attempt < self.retries_429:
                await asyncio.sleep(min(float(retry or 1), 60.0))
                continue
            raise _error(status, raw, retry)

    async def _once(self, host, port, method, path, data):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            head = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (host, port), "Connection: close"]
            for k, v in self._headers(data is not None).items():
                head.append("%s: %s" % (k, v))
            if data is not None:
                head.append("Content-Length: %d" % len(data))
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (data or b""))
            await writer.drain()
            status_line = await reader.readline()
            status = int(status_line.split()[1])
            headers = {}
            while True:
                line = (await reader.readline()).decode("latin-1").strip()
                if not line:
                    break
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            if "content-length" in headers:
                raw = await reader.readexactly(int(headers["content-length"]))
            else:
                raw = await reader.read()
            return status, headers, raw
        finally:
            writer.close()

    async def submit(self, instance_id, model_patch, **kw):
        """See Client.submit."""
        return await self._call("POST", "/v1/evaluations", _record(instance_id, model_patch, **kw))

    async def submit_many(self, records):
        """See Client.submit_many."""
        return await self._call("POST", "/v1/evaluations", list(records))

    async def get(self, eval_id):
        """See Client.get."""
        return await self._call("GET", "/v1/evaluations/" + urllib.parse.quote(eval_id, safe=""))

    async def wait(self, eval_id, timeout=None):
        """See Client.wait."""
        loop = asyncio.get_running_loop()
        until = None if timeout is None else loop.time() + timeout
        while True:
            left = POLL_S if until is None else max(0.0, min(POLL_S, until - loop.time()))
            path = "/v1/evaluations/%s?wait=%.3f" % (urllib.parse.quote(eval_id, safe=""), left)
            e = await self._call("GET", path, timeout=left + self.timeout)
            if e.get("state") == "done" or (until is not None and loop.time() >= until):
                return e

    async def wait_many(self, ids, timeout=0.0):
        """See Client.wait_many."""
        return await self._call("POST", "/v1/evaluations/wait", {"ids": list(ids), "timeout_s": timeout},
                                timeout=timeout + self.timeout)

    async def evaluate(self, instance_id, model_patch, timeout=None, **kw):
        """See Client.evaluate."""
        e = await self.submit(instance_id, model_patch, **kw)
        return e if e.get("state") == "done" else await self.wait(e["id"], timeout)

    async def evaluate_batch(self, records, timeout=None):
        """See Client.evaluate_batch."""
        accepted = await self.submit_many(records)
        results = await asyncio.gather(*[
            (self.wait(e["id"], timeout) if e.get("state") != "done" else _done(e)) for e in accepted])
        return list(results)

    async def health(self):
        """See Client.health."""
        return await self._call("GET", "/v1/health")


async def _done(e):
    return e


_DIFF_BLOCK = re.compile(r"```(?:diff|patch)?\s*\n(.*?)```", re.S)


def _patch_of(solution_str):
    """The patch in a model's answer: the last ```diff block, else the text from its first
    `diff --git` line, else the whole text."""
    blocks = _DIFF_BLOCK.findall(solution_str or "")
    if blocks:
        return blocks[-1]
    at = (solution_str or "").find("diff --git")
    return solution_str[at:] if at >= 0 else (solution_str or "")


def _instance_of(ground_truth, extra_info):
    if isinstance(extra_info, dict) and extra_info.get("instance_id"):
        return extra_info["instance_id"]
    if isinstance(ground_truth, dict) and ground_truth.get("instance_id"):
        return ground_truth["instance_id"]
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    raise ValueError("compute_score needs the instance id: extra_info['instance_id'] or ground_truth")


def _score(e):
    return {
        "score": 1.0 if e.get("resolved") else 0.0,
        "mask": bool(e.get("mask")),
        "status": e.get("status"),
        "similarity": e.get("similarity"),
        "reward": e.get("reward"),
        "strict_resolved": bool(e.get("strict_resolved")),
        "cached": bool(e.get("cached")),
        "id": e.get("id"),
    }


_clients = {}


def compute_score(data_source, solution_str, ground_truth, extra_info=None, url=None, timeout=None):
    """A verl-style reward function: executes the patch in `solution_str` on the instance
    (`extra_info['instance_id']`, else `ground_truth`) and returns a dict whose `score` is 1.0
    when resolved, else 0.0; `mask` true means the infrastructure decided (drop the sample);
    `similarity`, `reward` and `status` come with it. `data_source` is not used."""
    del data_source
    c = _clients.get(url)
    if c is None:
        c = _clients[url] = Client(url)
    sample = (extra_info or {}).get("sample") if isinstance(extra_info, dict) else None
    model = (extra_info or {}).get("model_name_or_path") if isinstance(extra_info, dict) else None
    e = c.evaluate(_instance_of(ground_truth, extra_info), _patch_of(solution_str), timeout=timeout,
                   sample=sample, model_name_or_path=model)
    return _score(e)


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None, url=None, timeout=None):
    """compute_score for reward managers that await their reward function."""
    del data_source
    c = AsyncClient(url)
    sample = (extra_info or {}).get("sample") if isinstance(extra_info, dict) else None
    model = (extra_info or {}).get("model_name_or_path") if isinstance(extra_info, dict) else None
    e = await c.evaluate(_instance_of(ground_truth, extra_info), _patch_of(solution_str), timeout=timeout,
                         sample=sample, model_name_or_path=model)
    return _score(e)
