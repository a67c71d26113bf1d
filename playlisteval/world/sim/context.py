"""What one sim call can see: the request's labelled text sections, its clips, frames and their worlds.

The sim reads a request the way a model would read its prompt, but by fixed labels at line starts
(`Question:`, `Gold answer:`, `Candidate 2:`, `Model A:` ...), so stage prompts must use them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from playlisteval.config import SimSettings
from playlisteval.models.request import ImagePart, ModelRequest, VideoPart
from playlisteval.world.synth.facts import Evidence
from playlisteval.world.synth.world import World, load_world, scene_at, scenes_in

# Labels that open a section. The text after the colon on the same line belongs to the section.
_LABELS = (
    r"Question|Gold answer|Candidate answer|Model A|Model B|Hop 1|Hop 2|Bridge|Keyword|Row|Column"
    r"|Transcripts?|Rubric|Reference answer(?: sentences)?|Instructions|Criteria|Causal attributes"
    r"|Feedback|Degradation record|(?:Response )?Candidate \d+"
)
_HEADER_RE = re.compile(rf"^\s*#*\s*\**\s*(?P<label>{_LABELS})\s*\**\s*:\s*\**(?P<rest>.*)$", re.I)
# Lines that end a section without opening one: markdown headers, rules, closing tags, bare "Title:".
_END_RE = re.compile(r"^\s*(#|---|===|</[A-Za-z_]+>\s*$|<rubrics>|[A-Z][A-Za-z /()-]{2,60}:\s*$)")
_OPEN_TAG_RE = re.compile(r"^\s*<[A-Za-z_]+>\s*$")  # "<candidate_response>" wraps content: skip it
# Sections that are one paragraph: they also end at a blank line (instructions may follow).
_ONE_PARAGRAPH = {"question", "hop 1", "hop 2", "bridge", "keyword", "row", "column"}


def sections(text: str) -> dict[str, str]:
    """Labelled sections of a prompt, keyed by lower-case label ("candidate 3", "model a")."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        header = _HEADER_RE.match(line)
        if header:
            current = re.sub(r"^response ", "", header["label"].lower())
            current = re.sub(r"\s+", " ", current)
            found[current] = [header["rest"].strip()] if header["rest"].strip() else []
            continue
        if current is None:
            continue
        if _OPEN_TAG_RE.match(line) and line.strip() != "<rubrics>":
            continue
        if _END_RE.match(line) or (not line.strip() and current in _ONE_PARAGRAPH and found[current]):
            current = None
            continue
        found[current].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items()}


@lru_cache(maxsize=512)
def _cached_world(path: str, mtime_ns: int) -> World | None:
    return load_world(path)


def world_of(path: str | None) -> World | None:
    """The world beside a video, cached while its file is unchanged; None when it has none."""
    if not path:
        return None
    try:
        mtime = Path(path).with_name(Path(path).stem + ".world.json").stat().st_mtime_ns
    except OSError:
        return None
    return _cached_world(path, mtime)


@dataclass
class Clip:
    number: int  # 1-based: "Clip 1" is 1
    part: VideoPart
    world: World | None


class SimContext:
    def __init__(self, request: ModelRequest, settings: SimSettings, model: str, rng: random.Random):
        self.request = request
        self.settings = settings
        self.model = model
        self.rng = rng
        self.text = request.text()
        self.sections = sections(self.text)
        # a model name with "weak" in it plays a weaker judge: more position and length bias
        self.weak = "weak" in model.lower()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def section(self, label: str) -> str:
        return self.sections.get(label.lower(), "")

    def numbered(self, label: str) -> dict[int, str]:
        """Sections "<label> N" by their number N (candidates keep the numbering the prompt used)."""
        prefix = label.lower() + " "
        return {int(k[len(prefix):]): v for k, v in self.sections.items()
                if k.startswith(prefix) and k[len(prefix):].isdigit()}

    def clips(self) -> list[Clip]:
        """Video parts as numbered clips: by a "Clip N"/"Video N" label, else by order."""
        videos = [p for p in self.request.parts if isinstance(p, VideoPart)]
        out = []
        for i, part in enumerate(videos, 1):
            m = re.search(r"(\d+)", part.label or "")
            out.append(Clip(int(m.group(1)) if m else i, part, world_of(part.path)))
        return sorted(out, key=lambda c: c.number)

    def evidence(self) -> Evidence:
        """Everything the request's media shows: scenes of the video ranges and of the frames."""
        ev = Evidence()
        for clip in self.clips():
            if clip.world:
                for scene in scenes_in(clip.world, clip.part.start, clip.part.end):
                    ev.add(scene, clip.number, clip.part.start)
        for part in self.request.parts:
            if isinstance(part, ImagePart) and part.timestamp is not None:
                world = world_of(part.source)
                seen = scene_at(world, part.timestamp) if world else None
                if seen:
                    ev.add(seen)
        return ev

    def frame_count(self) -> int:
        return sum(1 for p in self.request.parts if isinstance(p, ImagePart))


def mmss(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 60}:{s % 60:02d}"
