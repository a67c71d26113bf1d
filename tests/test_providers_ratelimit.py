"""A 429 storm from the fake server, ridden out by two worker processes that share one Redis rate limit.

Each process runs the Runner with the real openai SDK against the fake server. The server answers the
first requests with 429 + Retry-After; every call must still end ok, and the arrival times the server
records must respect the configured rate across both processes together.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from playlisteval.config import load_settings, write_project
from playlisteval.store import open_store
from tests.provider_fakes import CHAT, Canned, fake_api, ledger

CALLS_PER_WORKER = 6
STORM = 6  # the first requests, whoever sends them, are told to come back later
RPM, WINDOW_S = 120, 2  # → at most 4 requests in any 2-s window of the limiter (1-s buckets)
LIMIT = RPM * WINDOW_S // 60

WORKER = textwrap.dedent("""
    import json, sys
    from playlisteval.config import load_settings
    from playlisteval.models.request import ModelRequest, TextPart
    from playlisteval.models.runner import Runner
    from playlisteval.store import open_store

    worker, calls = int(sys.argv[1]), int(sys.argv[2])
    settings = load_settings()
    runner = Runner(settings, open_store(settings), worker=f"w{worker}")
    results = []
    for i in range(calls):
        request = ModelRequest(role="C2_transcript_verify", parts=[TextPart(text=f"w{worker} q{i}")],
                               response_schema="TextAnswer", item_id=worker * 100 + i)
        response = runner.call(request, model="openai/gpt-5.4-mini")
        results.append(response.parsed is not None)
    print(json.dumps(results))
""")


def test_a_429_storm_is_ridden_out_at_the_configured_rate_across_two_workers(tmp_path: Path,
                                                                             redis_url: str) -> None:
    write_project(tmp_path)
    with fake_api() as api:
        api.queue(CHAT, *[Canned(429, {"error": {"message": "rate limited", "type": "requests"}},
                                 {"retry-after": "1"})] * STORM)
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-storm", "PYTHONPATH": str(Path.cwd()),
               "PLAYLISTEVAL_BROKER__URL": redis_url,
               "PLAYLISTEVAL_PROVIDERS__OPENAI_BASE_URL": f"{api.url}/v1",
               "PLAYLISTEVAL_RATE_LIMITS__OPENAI__RPM": str(RPM),
               "PLAYLISTEVAL_RATE_LIMITS__OPENAI__WINDOW_S": str(WINDOW_S),
               "PLAYLISTEVAL_RUNNER__MAX_ATTEMPTS": str(STORM + 2),  # one worker may meet the whole storm
               "PLAYLISTEVAL_RUNNER__BACKOFF_BASE_S": "0.05", "PLAYLISTEVAL_RUNNER__BACKOFF_MAX_S": "1"}
        open_store(load_settings(tmp_path, environ={}))  # migrate once, before two processes race to
        workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(w), str(CALLS_PER_WORKER)], cwd=tmp_path,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for w in (1, 2)]
        outputs = [w.communicate(timeout=240) for w in workers]
        arrivals = sorted(s.at for s in api.requests(CHAT))
    for proc, (out, err) in zip(workers, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert json.loads(out.strip().splitlines()[-1]) == [True] * CALLS_PER_WORKER  # no call failed
    assert len(arrivals) == 2 * CALLS_PER_WORKER + STORM
    # The limiter admits LIMIT requests per WINDOW_S consecutive 1-s buckets, so LIMIT + 1 requests
    # never share a (WINDOW_S - 1)-s span; 0.25 s allows for the trip from the limiter to the server.
    spans = [arrivals[i + LIMIT] - arrivals[i] for i in range(len(arrivals) - LIMIT)]
    assert min(spans) > WINDOW_S - 1 - 0.25
    # and per limiter window (WINDOW_S whole seconds): LIMIT, plus one per request that can be in
    # flight at once (one per process here) that crossed a second boundary on its way to the server
    # (without the shared Redis limiter this count reaches 2 x LIMIT)
    per_second = Counter(math.floor(t) for t in arrivals)
    assert max(sum(per_second[k + j] for j in range(WINDOW_S)) for k in per_second) <= LIMIT + 2
    rows = ledger(open_store(load_settings(tmp_path, environ={})))
    assert sorted(r.status for r in rows) == ["error"] * STORM + ["ok"] * 2 * CALLS_PER_WORKER
    assert {r.worker for r in rows if r.status == "ok"} == {"w1", "w2"}
    assert all("429" in (r.error or "") for r in rows if r.status == "error")
