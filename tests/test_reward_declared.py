"""Reward models by declaration (issue 42 deliverable 7, SPEC G7), on tiny local models built here: a
remote-code scorer (its own modeling file and ``auto_map``, loaded with trust_remote_code) declared
``kind = "reward"`` is scored per answer through its own method; a model whose kind cannot be told, or whose
declaration its config contradicts, is an error naming the fix; a classification head still needs no
declaration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from playlisteval.config import Settings
from playlisteval.config.judges import JudgeDeclaration
from playlisteval.errors import PermanentModelError
from playlisteval.eval.judging import JudgeInput
from playlisteval.eval.reward import ask_reward, is_reward_judge
from playlisteval.eval.verdicts import ERROR, VERDICT
from playlisteval.models.request import GenerationSettings, ImagePart
from tests.helpers import project
from tests.provider_fakes import runner_for
from tests.test_providers_hf import _text_config, _tokenizer

pytest.importorskip("transformers")

#: what a remote-code reward repository ships: its config and model classes, named by config.json's auto_map.
#: The score is plain arithmetic on what the method was given, so the test can tell it was this method that
#: scored (answer length, 100 per image) and that the tokenizer was handed to it as XComposer expects.
MODELING = '''
import torch
from transformers import PretrainedConfig, PreTrainedModel


class TinyScorerConfig(PretrainedConfig):
    model_type = "tiny_scorer"


class TinyScorerForCausalLM(PreTrainedModel):
    config_class = TinyScorerConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.tokenizer = None
        self.post_init()

    def _init_weights(self, module):
        pass

    def get_score(self, chat, image=None):
        assert self.tokenizer is not None, "the provider hands the tokenizer over"
        assert [m["role"] for m in chat] == ["user", "assistant"]
        images = list(image or [])
        return self.scale * (len(chat[1]["content"]) + 100 * len(images))
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from PIL import Image
    from safetensors.torch import save_file
    from transformers import LlamaForSequenceClassification, LlamaModel

    root = tmp_path_factory.mktemp("declared")
    torch.manual_seed(0)
    tok = _tokenizer()
    paths = {name: root / name for name in ("classifier", "headless", "scorer")}
    LlamaForSequenceClassification(_text_config(num_labels=1)).save_pretrained(paths["classifier"])
    LlamaModel(_text_config()).save_pretrained(paths["headless"])  # no head: neither generative nor a scorer
    for name in ("classifier", "headless", "scorer"):
        tok.save_pretrained(paths[name])
    scorer = paths["scorer"]
    (scorer / "modeling_tiny_scorer.py").write_text(MODELING)
    (scorer / "config.json").write_text(json.dumps({
        "model_type": "tiny_scorer", "architectures": ["TinyScorerForCausalLM"],
        "auto_map": {"AutoConfig": "modeling_tiny_scorer.TinyScorerConfig",
                     "AutoModel": "modeling_tiny_scorer.TinyScorerForCausalLM"}}))
    save_file({"scale": torch.ones(1)}, str(scorer / "model.safetensors"))
    paths["frame"] = root / "frame.jpg"
    Image.new("RGB", (32, 24), (200, 30, 30)).save(paths["frame"])
    return paths


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    s = project(tmp_path / "proj")
    s.providers.hf_device = "cpu"
    return s


def _runner(settings: Settings) -> Any:
    from playlisteval.models.providers.hf import HFProvider

    runner = runner_for(settings)
    runner.registry.register("hf", HFProvider(settings))
    return runner


def _scored(runner: Any, spec: str, given: JudgeInput) -> Any:
    return ask_reward(runner, spec, "G", "a b", "c d e f", "c d", given, GenerationSettings(),
                      purpose="eval", item_id=1)


def test_a_declared_remote_code_scorer_is_scored_per_answer_through_its_method(settings: Settings,
                                                                               models: dict[str, Path]) -> None:
    spec = f"hf/{models['scorer']}"
    settings.judges[spec] = JudgeDeclaration(kind="reward", score_method="get_score", trust_remote_code=True)
    runner = _runner(settings)
    assert is_reward_judge(runner, spec)
    reply = _scored(runner, spec, JudgeInput([], ""))
    raw = json.loads(reply.raw)
    assert (reply.outcome, reply.verdict) == (VERDICT, "A")  # the longer answer scores higher here
    # each answer scored on its own: its score is that answer's length, computed by the model's own method
    assert raw["reward"] and raw["score_a"] > raw["score_b"] and raw["call_a"] != raw["call_b"]
    frames = [ImagePart(path=str(models["frame"]), timestamp=1.0)]
    with_frames = json.loads(_scored(runner, spec, JudgeInput(frames, "")).raw)
    assert with_frames["score_a"] == raw["score_a"] + 100  # the frame reached the method


def test_the_same_declaration_in_a_role_table_works(tmp_path: Path, models: dict[str, Path]) -> None:
    spec = f"hf/{models['scorer']}"
    settings = Settings.model_validate({"models": {"G": {"model": spec, "kind": "reward", "temperature": 0.0,
                                                         "score_method": "get_score", "trust_remote_code": True}}})
    assert settings.judges[spec].score_method == "get_score" and settings.generation["G"].temperature == 0.0
    with pytest.raises(ValueError, match="declare .* differently"):
        Settings.model_validate({"models": {"G": {"model": spec, "kind": "reward"}},
                                 "judges": {spec: {"kind": "generative"}}})
    with pytest.raises(ValueError, match="hf/ models only"):
        Settings.model_validate({"judges": {"vllm/x": {"kind": "reward", "score_method": "get_score"}}})


def test_an_undeclared_remote_code_model_is_an_error_naming_the_fix(settings: Settings,
                                                                   models: dict[str, Path]) -> None:
    """Its config needs its own code: unread, its kind is unknown — an error, never the pair prompt."""
    runner = _runner(settings)
    spec = f"hf/{models['scorer']}"
    fix = r"kind is unknown.*\[judges.*trust_remote_code = true.*kind = \"reward\""
    with pytest.raises(PermanentModelError, match=fix):
        is_reward_judge(runner, spec)
    reply = _scored(runner, spec, JudgeInput([], ""))
    assert reply.outcome == ERROR and "kind is unknown" in (reply.error or "")


def test_an_architecture_that_is_neither_head_is_an_error_unless_declared(settings: Settings,
                                                                          models: dict[str, Path]) -> None:
    spec = f"hf/{models['headless']}"
    with pytest.raises(PermanentModelError, match=r"LlamaModel.*kind = \"reward\""):
        is_reward_judge(_runner(settings), spec)
    settings.judges[spec] = JudgeDeclaration(kind="reward")  # no head, no method: contradicts its config
    with pytest.raises(PermanentModelError, match="no ForSequenceClassification head and no score_method"):
        is_reward_judge(_runner(settings), spec)


def test_a_declared_method_the_model_lacks_is_an_error(settings: Settings, models: dict[str, Path]) -> None:
    spec = f"hf/{models['scorer']}"
    settings.judges[spec] = JudgeDeclaration(kind="reward", score_method="get_scores", trust_remote_code=True)
    with pytest.raises(PermanentModelError, match="has no such method"):
        is_reward_judge(_runner(settings), spec)


def test_a_classification_model_needs_no_declaration_and_refuses_a_generative_one(
        settings: Settings, models: dict[str, Path]) -> None:
    spec = f"hf/{models['classifier']}"
    runner = _runner(settings)
    assert is_reward_judge(runner, spec)
    reply = _scored(runner, spec, JudgeInput([], ""))
    assert reply.outcome == VERDICT and json.loads(reply.raw)["reward"]
    settings.judges[spec] = JudgeDeclaration(kind="generative")
    with pytest.raises(PermanentModelError, match="declared kind = \"generative\""):
        is_reward_judge(_runner(settings), spec)


def test_a_reward_declaration_its_provider_cannot_honour_is_an_error(settings: Settings) -> None:
    settings.judges["sim/judge"] = JudgeDeclaration(kind="reward")
    with pytest.raises(PermanentModelError, match="cannot score one answer"):
        is_reward_judge(runner_for(settings), "sim/judge")


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.judged_project import make_selected

    return make_selected(tmp_path_factory.mktemp("declared-project"))


def test_eval_judge_scores_a_declared_remote_code_judge_per_answer(selected: Path, tmp_path: Path,
                                                                   models: dict[str, Path]) -> None:
    """The whole path: `eval judge --judge hf/<scorer>` with the declaration in playlisteval.toml asks two
    reward calls per pair (never the pair prompt); undeclared, every pair is an error naming the fix."""
    from sqlalchemy import text

    from playlisteval.store import open_store
    from tests.judged_project import cli, copy_of, json_lines

    spec = f"hf/{models['scorer']}"
    settings = copy_of(selected, tmp_path / "p")
    undeclared = cli(settings, "eval", "judge", "--judge", spec, "--modality", "transcript", "--json", code=None)
    [failed] = json_lines(undeclared)
    assert undeclared.exit_code != 0 and failed["judged"] == 0 and failed["errors"] == failed["pairs"] > 0
    assert "kind is unknown" in failed["error_messages"][0] and "[judges." in failed["error_messages"][0]
    toml = settings.root / "playlisteval.toml"
    toml.write_text(toml.read_text() + f'\n[judges."{spec}"]\nkind = "reward"\nscore_method = "get_score"\n'
                    'trust_remote_code = true\n')
    settings = copy_of(selected, tmp_path / "q")
    (settings.root / "playlisteval.toml").write_text(toml.read_text())
    [run] = json_lines(cli(settings, "eval", "judge", "--judge", spec, "--modality", "transcript", "--json"))
    assert run["judged"] == run["pairs"] > 0 and run.get("errors", 0) == 0
    with open_store(settings).connect() as c:
        calls = c.execute(text("SELECT status FROM model_call WHERE run_id = :r"), {"r": run["run_id"]}).all()
        raws = [json.loads(r) for (r,) in c.execute(text("SELECT raw FROM judgment WHERE run_id = :r"),
                                                    {"r": run["run_id"]})]
    assert len(calls) == 2 * run["pairs"] and {s for (s,) in calls} <= {"ok", "cached"}  # one per answer
    # the method's score: the answer's length (no frames with --modality transcript), a whole number
    assert all(r["reward"] and r["score_a"] == int(r["score_a"]) > 0 for r in raws)
