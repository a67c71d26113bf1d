"""Rewording of the sim's wrong answers (D1): each one gets its own length, shorter or longer than the
gold, so that no judge can rank answers by counting words (SPEC F4: the longer answer is the better
one in 41.7 % of the paper's pairs; chosen-minus-rejected is -2.2 words). Each also gets a vocabulary
(distinct content words) of its own, drawn around the gold's: otherwise the gold, worded once and
plainly, would always have the fewest distinct words, and any judge that scores an answer by the share
of its words found in the transcript would pick it without looking at a frame.

The edits change only neutral wording: a phrase swapped for a shorter or longer one that says the same
thing (the same way everywhere in the answer, as one writer would), a clause added at the end of a
sentence, the closing sentence dropped when it claims nothing. No edit adds, removes or moves a visual
word, a narrated topic word or a citation, and every sentence keeps its place (except a closing
sentence with no claims), so what the frames contradict, and where, is exactly what the visual swaps
made it: D4 and the sim judges see the same errors as before.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from playlisteval.world.synth import facts, vocab

# A wrong answer's length relative to the gold's, as a share of the gold's words, drawn uniformly per
# answer and independently of its rating. Slightly more room upwards: in the paper the degraded answers
# run a little longer than the gold (245.1 against 234.6 words), so the longer answer wins a little
# under half the pairs.
SPREAD = (-0.14, 0.18)
VOCAB_SPREAD = (-4, 4)  # distinct words more or fewer than the gold's, drawn per answer like the length
VOCAB_WEIGHT = 3  # how much more a distinct word off its target weighs than a word off its target
TOLERANCE = 1  # words off the drawn targets (a distinct word off weighs VOCAB_WEIGHT): close enough
PASSES = 4  # sweeps over the edit slots when steering towards the drawn length
P_KEEP_PHRASE = 0.5  # before steering: a phrase keeps the gold's wording with this chance
P_CLAUSE = 0.12  # before steering: a sentence gets an extra clause with this chance

# Phrases the sim's gold uses, each with rewordings of other lengths ("\1" keeps a captured sign,
# ordinal or word). The first letter of a replacement takes the case of the phrase it replaces.
_PHRASES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple((re.compile(p), alts) for p, alts in (
    (r'\bWhen the sign ("[^"]+") is on screen,', (
        r"under the sign \1,", r"with the sign \1 on screen,", r"while the sign \1 is on screen,",
        r"at the point where the sign \1 appears on screen,",
        r"during the stretch in which the sign \1 stays visible on screen,")),
    (r"\bIn the (first|second) moment,", (
        r"\1,", r"at the \1 moment,", r"turning to the \1 moment of the two,",
        r"in the \1 of the two moments the question points to,")),
    (r"\brests at the\b", ("sits at the", "is placed at the", "can be seen resting at the",
                          "rests quite clearly at the")),
    (r"\bstands at the\b", ("sits at the", "appears at the", "can be found standing at the",
                           "is shown standing at the")),
    (r"\bbeneath the sign\b", ("under the sign", "below the on-screen sign", "directly beneath the sign")),
    (r" of the frame\b", ("", " of the picture", " of the frame as it is shown", " of the frame itself")),
    (r"\bwhile the narrator speaks of\b", (
        "as the narrator discusses", "during talk of", "as the narrator speaks of",
        "at the same moment the narrator is speaking of", "just as the voice-over turns to")),
    (r"\bTaken together, the\b", ("the", "read side by side, the", "putting the two moments side by side, the")),
    (r"\banchors the discussion of\b", ("anchors talk of", "grounds the discussion of",
                                        "serves as the visual anchor for the discussion of")),
    (r"\bcarries the same theme into\b", ("carries the theme into", "extends the theme to",
                                          "carries that same theme forward into the discussion of")),
    (r" Both moments therefore tie what is said to what the frames show\.", (
        "", " So what is said and what is shown line up.",
        " Both moments therefore tie what is said aloud to what the frames actually show on screen.")),
))
# Clauses that fit the end of any descriptive sentence and claim nothing checkable.
CLAUSES: tuple[str, ...] = (
    "as the frames make plain", "which is easy to miss", "a detail worth noting",
    "and this is the main visual cue", "which the comparison depends on", "a point the question turns on",
    "and the framing makes this unmistakable", "so the link is visual rather than spoken",
    "which sets up the contrast that follows", "clearly and for several seconds",
    "in a deliberate and steady composition", "a choice that draws the eye",
    "which is what the viewer is meant to register", "held long enough to be read with ease",
)
# Function words: a rewording that trades one for another does not make an answer's vocabulary richer.
_FUNCTION = frozenset({
    "the", "and", "for", "with", "when", "while", "under", "also", "into", "that", "this", "what", "which",
    "from", "its", "are", "was", "were", "has", "have", "been", "being", "than", "then", "them", "they",
    "their", "there", "these", "those", "both", "each", "more", "most", "other", "some", "such", "only",
    "very", "over", "about", "between", "who", "will", "would", "can", "just",
})
_TOKEN = re.compile(r"\S*[A-Za-z0-9]\S*")
# Where a clause can go: before a sentence's closing citations and its final stop.
_SENTENCE_END = re.compile(r"(?:\s*\([^()]*@[^()]*\))*[.!?](?=\s|$)")


@dataclass
class _Slot:
    """Places edited together, and the texts each option puts there (option 0: what is there now)."""

    spans: list[tuple[int, int]]
    options: list[list[str]]
    choice: int = 0


def words(text: str) -> int:
    """Words as a reader (or a length shortcut) counts them: punctuation alone is not a word."""
    return len(_TOKEN.findall(text))


def vocabulary(text: str) -> set[str]:
    """The distinct content words (citations and function words left out): how varied the wording is."""
    return {w for w in re.findall(r"[a-z]{3,}", facts.strip_citations(text).lower()) if w not in _FUNCTION}


def _cased(new: str, old: str) -> str:
    lead = old[:1] if old[:1].strip() else old[1:2]
    first = next((i for i, ch in enumerate(new) if ch.isalpha()), None)
    if first is None or not lead.isalpha():
        return new
    ch = new[first].upper() if lead.isupper() else new[first].lower()
    return new[:first] + ch + new[first + 1:]


def is_neutral(sentence: str) -> bool:
    """A sentence with no visual word, no narrated topic word and no citation claims nothing."""
    return not (facts.visual_words(sentence) or facts.topic_words(sentence) or facts.CITATION_RE.search(sentence))


def _slots(text: str, rng: random.Random) -> list[_Slot]:
    found: list[_Slot] = []
    for pattern, alts in _PHRASES:  # one slot per phrase: a writer keeps to one wording throughout
        matches = list(pattern.finditer(text))
        if matches:
            options = [[m.group(0) for m in matches]] + [
                [_cased(m.expand(a), m.group(0)) for m in matches] for a in alts]
            unique = [list(o) for o in dict.fromkeys(tuple(o) for o in options)]
            found.append(_Slot([m.span() for m in matches], unique))
    closing = facts.sentences(facts.paragraphs(text)[-1]) if text.strip() else []
    if len(closing) >= 2 and is_neutral(closing[-1]):  # the answer's last sentence, if it claims nothing
        end = len(text.rstrip())
        start = len(text[:end - len(closing[-1])].rstrip())
        found.append(_Slot([(start, end)], [[text[start:end]], [""]]))
    for m in _SENTENCE_END.finditer(text):
        found.append(_Slot([(m.start(), m.start())], [[""], *([", " + c] for c in rng.sample(CLAUSES, 3))]))
    kept: list[_Slot] = []  # first come, first kept: a slot that overlaps a kept one is dropped
    taken: list[tuple[int, int]] = []
    for slot in found:
        if all(b <= a0 or a >= b0 for a, b in slot.spans for a0, b0 in taken):
            kept.append(slot)
            taken += slot.spans
    return kept


def _render(text: str, slots: list[_Slot]) -> str:
    edits = [(a, b, new) for slot in slots for (a, b), new in zip(slot.spans, slot.options[slot.choice], strict=True)]
    for a, b, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:a] + new + text[b:]
    return text


def reword(text: str, gold: str, rng: random.Random) -> str:
    """``text`` reworded to a length and a vocabulary of its own, both drawn around the gold's and
    independently of how wrong the text is; only neutral wording changes (see the module's docstring)."""
    gold_words, gold_vocab = words(facts.strip_citations(gold)), len(vocabulary(gold))
    target_words = gold_words + round(gold_words * rng.uniform(*SPREAD))
    target_vocab = gold_vocab + rng.randint(*VOCAB_SPREAD)
    slots = _slots(text, rng)
    for slot in slots:  # a first, unsteered rewording, so that answers of equal length still differ
        if slot.spans[0][0] == slot.spans[0][1]:
            slot.choice = rng.randrange(1, len(slot.options)) if rng.random() < P_CLAUSE else 0
        elif len(slot.options) > 2 and rng.random() >= P_KEEP_PHRASE:
            slot.choice = rng.randrange(len(slot.options))

    def miss() -> int:  # a distinct word counts for more than a word: there are fewer of them
        out = facts.strip_citations(_render(text, slots))
        return abs(words(out) - target_words) + VOCAB_WEIGHT * abs(len(vocabulary(out)) - target_vocab)

    current = miss()
    for _ in range(PASSES):  # steer, one slot at a time, towards the drawn length and vocabulary
        order = list(slots)
        rng.shuffle(order)
        for slot in order:
            if current <= TOLERANCE:
                break
            was, scores = slot.choice, []
            for i in range(len(slot.options)):
                slot.choice = i
                scores.append(miss())
            best = min(scores)
            slot.choice = rng.choice([i for i, v in enumerate(scores) if v == best]) if best < current else was
            current = min(best, current)
    return _render(text, slots)


def clean_vocabulary() -> bool:
    """True when no rewording brings a visual or narrated word of its own (tests check it)."""
    texts = [a for _, alts in _PHRASES for a in alts] + list(CLAUSES)
    return not any(facts.slot_of(w) or w.lower() in vocab.TOPIC_OF_WORD
                   for t in texts for w in re.findall(r"[A-Za-z]+", t.replace(r"\1", "")))
