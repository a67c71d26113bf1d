"""Issue 24: the text-only gates (C2.1, C2.2, D3) given to a real provider while the sim plays the video
roles — the sim accepts the mix on synthetic playlists, and each gate's decisions are labelled by who made
them (`playlisteval gates`). The real provider here is a scripted stand-in registered as "llama", so the
test needs no llama.cpp; tests/test_llama_contract.py runs the real one (--run-llm)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from sqlmodel import col, select

from playlisteval.actors.build_run import build
from playlisteval.analytics.gate_shares import gate_shares, role_speeds
from playlisteval.analytics.intervals import cluster_mean
from playlisteval.config import Price, Settings
from playlisteval.models import preflight as model_preflight
from playlisteval.models.request import ModelRequest, ProviderReply, Usage
from playlisteval.store import forget_engines, open_store
from playlisteval.store.engine import read
from playlisteval.store.tables import GateResult, ModelCall
from tests.builder_helpers import app_with, fixed_worlds
from tests.helpers import project, seeded_store

TEXT_ROLES = ("C2_transcript_answer", "C2_transcript_verify", "C2_parametric_answer_a", "C2_parametric_verify_a",
              "C2_parametric_answer_b", "C2_parametric_verify_b", "D3_first", "D3_second")
SMALL, BIG = "llama/qwen2.5-coder-0.5b", "llama/qwen2.5-coder-1.5b"


class ScriptedLlama:
    """Schema-valid replies decided by a hash of the prompt: about a third of the verdicts say Yes, and the
    rankings are the shown order (rarely the intended one)."""

    name = "llama"

    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        h = int(hashlib.sha256(f"{model}|{request.text()}".encode()).hexdigest(), 16)
        assert schema is not None
        if schema.__name__ == "TextAnswer":
            out: dict[str, object] = {"explanation": "from the text", "answer": f"answer {h % 97}"}
        elif schema.__name__ == "Verdict":
            out = {"explanation": "compared", "judgement": "Yes" if h % 3 == 0 else "No"}
        else:
            out = {"rankings": [{"rank": i, "candidate_index": i, "reasoning": "as shown"} for i in range(1, 6)],
                   "overall_summary": "as shown"}
        return ProviderReply(text=json.dumps(out), usage=Usage(input_tokens=len(request.text()) // 4,
                                                                output_tokens=20, cpu_seconds=1.5))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    models = {f"models__{r}": (SMALL if r.endswith(("_answer", "_answer_a", "verify_b", "first")) else BIG)
              for r in TEXT_ROLES}
    settings = project(tmp_path_factory.mktemp("realtext"), **models)
    settings.build.model_families = {SMALL: "qwen-0.5b", BIG: "qwen-1.5b"}  # two families where C4 asks
    settings.prices["llama/*"] = Price(cpu_hour=0.05)
    seeded_store(settings, 6, world_dir=fixed_worlds("realtext"))
    app, _ = app_with(settings)
    app.runner.registry.register("llama", ScriptedLlama())  # type: ignore[arg-type]
    saved = dict(model_preflight._LAZY_SDKS)
    model_preflight._LAZY_SDKS.pop("llama", None)  # the stand-in needs no llama_cpp
    try:
        build(settings, app=app)
    finally:
        model_preflight._LAZY_SDKS.clear()
        model_preflight._LAZY_SDKS.update(saved)
    yield settings
    forget_engines()


def test_the_text_gates_are_real_and_the_video_gates_simulated(mixed: Settings) -> None:
    shares = {g.gate: g for g in gate_shares(open_store(mixed), mixed.project.seed)}
    assert shares["C2.1"].source == "real" and shares["C2.1"].models == sorted([SMALL, BIG])
    assert shares["C3"].source == "simulated" and shares["C3"].models == ["sim/video-verifier"]
    assert shares["C1"].source == "none"
    assert shares["C2.2"].source == shares["D3"].source == "real" and shares["D3"].decided > 0
    with read(open_store(mixed)) as s:
        sources = set(s.exec(select(ModelCall.provider).where(col(ModelCall.role).in_(TEXT_ROLES))).all())
    assert sources == {"llama"}


def test_the_share_is_the_bootstrap_over_questions(mixed: Settings) -> None:
    share = {g.gate: g for g in gate_shares(open_store(mixed), mixed.project.seed)}["C2.1"]
    with read(open_store(mixed)) as s:
        rows = s.exec(select(GateResult.item_id, GateResult.verdict)
                      .where(GateResult.gate == "C2.1")).all()
    decided = [(i, v) for i, v in rows if v != "fault"]
    direct = cluster_mean([v == "reject" for _, v in decided], [i for i, _ in decided], seed=mixed.project.seed)
    assert share.share == direct and share.decided == len(decided)
    assert share.rejected == sum(v == "reject" for _, v in decided)


def test_speeds_and_cpu_cost_of_the_local_roles(mixed: Settings) -> None:
    speeds = {(s.role, s.model): s for s in role_speeds(open_store(mixed))}
    assert ("C2_transcript_answer", "qwen2.5-coder-0.5b") in speeds
    with read(open_store(mixed)) as s:
        usd = s.exec(select(ModelCall.usd).where(ModelCall.provider == "llama", ModelCall.status == "ok")).all()
    assert usd and all(u == pytest.approx(1.5 / 3600 * 0.05) for u in usd)  # 1.5 CPU-s at $0.05 per CPU-hour


def test_gates_command_labels_and_compares(mixed: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import structlog
    from click.testing import CliRunner

    from playlisteval.cli import main

    saved = structlog.get_config()
    monkeypatch.chdir(mixed.root)
    try:
        result = CliRunner().invoke(main, ["gates", "--json", "--against", str(mixed.root)])
        text = CliRunner().invoke(main, ["gates"]).output
    finally:
        structlog.configure(**saved)
    data = json.loads(result.output)
    c21 = next(g for g in data["gates"] if g["gate"] == "C2.1")
    assert c21["source"] == "real" and c21["share"]["low"] is not None
    assert [g["gate"] for g in data["against"]] == [g["gate"] for g in data["gates"]]
    assert "SIMULATED" in text and "C2.1 decided by: llama/" in text
