"""Tests of swe_eval_client against a live `swe-eval serve` on the mini benchmark.

The same without a server (a fake one that misbehaves on request) is in tests/.

Run by the Rust integration test `client::the_api_and_the_python_client_on_the_real_engine_with_the_mini_benchmark`,
which starts the server and sets SWE_EVAL_URL, SWE_EVAL_TEST_INSTANCE and SWE_EVAL_TEST_GOLD (an
instance and its gold patch). By hand: start `swe-eval serve`, set them, run
`python3 -m unittest test_swe_eval_client` in this folder.
"""

import asyncio
import os
import unittest

import swe_eval_client as c

INSTANCE = os.environ.get("SWE_EVAL_TEST_INSTANCE", "swe-eval-mini__calc-1")
GOLD = os.environ.get("SWE_EVAL_TEST_GOLD", "")
WRONG = "diff --git a/calc/nothing.py b/calc/nothing.py\nnew file mode 100644\n--- /dev/null\n+++ b/calc/nothing.py\n@@ -0,0 +1 @@\n+X = 1\n"


class SyncClient(unittest.TestCase):
    def setUp(self):
        self.c = c.Client(timeout=30)

    def test_health(self):
        h = self.c.health()
        self.assertTrue(h["accepting"])

    def test_gold_resolves_and_a_wrong_patch_does_not(self):
        self.assertTrue(GOLD, "SWE_EVAL_TEST_GOLD is set")
        r = self.c.evaluate(INSTANCE, GOLD, sample=7, timeout=300)
        self.assertEqual(r["state"], "done")
        self.assertEqual(r["status"], "resolved")
        self.assertFalse(r["mask"])
        self.assertGreater(r["similarity"], 0.99)
        w = self.c.evaluate(INSTANCE, WRONG, timeout=300)
        self.assertEqual(w["status"], "unresolved", w)
        self.assertLess(w["reward"], 0.5)

    def test_a_batch_comes_back_in_order(self):
        rs = self.c.evaluate_batch([
            {"instance_id": INSTANCE, "model_patch": GOLD},
            {"instance_id": INSTANCE, "model_patch": ""},
            {"instance_id": INSTANCE, "model_patch": GOLD, "execute": False},
        ], timeout=300)
        self.assertEqual([r.get("status") for r in rs], ["resolved", "empty", None])
        self.assertEqual(rs[2]["state"], "done")

    def test_errors_carry_code_message_and_field(self):
        with self.assertRaises(c.ServeError) as e:
            self.c.submit("no-such-instance", "")
        self.assertEqual((e.exception.status, e.exception.code, e.exception.field),
                         (400, "bad_request", "instance_id"))
        with self.assertRaises(c.ServeError) as e:
            self.c.get("e999999999")
        self.assertEqual(e.exception.status, 404)

    def test_compute_score_is_verl_shaped(self):
        answer = "Here is the fix:\n```diff\n" + GOLD + "```\n"
        s = c.compute_score("swe-bench", answer, INSTANCE, {"instance_id": INSTANCE})
        self.assertEqual(s["score"], 1.0)
        self.assertFalse(s["mask"])
        self.assertEqual(s["status"], "resolved")
        self.assertTrue(s["strict_resolved"])
        self.assertEqual(s["objections"], "")

    def test_compute_scores_scores_a_batch_in_order(self):
        out = c.compute_scores(["swe-bench"] * 3, [GOLD, WRONG, ""], [INSTANCE] * 3, None, timeout=300)
        self.assertEqual([s["score"] for s in out], [1.0, 0.0, 0.0])
        self.assertEqual([s["status"] for s in out], ["resolved", "unresolved", "empty"])
        self.assertFalse(any(s["mask"] for s in out))


class AsyncClient(unittest.TestCase):
    def test_the_asyncio_client_evaluates_and_scores(self):
        async def go():
            a = c.AsyncClient(timeout=30)
            h = await a.health()
            r, w = await asyncio.gather(a.evaluate(INSTANCE, GOLD, timeout=300),
                                        a.evaluate(INSTANCE, WRONG, timeout=300))
            s = await c.compute_score_async("swe-bench", GOLD, {"instance_id": INSTANCE})
            b = await c.compute_scores_async(["swe-bench"] * 2, [WRONG, GOLD], [INSTANCE] * 2)
            return h, r, w, s, b
        h, r, w, s, b = asyncio.run(go())
        self.assertTrue(h["accepting"])
        self.assertEqual((r["status"], w["status"]), ("resolved", "unresolved"))
        self.assertEqual(s["score"], 1.0)
        self.assertTrue(s["cached"], "the gold patch was evaluated before")
        self.assertEqual([x["score"] for x in b], [0.0, 1.0])


if __name__ == "__main__":
    unittest.main()
