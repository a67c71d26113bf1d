"""The world of a synthetic video: what each scene shows and says, written beside the video.

`<video stem>.world.json` is the ground truth the sim plays every model role from. Visual facts are
what only the frames show; the narration is what is said aloud and never states a visual fact, so a
question about the visual facts needs the video (SPEC B3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from playlisteval.errors import MediaError
from playlisteval.models.simulated import world_path  # the sim finds the facts there

WORLD_VERSION = 1


class VisualFacts(BaseModel):
    """What the frames of one scene show (and the narration never says)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shape: str  # a key of vocab.SHAPES
    colour: str  # the shape's colour, a key of vocab.COLOURS
    position: Literal["left", "centre", "right"]  # where the shape stands in the frame
    background: str  # the backdrop colour, a key of vocab.BACKGROUNDS
    sign: str  # the on-screen sign text (one made-up capitalised word, vocab.SIGN_RE)

    def words(self) -> dict[str, str]:
        return {"shape": self.shape, "colour": self.colour, "position": self.position,
                "background": self.background, "sign": self.sign}


class Scene(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    start: float  # seconds, inclusive
    end: float  # seconds, exclusive
    visual: VisualFacts
    narration: str  # what is said aloud during the scene
    topic_words: list[str] = Field(default_factory=list)  # the topic nouns the narration uses


class World(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = WORLD_VERSION
    title: str  # the video title, e.g. "Earth Science Episode 2"
    domain: str
    playlist: str
    episode: int
    topic: str  # the playlist's topic key in vocab.TOPICS (its playlist name)
    duration: float  # seconds
    seed: int
    scenes: list[Scene]


def load_world(video_path: str | Path) -> World | None:
    """The world written beside ``video_path``, or None when the video has none (not synthetic)."""
    path = world_path(video_path)
    if not path.is_file():
        return None
    try:
        return World.model_validate_json(path.read_text())
    except ValueError as exc:  # pydantic's ValidationError and JSON errors both derive from it
        raise MediaError(path, f"unreadable world file: {exc}") from None


def save_world(world: World, video_path: str | Path) -> Path:
    path = world_path(video_path)
    path.write_text(world.model_dump_json(indent=1))
    return path


def scenes_in(world: World, start: float, end: float) -> list[Scene]:
    """Scenes that overlap the half-open range [start, end)."""
    return [s for s in world.scenes if s.start < end and s.end > start]


def scene_at(world: World, t: float) -> Scene | None:
    for scene in world.scenes:
        if scene.start <= t < scene.end:
            return scene
    # the last frame of a video sits exactly at its end: it still shows the last scene
    if world.scenes and t == world.scenes[-1].end:
        return world.scenes[-1]
    return None


def facts_visible_at(world: World, t: float) -> VisualFacts | None:
    """What a frame taken at ``t`` seconds shows, or None outside the video."""
    scene = scene_at(world, t)
    return scene.visual if scene else None
