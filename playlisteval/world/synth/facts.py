"""Reading texts back into world facts: which visual words a sentence claims, and which contradict.

The sim's checkers (C3, D4, judges) use these to compare what an answer says with what a video shows.
Because the vocabularies are closed and disjoint (vocab.py), a word's slot is known from the word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from playlisteval.world.synth import vocab
from playlisteval.world.synth.world import Scene, VisualFacts

SLOTS: tuple[str, ...] = ("sign", "shape", "colour", "background", "position")
_WORD_RE = re.compile(r"[A-Za-z]+")
# "(clip1 @ 0:15 - 0:40, clip2 @ 1:00 - 1:25)": one bracket, ranges separated by commas
CITATION_RE = re.compile(r"\s*\((?:[^()]*@[^()]*)\)")
_RANGE_RE = re.compile(r"(?:clip\s*(\d+)\s*@\s*)?(\d+):(\d{1,2})\s*-\s*(\d+):(\d{1,2})", re.IGNORECASE)


def slot_of(word: str) -> str | None:
    low = word.lower()
    if low in vocab.SHAPES:
        return "shape"
    if low in vocab.COLOURS:
        return "colour"
    if low in vocab.BACKGROUNDS:
        return "background"
    if low in vocab.POSITIONS or low in vocab.POSITION_ALIASES:
        return "position"
    if vocab.SIGN_RE.fullmatch(word) and word not in vocab._ENGLISH_SIGNS:
        return "sign"
    return None


def normalise(word: str) -> str:
    """The canonical form of a visual word: signs upper case, the rest lower, centre for center."""
    if slot_of(word) == "sign":
        return word
    low = word.lower()
    return vocab.POSITION_ALIASES.get(low, low)


def claims(text: str) -> dict[str, set[str]]:
    """The visual words a text uses, by slot."""
    found: dict[str, set[str]] = {slot: set() for slot in SLOTS}
    for word in _WORD_RE.findall(strip_citations(text)):
        slot = slot_of(word)
        if slot:
            found[slot].add(normalise(word))
    return found


def visual_words(text: str) -> list[str]:
    """Every visual word of a text in order of first use (no repeats)."""
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(strip_citations(text)):
        if slot_of(word):
            seen.setdefault(normalise(word), None)
    return list(seen)


def topic_words(text: str) -> list[str]:
    """The narrated topic nouns a text uses, in order (repeats kept)."""
    return [w.lower() for w in _WORD_RE.findall(text) if w.lower() in vocab.TOPIC_OF_WORD]


def strip_citations(text: str) -> str:
    return CITATION_RE.sub("", text)


def citation_ranges(sentence: str) -> list[tuple[int | None, float, float]]:
    """(clip number or None, start s, end s) for every range cited in a sentence (clip-relative)."""
    out = []
    for bracket in CITATION_RE.findall(sentence):
        clip: int | None = None
        for m in _RANGE_RE.finditer(bracket):
            clip = int(m.group(1)) if m.group(1) else clip
            out.append((clip, float(int(m.group(2)) * 60 + int(m.group(3))),
                        float(int(m.group(4)) * 60 + int(m.group(5)))))
    return out


def sentences(text: str) -> list[str]:
    """Sentences (citations kept with the sentence they close)."""
    parts = re.split(r"(?<=[.!?])\s+|\n\s*\n", text.strip())
    return [p.strip() for p in parts if p.strip()]


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def mismatches(said: dict[str, set[str]], shown: VisualFacts) -> int:
    """How many visual words a sentence claims that the shown scene contradicts."""
    truth = shown.words()
    return sum(1 for slot in SLOTS for word in said[slot] if word != truth[slot])


@dataclass
class Evidence:
    """What a reader of some video ranges or frames can see: scenes by sign, plus time lookups."""

    scenes: list[Scene] = field(default_factory=list)
    by_clip: dict[int, list[tuple[float, Scene]]] = field(default_factory=dict)  # clip -> (offset, scene)

    def add(self, scene: Scene, clip: int | None = None, clip_start: float = 0.0) -> None:
        if all(s is not scene for s in self.scenes):
            self.scenes.append(scene)
        if clip is not None:
            self.by_clip.setdefault(clip, []).append((clip_start, scene))

    def by_sign(self, signs: set[str]) -> Scene | None:
        for scene in self.scenes:
            if scene.visual.sign in signs:
                return scene
        return None

    def cited(self, sentence: str) -> list[Scene]:
        found = []
        for clip, a, b in citation_ranges(sentence):
            for offset, scene in self.by_clip.get(clip or 1, []):
                if scene.start < offset + b and scene.end > offset + a:
                    found.append(scene)
        return found

    def anchor(self, sentence: str, *, best_match: bool = False) -> Scene | None:
        """The scene a sentence talks about: by its sign, else by its citation, else (optionally)
        the visible scene it fits best. None when the reader cannot tell."""
        said = claims(sentence)
        scene = self.by_sign(said["sign"])
        if scene:
            return scene
        pool = self.cited(sentence) or (self.scenes if best_match else [])
        if not pool or not any(said[s] for s in SLOTS):
            return None
        return min(pool, key=lambda s: mismatches(said, s.visual))

    def contradictions(self, text: str, *, best_match: bool = False) -> tuple[int, int]:
        """(visual words contradicted by the evidence, sentences the evidence could check)."""
        wrong = checked = 0
        for sentence in sentences(text):
            scene = self.anchor(sentence, best_match=best_match)
            if scene is not None:
                checked += 1
                wrong += mismatches(claims(sentence), scene.visual)
        return wrong, checked
