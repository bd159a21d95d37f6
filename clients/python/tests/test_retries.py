"""Every retry rule of the clients, sync and asyncio, against the fake server (no Docker, no
swe-eval): what is retried, after how long, until when, what is not, and that waits and
submissions survive the server going away. Short backoffs keep it to a few seconds."""

from __future__ import annotations

import asyncio
import logging
import time
import unittest
from typing import TYPE_CHECKING, Any, Dict, List

from fake_server import FakeServe, free_port

import swe_eval_client as sec
from swe_eval_client import RetriesExhausted, RetryPolicy, ServeError

FAST = RetryPolicy(deadline=5.0, backoff=0.02, backoff_max=0.2, retry_after_max=0.25, jitter=0.5)
PATCH = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"

logging.getLogger("swe_eval_client").setLevel(logging.ERROR)


# The cases are a TestCase to the type checker, a mixin to unittest (which would run them alone).
if TYPE_CHECKING:
    _Base = unittest.TestCase
else:
    _Base = object


class Cases(_Base):
    """The cases, run by a sync and an asyncio subclass through `call`."""

    fake: FakeServe

    def setUp(self) -> None:
        self.fake = FakeServe()

    def tearDown(self) -> None:
        self.fake.close()

    def settings(self, **kw: Any) -> Dict[str, Any]:
        s: Dict[str, Any] = {"url": self.fake.url, "timeout": 2.0, "retry": FAST}
        s.update(kw)
        return s

    def call(self, method: str, *args: Any, client: Any = None, settings: Any = None, **kw: Any) -> Any:
        raise NotImplementedError

    def calls(self, seq: List[Any], settings: Any = None) -> List[Any]:
        """Several calls (method, args, kwargs) on one client, in order."""
        raise NotImplementedError

    def timed(self, method: str, *args: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        out = self.call(method, *args, **kw)
        return out, time.monotonic() - t0

    # What is retried.

    def test_refused_connections_are_retried_until_the_server_listens(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.stop()
        self.fake.come_back_in(0.2)
        got, took = self.timed("get", e["id"])
        self.assertEqual(got["id"], e["id"])
        self.assertGreaterEqual(took, 0.18)

    def test_refused_past_the_deadline_raises_with_the_attempts_and_the_last_error(self) -> None:
        url = "http://127.0.0.1:%d" % free_port()
        t0 = time.monotonic()
        with self.assertRaises(RetriesExhausted) as cm:
            self.call("get", "e1", settings=self.settings(url=url), retry_deadline=0.2)
        took = time.monotonic() - t0
        e = cm.exception
        self.assertGreaterEqual(e.attempts, 3)
        self.assertIsInstance(e.last, ConnectionRefusedError)
        self.assertIn("ConnectionRefusedError", str(e))
        self.assertIn("attempts", str(e))
        self.assertIn("GET /v1/evaluations/e1", str(e))
        self.assertGreaterEqual(took, 0.2)
        self.assertLess(took, 3.0)
        self.assertIsNone(e.status)

    def test_a_connection_closed_with_no_answer_is_retried(self) -> None:
        self.fake.fault("GET", "/v1/health", "drop", times=2)
        self.assertTrue(self.call("health", retry_deadline=2.0)["accepting"])
        self.assertEqual(len(self.fake.requests_of("GET", "/v1/health")), 3)

    def test_a_garbled_status_line_is_retried(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "garbage", b"HTTP/1.1 OK\r\n\r\n")
        self.fake.fault("GET", "/v1/evaluations/", "garbage", b"\r\n")
        self.fake.fault("GET", "/v1/evaluations/", "garbage", b"SSH-2.0-OpenSSH\r\n")
        self.assertEqual(self.call("get", e["id"])["id"], e["id"])
        self.assertEqual(len(self.fake.requests_of("GET", "/v1/evaluations/")), 4)

    def test_an_answer_cut_short_is_retried(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "cut")
        self.assertEqual(self.call("get", e["id"])["id"], e["id"])
        self.assertEqual(len(self.fake.requests_of("GET", "/v1/evaluations/")), 2)

    def test_an_attempt_slower_than_the_timeout_is_retried(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "hang", 5.0)
        got, took = self.timed("get", e["id"], settings=self.settings(timeout=0.2))
        self.assertEqual(got["id"], e["id"])
        self.assertGreaterEqual(took, 0.2)
        self.assertLess(took, 4.0, "the second attempt did not wait for the first")

    def test_5xx_and_429_without_retry_after_back_off_exponentially(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        for code in (500, 503, 429, 502):
            self.fake.fault("GET", "/v1/evaluations/", "status", code, {"code": "x", "message": "busy", "field": None})
        self.call("get", e["id"], retry_deadline=5.0)
        t = self.fake.requests_of("GET", "/v1/evaluations/")
        self.assertEqual(len(t), 5)
        gaps = [b - a for a, b in zip(t, t[1:])]
        # backoff 0.02 doubling, less up to half of it at random: each gap at least its floor.
        for n, gap in enumerate(gaps):
            self.assertGreaterEqual(gap, min(0.2, 0.02 * 2**n) * 0.5 - 0.002, gaps)

    def test_the_backoff_stops_growing_at_its_cap(self) -> None:
        # Uncapped, the sixth wait would be 0.05 * 2**5 = 1.6 s.
        policy = RetryPolicy(deadline=5.0, backoff=0.05, backoff_max=0.05, jitter=0.0)
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "status", 503, {"code": "x", "message": "m"}, times=6)
        self.call("get", e["id"], settings=self.settings(retry=policy), retry_deadline=5.0)
        t = self.fake.requests_of("GET", "/v1/evaluations/")
        gaps = [b - a for a, b in zip(t, t[1:])]
        self.assertEqual(len(gaps), 6)
        for gap in gaps:
            self.assertGreaterEqual(gap, 0.048)
        self.assertLess(gaps[-1], 0.8, gaps)

    def test_retry_after_is_honoured(self) -> None:
        self.fake.fault("POST", "/v1/evaluations", "status", 429, {"code": "queue_full", "message": "full"}, {"Retry-After": "0.2"})
        e = self.call("submit", "a__b-1", PATCH)
        self.assertEqual(e["instance_id"], "a__b-1")
        t = self.fake.requests_of("POST", "/v1/evaluations")
        self.assertEqual(len(t), 2)
        self.assertGreaterEqual(t[1] - t[0], 0.19)

    def test_a_long_retry_after_is_capped(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "status", 503, {"code": "unavailable", "message": "m"}, {"Retry-After": "300"})
        _, took = self.timed("get", e["id"], retry_deadline=5.0)
        t = self.fake.requests_of("GET", "/v1/evaluations/")
        self.assertEqual(len(t), 2)
        self.assertGreaterEqual(t[1] - t[0], 0.24)
        self.assertLess(took, 2.0)

    def test_a_retry_after_beyond_the_deadline_waits_to_the_deadline_then_gives_up(self) -> None:
        self.fake.fault("POST", "/v1/evaluations", "status", 429, {"code": "queue_full", "message": "full"}, {"Retry-After": "0.5"}, times=10)
        t0 = time.monotonic()
        with self.assertRaises(RetriesExhausted) as cm:
            self.call("submit", "a__b-1", PATCH, retry_deadline=0.2)
        took = time.monotonic() - t0
        self.assertEqual(cm.exception.status, 429)
        self.assertEqual(cm.exception.attempts, 2)
        self.assertIsInstance(cm.exception.last, ServeError)
        self.assertGreaterEqual(took, 0.2)
        self.assertLess(took, 1.5)

    def test_5xx_past_the_deadline_raise_with_the_last_answer(self) -> None:
        self.fake.fault("GET", "/v1/evaluations/", "status", 503, {"code": "unavailable", "message": "shutting down"}, times=100)
        with self.assertRaises(RetriesExhausted) as cm:
            self.call("get", "e1", retry_deadline=0.2)
        self.assertEqual(cm.exception.status, 503)
        self.assertIn("shutting down", str(cm.exception))

    def test_the_client_default_deadline_applies_and_a_call_overrides_it(self) -> None:
        url = "http://127.0.0.1:%d" % free_port()
        t0 = time.monotonic()
        with self.assertRaises(RetriesExhausted):
            self.call("get", "e1", settings=self.settings(url=url, retry_deadline=0.1))
        self.assertLess(time.monotonic() - t0, 2.0)
        t0 = time.monotonic()
        with self.assertRaises(RetriesExhausted) as cm:
            self.call("get", "e1", settings=self.settings(url=url, retry_deadline=0.1), retry_deadline=0.3)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        self.assertEqual(cm.exception.deadline, 0.3)

    # What is not.

    def test_4xx_other_than_429_are_not_retried(self) -> None:
        cases = [
            (400, "bad_request", "instance_id"),
            (401, "unauthorized", "Authorization"),
            (404, "not_found", None),
            (405, "method_not_allowed", None),
            (413, "too_large", "model_patch"),
        ]
        for status, code, field in cases:
            self.fake.fault("POST", "/v1/evaluations", "status", status, {"code": code, "message": "no", "field": field})
            before = len(self.fake.requests_of("POST", "/v1/evaluations"))
            with self.assertRaises(ServeError) as cm:
                self.call("submit", "a__b-1", PATCH)
            e = cm.exception
            self.assertNotIsInstance(e, RetriesExhausted)
            self.assertEqual((e.status, e.code, e.message, e.field), (status, code, "no", field))
            self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), before + 1, status)

    def test_the_servers_own_refusals_name_the_field(self) -> None:
        with self.assertRaises(ServeError) as cm:
            self.call("submit", "nope", PATCH)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "instance_id"))
        with self.assertRaises(ServeError) as cm:
            self.call("get", "e404")
        self.assertEqual(cm.exception.status, 404)
        self.fake.max_patch = 10
        with self.assertRaises(ServeError) as cm:
            self.call("submit", "a__b-1", PATCH)
        self.assertEqual((cm.exception.status, cm.exception.field), (413, "model_patch"))
        self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), 2)

    def test_a_503_health_is_the_answer_not_retried(self) -> None:
        self.fake.fault("GET", "/v1/health", "status", 503, {"code": "unavailable", "message": "engine"})
        with self.assertRaises(ServeError) as cm:
            self.call("health")
        self.assertEqual(cm.exception.status, 503)
        self.assertNotIsInstance(cm.exception, RetriesExhausted)

    # The server going away and coming back.

    def test_a_wait_survives_the_server_going_away_and_coming_back(self) -> None:
        self.fake.done_after = 0.3
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "away", 0.2)
        got = self.call("wait", e["id"], 10)
        self.assertEqual((got["id"], got["state"], got["status"]), (e["id"], "done", "unresolved"))
        self.assertGreaterEqual(len(self.fake.requests_of("GET", "/v1/evaluations/")), 2)

    def test_a_batch_wait_survives_the_server_going_away_and_coming_back(self) -> None:
        self.fake.done_after = 0.3
        self.fake.fault("POST", "/v1/evaluations/wait", "away", 0.15)
        records = [{"instance_id": "a__b-%d" % i, "model_patch": PATCH} for i in range(3)]
        got = self.call("evaluate_batch", records, 10)
        self.assertEqual([g["instance_id"] for g in got], ["a__b-0", "a__b-1", "a__b-2"])
        self.assertTrue(all(g["state"] == "done" for g in got))

    def test_many_calls_at_once_survive_a_restart(self) -> None:
        self.fake.done_after = 0.2
        ids = [self.call("submit", "a__b-%d" % i, PATCH)["id"] for i in range(30)]
        self.fake.fault("GET", "/v1/evaluations/", "away", 0.2)
        got = self.many([("wait", (i, 10), {}) for i in ids])
        self.assertEqual([g["id"] for g in got], ids)
        self.assertTrue(all(g["state"] == "done" for g in got))

    def many(self, calls: List[Any]) -> List[Any]:
        raise NotImplementedError

    # Sending again.

    def test_a_submission_whose_answer_was_lost_is_sent_again_and_runs_once(self) -> None:
        self.fake.done_after = 0.2
        self.fake.fault("POST", "/v1/evaluations", "accept_then_drop")
        got = self.call("evaluate", "a__b-1", PATCH, timeout=10)
        self.assertEqual(got["state"], "done")
        self.assertEqual(self.fake.runs[("a__b-1", PATCH)], 1)
        self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), 2)
        self.assertEqual(len(self.fake.evals), 2, "the first one is kept by the server, unseen")

    def test_a_batch_whose_answer_was_lost_is_sent_again_and_each_runs_once(self) -> None:
        self.fake.done_after = 0.2
        records = [{"instance_id": "a__b-%d" % i, "model_patch": PATCH} for i in range(4)]
        self.call("submit_many", records[:1])  # one of them already known
        self.fake.fault("POST", "/v1/evaluations", "accept_then_drop")
        got = self.call("evaluate_batch", records, 10)
        self.assertEqual([g["instance_id"] for g in got], ["a__b-%d" % i for i in range(4)])
        self.assertTrue(all(g["state"] == "done" for g in got))
        self.assertEqual(set(self.fake.runs.values()), {1})
        self.assertEqual(len(self.fake.runs), 4)

    # Connections.

    def test_a_kept_alive_connection_the_server_closed_is_replaced_at_once(self) -> None:
        slow = RetryPolicy(deadline=5.0, backoff=2.0, backoff_max=2.0, jitter=0.0)
        self.fake.fault("GET", "/v1/health", "then_close")
        t0 = time.monotonic()
        out = self.calls([("health", (), {}), ("health", (), {}), ("health", (), {})], settings=self.settings(retry=slow))
        self.assertEqual(len(out), 3)
        self.assertLess(time.monotonic() - t0, 1.5, "no backoff for a stale connection")
        self.assertEqual(len(self.fake.requests_of("GET", "/v1/health")), 3)

    def test_answers_in_chunks_or_to_the_end_of_the_connection_are_read(self) -> None:
        e = self.call("submit", "a__b-1", PATCH)
        self.fake.fault("GET", "/v1/evaluations/", "chunked")
        self.fake.fault("GET", "/v1/evaluations/", "to_end")
        out = self.calls([("get", (e["id"],), {})] * 3)
        self.assertEqual([o["id"] for o in out], [e["id"]] * 3)
        self.assertEqual(len(self.fake.requests_of("GET", "/v1/evaluations/")), 3)

    # Batches.

    def test_a_batch_is_sent_in_requests_within_the_bounds_and_refusals_name_the_whole_batchs_index(self) -> None:
        records = [{"instance_id": "a__b-%d" % i, "model_patch": PATCH} for i in range(5)]
        got = self.call("submit_many", records, settings=self.settings(max_batch=2))
        self.assertEqual([g["instance_id"] for g in got], ["a__b-%d" % i for i in range(5)])
        self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), 3)
        got = self.call("submit_many", records, settings=self.settings(max_body=300))
        self.assertEqual(len(got), 5)
        self.assertGreater(len(self.fake.requests_of("POST", "/v1/evaluations")), 4)
        records[3]["instance_id"] = "nope"
        with self.assertRaises(ServeError) as cm:
            self.call("submit_many", records, settings=self.settings(max_batch=2))
        self.assertEqual(cm.exception.field, "[3].instance_id")


