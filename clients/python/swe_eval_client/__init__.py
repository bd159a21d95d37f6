"""Client for `swe-eval serve`: executed SWE-bench rewards for training loops.

Standard library only, Python 3.8+, typed. `pip install ./clients/python` (no dependencies, and
nothing to download to build it), or put `clients/python` on `PYTHONPATH`.

    from swe_eval_client import Client
    c = Client()                                  # http://127.0.0.1:8321, or $SWE_EVAL_URL
    r = c.evaluate("swe-eval-mini__calc-1", patch)
    r["status"], r["mask"], r["similarity"]       # 'resolved', False, 0.97

`Client` (synchronous, one kept-alive connection per thread) and `AsyncClient` (asyncio) have
the same methods: `submit`, `submit_many`, `get`, `wait`, `wait_many`, `evaluate`,
`evaluate_batch`, `health`. Every result carries `status` (resolved, unresolved, patch_failed,
empty, timeout, infra_error) and `mask`: true where the infrastructure, not the patch, decided
(drop the sample rather than scoring it 0). `similarity` and `reward` (the SWE-RL similarity
reward) are in the first answer already; the rest once the tests ran.

Surviving the server. Connection errors (refused, reset, closed before or during the answer, an
empty or garbled status line), an attempt slower than `timeout`, HTTP 5xx and 429 are retried
with exponential backoff and jitter, honouring `Retry-After` up to `RetryPolicy.retry_after_max`,
for up to `retry_deadline` seconds from the request's first failure (default 600; per client,
and per call: every method takes `retry_deadline=`). Then `RetriesExhausted` says what was sent,
how many attempts over how long, and the last error. Other 4xx answers (400, 401, 404, 413, ...)
are not retried: `ServeError` with the server's `status`, `code`, `message` and `field` (in a
batch, `[i].field` counts from the start of the records given). The server keeps every accepted
request across a kill and a restart, so a `wait` (long polls) or `evaluate_batch` whose server
goes away and comes back within the deadline just returns its results, ids unchanged. Retries
are logged on the `swe_eval_client` logger.

Sending again is safe. When a submission's connection fails after it was sent, the client sends
it again (it cannot know whether the server accepted it). The server answers the same content
(instance, patch, and its own settings) with the same verdict: from its cache when the first one
finished, or by joining the job still running; no second container runs. The first request, if
it was accepted, stays on the server under an id the client never saw: it is finished with the
same job and appears in the server's export as one more sample. A batch is accepted whole or not
at all, so a batch sent again is either new or a repeat of one the server has.

verl. `compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw)` executes
the patch in the answer (the last ```diff block, else from `diff --git`) on the instance
(`extra_info["instance_id"]`, else `ground_truth`) and returns a dict: `score` (the server's:
1.0 when the verdict it rewards by, strict by default, is resolved; `1.0 if resolved else 0.0`
from a server that sends none), `mask`, `status`, `strict_status`, `resolved` (official),
`strict_resolved`, `graded_by`, `objections` (joined by `; `: verl makes an array of each
key's values, so every value is a scalar), `reason`, `similarity`, `reward`, `cached`, `id`,
`state`. A result with `mask` true (infrastructure error, deadline passed, or no verdict when
`timeout` ran out) has `score` 0.0 and must be dropped, not trained on.
`compute_scores(data_sources, solution_strs, ground_truths, extra_infos, **kw)` submits a whole
batch at once (in requests within the server's bounds) and returns the results in order (verl's
batch reward manager); `compute_score_async` and `compute_scores_async` are awaited. Their
keywords (verl's `reward_kwargs`): `url`, `token`, `timeout`, `retry_deadline`, `retry`,
`request_timeout`, `client`, and `model_name_or_path`, `sample`, `deadline_s` for the records.

examples/grpo_loop.py (beside the package) is the reward side of a GRPO-shaped loop on these
functions: a group of answers per prompt each step, group-relative advantages, masked samples
dropped; it keeps running when the server is killed and started again mid-step.
"""

from ._async import AsyncClient
from ._common import DEFAULT_URL, POLL_S, __version__
from ._errors import ClientError, ProtocolError, RetriesExhausted, ServeError
from ._retry import RetryPolicy
from ._score import compute_score, compute_score_async, compute_scores, compute_scores_async, patch_of, result_of
from ._sync import Client

__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
    "DEFAULT_URL",
    "POLL_S",
    "ProtocolError",
    "RetriesExhausted",
    "RetryPolicy",
    "ServeError",
    "__version__",
    "compute_score",
    "compute_score_async",
    "compute_scores",
    "compute_scores_async",
    "patch_of",
    "result_of",
]
