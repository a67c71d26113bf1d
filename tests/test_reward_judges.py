"""Reward-model judges (issue 20 deliverable 1, SPEC G7): each answer scored on its own, the higher wins;
equal scores are a counted tie; a reward model that cannot be run is an error, never a 0.5."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from playlisteval.eval import reward
from playlisteval.eval.judging import JudgeInput
from playlisteval.eval.verdicts import ERROR, TIE, VERDICT
from playlisteval.models.request import GenerationSettings, ModelResponse
from playlisteval.store import open_store
from tests.judged_project import cli, copy_of, json_lines, make_selected


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("reward"))


def test_sim_reward_judges_every_pair_by_two_scores_with_no_no_verdict(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path / "p")
    [run] = json_lines(cli(settings, "eval", "judge", "--judge", "sim/reward", "--json"))
    assert run["state"] == "finished" and run["judged"] == run["pairs"] > 0
    assert run["no_verdict"] == 0 and run["ties"] == 0 and run["outcomes"] == {"verdict": run["pairs"]}
    engine = open_store(settings)
    with engine.connect() as c:
        judged = c.execute(text("SELECT verdict, raw, a_is_better, score FROM judgment WHERE run_id = :r"),
                           {"r": run["run_id"]}).all()
        calls = c.execute(text("SELECT role FROM model_call WHERE run_id = :r"), {"r": run["run_id"]}).all()
    assert len(calls) == 2 * run["pairs"] and {r for (r,) in calls} == {"G"}  # one call per answer
    for verdict, raw, a_is_better, value in judged:
        scores = json.loads(raw)
        assert verdict == ("A" if scores["score_a"] > scores["score_b"] else "B")
        assert value == float((verdict == "A") == bool(a_is_better))
    # the stand-in prefers the intended answer more often than not on this benchmark
    assert run["accuracy"] > 0.5


class _Runner:
    """A runner whose replies are given: enough for ask_reward's decision rule."""

    def __init__(self, settings: Any, replies: list[str]) -> None:
        self.settings, self.replies = settings, list(replies)

    def call(self, request: Any, model: str | None = None) -> ModelResponse:
        assert request.template == "g7_reward.j2" and "Candidate answer:" in request.text()
        assert "Model B" not in request.text()  # one answer, never the pair
        return ModelResponse(text=self.replies.pop(0), call_id=len(self.replies) + 1)


@pytest.mark.parametrize(("replies", "outcome", "verdict"), [
    (['{"score": 1.5}', '{"score": -2}'], VERDICT, "A"),
    (['{"score": 0.1}', '{"score": 0.7}'], VERDICT, "B"),
    (['{"score": 0.25}', '{"score": 0.25}'], TIE, None),
    (['{"score": 1.0}', 'I cannot score this'], ERROR, None),
    (['{"score": NaN}', '{"score": 1}'], ERROR, None),
    (['{"score": true}', '{"score": 1}'], ERROR, None),
])
def test_the_higher_score_wins_equal_is_a_tie_and_no_number_is_an_error(
        selected: Path, tmp_path: Path, replies: list[str], outcome: str, verdict: str | None) -> None:
    settings = copy_of(selected, tmp_path / "p")
    reply = reward.ask_reward(_Runner(settings, replies), "sim/reward", "G", "Why?", "first (clip1 @ 0:01 - 0:02)",
                              "second", JudgeInput([], ""), GenerationSettings(), purpose="eval", item_id=1)
    assert (reply.outcome, reply.verdict) == (outcome, verdict)
    assert bool(reply.error) == (outcome == ERROR)


def test_a_reward_model_given_a_pairwise_prompt_refuses_rather_than_scoring(selected: Path, tmp_path: Path) -> None:
    from playlisteval.errors import PermanentModelError
    from playlisteval.models.request import ModelRequest, TextPart
    from playlisteval.world.sim.provider import SimProvider

    settings = copy_of(selected, tmp_path / "p")
    provider = SimProvider(settings.sim, settings.project.seed)
    assert provider.is_reward_model("reward") and not provider.is_reward_model("judge")
    with pytest.raises(PermanentModelError, match="reward model"):
        provider.complete("reward", ModelRequest(role="G", parts=[TextPart(text="Model A: x\nModel B: y")],
                                                 template="g4_judge.j2"), None, timeout=5)
