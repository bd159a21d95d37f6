"""The verl-style reward functions on canned answers from the fake server (a server that sends
`score`, `graded_by` and `objections`, and an older one that does not), and the asyncio
client's reading of answers byte by byte."""

from __future__ import annotations

import asyncio
import logging
import unittest
from typing import Any, List

from fake_server import FakeServe

import swe_eval_client as sec
from swe_eval_client import ProtocolError, RetryPolicy
from swe_eval_client._http import read_answer

FAST = RetryPolicy(deadline=5.0, backoff=0.02, backoff_max=0.2, retry_after_max=0.25)
GOLD = "diff --git a/calc/x.py b/calc/x.py\n--- a/calc/x.py\n+++ b/calc/x.py\n@@ -1 +1 @@\n-a\n+b\n"
FORGED = GOLD.replace("+b", "+c")
BROKEN = GOLD.replace("+b", "+d")
KEYS = {"score", "mask", "status", "strict_status", "resolved", "strict_resolved", "graded_by", "objections",
        "reason", "similarity", "reward", "cached", "id", "state"}

logging.getLogger("swe_eval_client").setLevel(logging.ERROR)


class Scalar:
    def __init__(self, v: int) -> None:
        self.v = v

    def __int__(self) -> int:
        return self.v


def canned(fake: FakeServe) -> None:
    fake.verdicts[("a__b-1", GOLD)] = {
        "status": "resolved", "resolved": True, "strict_status": "resolved", "strict_resolved": True, "score": 1.0,
    }
    # Resolved by the official grading, not by the strict one: the server rewards the strict.
    fake.verdicts[("a__b-1", FORGED)] = {
        "status": "resolved", "resolved": True, "strict_status": "unresolved", "strict_resolved": False,
        "score": 0.0, "reason": "strict: forged status lines", "objections": ["forged test-status lines"],
    }
    fake.verdicts[("a__b-1", BROKEN)] = {
        "status": "infra_error", "mask": True, "resolved": False, "strict_status": "infra_error",
        "reason": "the engine went away", "score": 0.0,
    }