class Sync(Cases, unittest.TestCase):
    def call(self, method: str, *args: Any, client: Any = None, settings: Any = None, **kw: Any) -> Any:
        with sec.Client(**(settings or self.settings())) as c:
            return getattr(c, method)(*args, **kw)

    def calls(self, seq: List[Any], settings: Any = None) -> List[Any]:
        with sec.Client(**(settings or self.settings())) as c:
            return [getattr(c, m)(*a, **k) for m, a, k in seq]

    def many(self, calls: List[Any]) -> List[Any]:
        import concurrent.futures

        with sec.Client(**self.settings()) as c, concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
            futures = [pool.submit(getattr(c, m), *a, **k) for m, a, k in calls]
            return [f.result() for f in futures]


class Async(Cases, unittest.TestCase):
    def call(self, method: str, *args: Any, client: Any = None, settings: Any = None, **kw: Any) -> Any:
        async def go() -> Any:
            async with sec.AsyncClient(**(settings or self.settings())) as c:
                return await getattr(c, method)(*args, **kw)

        return asyncio.run(go())

    def calls(self, seq: List[Any], settings: Any = None) -> List[Any]:
        async def go() -> List[Any]:
            async with sec.AsyncClient(**(settings or self.settings())) as c:
                return [await getattr(c, m)(*a, **k) for m, a, k in seq]

        return asyncio.run(go())

    def many(self, calls: List[Any]) -> List[Any]:
        async def go() -> List[Any]:
            async with sec.AsyncClient(**self.settings()) as c:
                return list(await asyncio.gather(*[getattr(c, m)(*a, **k) for m, a, k in calls]))

        return asyncio.run(go())


if __name__ == "__main__":
    unittest.main()
