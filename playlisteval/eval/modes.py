"""The names a judge run's options are checked against (SPEC G1, G4): evidence modes, modalities and the
audio options, with nothing else imported.

They live apart from the code that uses them (eval/evidence.py, eval/judging.py, which pull in the media,
embedder and model-runner stacks) because the report needs them too: it works out each run's options
against the configured defaults (analytics/run_options.py → eval/options.py), and importing the runner
stack for three constants cost 0.3 s of every report (issue 13).
"""

from __future__ import annotations

from dataclasses import dataclass

from playlisteval.errors import ConfigError

MODES = ("retrieved", "uniform", "oracle")

#: modality → (frames shown, second stream)
MODALITIES: dict[str, tuple[bool, str | None]] = {
    "frames+transcript": (True, "transcript"),
    "frames": (True, None),
    "transcript": (False, "transcript"),
    "frames+audio": (True, "audio"),
    "audio": (False, "audio"),
    # issue 21: the blind run — the question and the two answers only; its accuracy against the video
    # run's says how much the video matters (a benchmark answerable blind tests no video understanding)
    "none": (False, None),
}


def check_modality(modality: str) -> str:
    if modality not in MODALITIES:
        raise ConfigError(f"unknown modality {modality!r}; known: {', '.join(MODALITIES)}")
    return modality


@dataclass(frozen=True)
class AudioOptions:
    mode: str = "track"
    speed: float = 1.0
    pause_s: float = 0.6