class Scores(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeServe(done_after=0.05)
        canned(self.fake)
        self.kw = {"url": self.fake.url, "retry": FAST, "timeout": 10}

    def tearDown(self) -> None:
        self.fake.close()

    def both(self, name: str, *args: Any, **kw: Any) -> List[Any]:
        """The sync function `name` and its asyncio variant on the same arguments."""
        sync = getattr(sec, name)(*args, **kw)

        async def go() -> Any:
            return await getattr(sec, name + "_async")(*args, **kw)

        return [sync, asyncio.run(go())]

    def test_the_servers_score_is_used(self) -> None:
        answer = "Here is the fix:\n```diff\n" + GOLD + "```\nDone."
        for s in self.both("compute_score", "swe-bench", answer, "a__b-1", None, **self.kw):
            self.assertEqual(set(s), KEYS)
            self.assertEqual((s["score"], s["mask"], s["status"], s["resolved"], s["graded_by"]), (1.0, False, "resolved", True, "strict"))
        for s in self.both("compute_score", "swe-bench", FORGED, {"instance_id": "a__b-1"}, {}, **self.kw):
            self.assertEqual(s["score"], 0.0, "the strict verdict the server rewards by")
            self.assertTrue(s["resolved"])
            self.assertFalse(s["strict_resolved"])
            self.assertEqual(s["objections"], "forged test-status lines")
            self.assertEqual(s["strict_status"], "unresolved")

    def test_an_older_server_without_score_falls_back_to_resolved(self) -> None:
        self.fake.send_score = False
        for s in self.both("compute_score", "swe-bench", GOLD, None, {"instance_id": "a__b-1"}, **self.kw):
            self.assertEqual((s["score"], s["graded_by"], s["objections"]), (1.0, None, ""))
        for s in self.both("compute_score", "swe-bench", FORGED, "a__b-1", **self.kw):
            self.assertEqual(s["score"], 1.0, "an older server's score is the official verdict")
            self.assertFalse(s["strict_resolved"])

    def test_masked_results_are_marked_and_score_0(self) -> None:
        for s in self.both("compute_score", "swe-bench", BROKEN, "a__b-1", **self.kw):
            self.assertEqual((s["mask"], s["score"], s["status"]), (True, 0.0, "infra_error"))
            self.assertEqual(s["reason"], "the engine went away")
        self.fake.done_after = 60
        kw = dict(self.kw, timeout=0.2)
        for s in self.both("compute_score", "swe-bench", GOLD.replace("+b", "+z"), "a__b-1", **kw):
            self.assertEqual((s["mask"], s["score"], s["status"], s["state"]), (True, 0.0, None, "queued"))
            self.assertIn("within 0.2 s", s["reason"])

    def test_a_batch_is_one_request_and_comes_back_in_order(self) -> None:
        answers = (GOLD, FORGED, BROKEN, "", "no patch at all")
        truths = ["a__b-1", {"instance_id": "a__b-1"}, "ignored", None, "a__b-2"]
        # A dataset's columns may hold numpy scalars: one stands in for them (int() works, JSON not).
        infos = [None, None, {"instance_id": "a__b-1", "sample": Scalar(3)}, {"instance_id": "a__b-1"}, {}]
        for out in self.both("compute_scores", ["swe"] * 5, tuple(answers), tuple(truths), tuple(infos), **self.kw):
            # verl makes an array of each key's values: every value is a scalar.
            for s in out:
                self.assertEqual(set(s), KEYS)
                for k, v in s.items():
                    self.assertIsInstance(v, (str, int, float, bool, type(None)), k)
            self.assertEqual([s["score"] for s in out], [1.0, 0.0, 0.0, 0.0, 0.0])
            self.assertEqual([s["mask"] for s in out], [False, False, True, False, False])
            self.assertEqual([s["status"] for s in out], ["resolved", "resolved", "infra_error", "empty", "unresolved"])
        self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), 2, "one submission per call")
        self.assertEqual(self.fake.evals["e3"]["sample"], 3)
        self.assertEqual(self.fake.runs[("a__b-1", GOLD)], 1, "the second call is answered from the cache")
        for out in self.both("compute_scores", [], [], [], None, **self.kw):
            self.assertEqual(out, [])

    def test_a_large_batch_is_cut_within_the_bounds(self) -> None:
        answers = [GOLD.replace("+b", "+%d" % i) for i in range(7)]
        client = sec.Client(self.fake.url, retry=FAST, max_batch=3)
        out = sec.compute_scores(None, answers, ["a__b-1"] * 7, None, client=client, timeout=10)
        self.assertEqual([s["id"] for s in out], ["e%d" % i for i in range(1, 8)])
        self.assertEqual(len(self.fake.requests_of("POST", "/v1/evaluations")), 3)
        client.close()

    def test_a_missing_instance_or_mismatched_columns_are_errors(self) -> None:
        with self.assertRaises(ValueError):
            sec.compute_score("swe", GOLD, None, None, **self.kw)
        with self.assertRaises(ValueError):
            sec.compute_scores(None, [GOLD, GOLD], ["a__b-1"], None, **self.kw)

    def test_the_patch_is_found_in_the_answer(self) -> None:
        self.assertEqual(sec.patch_of("text\n```diff\nA\n```\nmore\n```patch\nB\n```"), "B\n")
        self.assertEqual(sec.patch_of("I changed it.\ndiff --git a/x b/x\n+y\n"), "diff --git a/x b/x\n+y\n")
        self.assertEqual(sec.patch_of(None), "")


def parse(data: bytes, method: str = "GET") -> Any:
    async def go() -> Any:
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        return await read_answer(r, method)

    return asyncio.run(go())


class Answers(unittest.TestCase):
    def test_every_way_of_sizing_a_body_is_read(self) -> None:
        a = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        self.assertEqual((a.status, a.body, a.keep_alive), (200, b"{}", True))
        a = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;x=y\r\n{\r\n1\r\n}\r\n0\r\nT: 1\r\n\r\n")
        self.assertEqual((a.body, a.keep_alive), (b"{}", True))
        a = parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}")
        self.assertEqual((a.body, a.keep_alive), (b"{}", False))
        a = parse(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        self.assertFalse(a.keep_alive)
        a = parse(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n")
        self.assertEqual((a.status, a.headers["retry-after"], a.headers["x"]), (429, "3", "a b"))
        a = parse(b"HTTP/1.1 204 No Content\r\n\r\n")
        self.assertEqual(a.body, b"")

    def test_broken_answers_are_protocol_errors(self) -> None:
        broken = [
            b"",
            b"\r\n",
            b"HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 OK\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"SSH-2.0-OpenSSH_9\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Le",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1_0\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 300 + b"\r\n",
        ]
        for data in broken:
            with self.assertRaises(ProtocolError, msg=data[:60]):
                parse(data)


if __name__ == "__main__":
    unittest.main()
