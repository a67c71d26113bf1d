"""The settings of one judge run (SPEC G1–G6): defaults from ``[eval]``, overridden per run.

A run's settings are stored with it (``judge_run.settings``) so every sweep — thinking level, media
resolution, frame size and count, modality, audio speed — is a pass recorded with what it varied. The
hash of these settings names the run (eval/runkey.py); the run with the configured defaults is the
judge's main run.

The report imports this module (analytics/run_options.py): it imports the names it checks from
eval/modes.py, never eval/evidence.py or eval/judging.py, which pull in the media and model-runner
stacks (0.3 s of every report, issue 13).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import runkey
from playlisteval.eval.modes import MODALITIES, MODES, AudioOptions, check_modality
from playlisteval.eval.scopes import check_scope

THINKING = ("", "minimal", "low", "medium", "high")
MEDIA_RESOLUTIONS = ("", "low", "medium", "high")


@dataclass(frozen=True)
class JudgeOptions:
    evidence: str
    scope: str
    swap: bool
    modality: str
    frames: int
    frames_per_chunk: int
    size: tuple[int, int]
    thinking: str
    media_resolution: str
    audio_mode: str
    audio_speed: float
    audio_pause_s: float
    retriever: str
    # [G6] the agentic judge (issue 20): it finds its own evidence with tools (eval/agent.py); the budgets
    # per pair are part of the run's identity. Recorded only when on, so older runs keep their hash
    agentic: bool = False
    agent_max_steps: int = 0
    agent_max_tokens: int = 0
    # repeated sampling (issue 21): the sampling temperature asked of the judge and which of the N samples
    # this run is (each sample its own run, asked as its own attempt). Recorded only when a temperature is
    # set, so every run made before them keeps its options hash
    temperature: float | None = None
    sample: int = 0

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> JudgeOptions:
        e = settings.eval
        base = cls(evidence=e.evidence, scope=e.scope, swap=False, modality=e.modality, frames=e.frames,
                   frames_per_chunk=e.frames_per_chunk, size=tuple(e.frame_size),  # type: ignore[arg-type]
                   thinking=e.thinking, media_resolution=e.media_resolution, audio_mode=e.audio_mode,
                   audio_speed=e.audio_speed, audio_pause_s=e.audio_pause_s,
                   retriever=e.retriever or settings.index.embedder,
                   agent_max_steps=e.agent_max_steps, agent_max_tokens=e.agent_max_tokens)
        given = {k: v for k, v in overrides.items() if v is not None}
        if given.get("evidence") == "oracle" and "scope" not in given:
            given["scope"] = "oracle"
        return replace(base, **given).checked(settings)

    def checked(self, settings: Settings) -> JudgeOptions:
        if self.evidence not in MODES:
            raise ConfigError(f"unknown evidence {self.evidence!r}; known: {', '.join(MODES)}")
        check_scope(settings, self.scope)
        if self.evidence == "oracle" and self.scope != "oracle":
            raise ConfigError("oracle evidence is the two gold segments: its scope is 'oracle'")
        check_modality(self.modality)
        if self.frames < 1 or self.frames_per_chunk < 1:
            raise ConfigError("frames and frames per chunk must be at least 1")
        if self.size[0] < 16 or self.size[1] < 16:
            raise ConfigError(f"frame size {self.size[0]}x{self.size[1]} is too small")
        if self.thinking not in THINKING:
            raise ConfigError(f"thinking must be one of {', '.join(t or '(default)' for t in THINKING)}")
        if self.media_resolution not in MEDIA_RESOLUTIONS:
            known = ", ".join(m or "(default)" for m in MEDIA_RESOLUTIONS)
            raise ConfigError(f"media resolution must be one of {known}")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ConfigError(f"temperature {self.temperature:g} must be between 0 and 2")
        if self.sample < 0 or (self.sample and self.temperature is None):
            raise ConfigError("a sample index needs a temperature (eval judge --samples N --temperature T)")
        if self.audio_mode not in ("track", "turns"):
            raise ConfigError(f"audio mode {self.audio_mode!r}: track or turns")
        if not 0.5 <= self.audio_speed <= 4.0:
            raise ConfigError(f"audio speed {self.audio_speed:g} must be between 0.5 and 4")
        return self

    @property
    def audio(self) -> AudioOptions:
        return AudioOptions(self.audio_mode, self.audio_speed, self.audio_pause_s)

    @property
    def uses_audio(self) -> bool:
        return MODALITIES[self.modality][1] == "audio"

    def as_settings(self) -> dict[str, Any]:
        """The run's recorded settings (audio ones only when the modality has audio)."""
        data = asdict(self)
        data["size"] = f"{self.size[0]}x{self.size[1]}"
        if not self.uses_audio:
            for key in ("audio_mode", "audio_speed", "audio_pause_s"):
                data.pop(key)
        if self.evidence != "retrieved" and not self.agentic:  # the agent searches with the retriever
            data.pop("retriever")
        if not self.agentic:
            for key in ("agentic", "agent_max_steps", "agent_max_tokens"):
                data.pop(key)
        else:  # it picks its own frames: the fixed-evidence counts do not apply
            for key in ("frames", "frames_per_chunk"):
                data.pop(key)
        if self.temperature is None:  # not sampled: the options (and hash) every earlier run has
            for key in ("temperature", "sample"):
                data.pop(key)
        return data

    @property
    def options_hash(self) -> str:
        """The run's identity besides its judge (eval/runkey.py)."""
        return runkey.options_hash(self.as_settings())


def default_settings(settings: Settings) -> dict[str, dict[str, Any]]:
    """Evidence mode → the recorded settings of a run with the configured defaults (``[eval]``): a run
    whose options match these, apart from scope and side order, is its judge's main run. Modes whose
    defaults cannot be built (a configured scope that does not exist) are left out."""
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        try:
            out[mode] = JudgeOptions.from_settings(settings, evidence=mode).as_settings()
        except ConfigError:
            continue
    return out


def parse_size(text: str) -> tuple[int, int]:
    """"640x480" → (640, 480)."""
    try:
        w, h = text.lower().replace("×", "x").split("x")
        return int(w), int(h)
    except ValueError:
        raise ConfigError(f"frame size {text!r} must look like 640x480") from None
