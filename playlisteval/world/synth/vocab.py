"""The closed vocabularies of the synthetic world.

Visual words (shapes, colours, backdrops, positions, sign words) and narrated words (topic nouns) are
disjoint sets, so that any text can be read back into facts by word lookup alone: the sim relies on
this to check answers against the world, and `make` relies on it to keep visual facts out of what is
said aloud (the narration must never reveal what only the frames show).
"""

from __future__ import annotations

import random
import re

# name -> glyph drawn with DejaVu Sans (every one of these is in the font)
SHAPES: dict[str, str] = {
    "circle": "\u25cf",
    "square": "\u25a0",
    "triangle": "\u25b2",
    "diamond": "\u25c6",
    "star": "\u2605",
    "heart": "\u2665",
}
# shape colours and backdrop colours never share a name, so a colour word says which slot it fills
COLOURS: dict[str, str] = {
    "red": "0xE53935",
    "orange": "0xFB8C00",
    "yellow": "0xFDD835",
    "green": "0x43A047",
    "cyan": "0x00ACC1",
    "blue": "0x42A5F5",
    "purple": "0xAB47BC",
    "pink": "0xF48FB1",
    "white": "0xFFFFFF",
}
BACKGROUNDS: dict[str, str] = {
    "black": "0x101010",
    "navy": "0x14205A",
    "maroon": "0x4A1010",
    "gray": "0x555555",
    "olive": "0x3A4215",
    "brown": "0x4E3020",
}
POSITIONS: tuple[str, ...] = ("left", "centre", "right")
POSITION_ALIASES = {"center": "centre", "middle": "centre"}

# Sign words are made-up CVCVCV words in capitals: never English, never said aloud, easy to find.
_CONSONANTS = "BDGKLMNPRSTVZ"
_VOWELS = "AEIOU"
SIGN_RE = re.compile(r"\b(?:[BDGKLMNPRSTVZ][AEIOU]){3}\b")
_ENGLISH_SIGNS = {"BEFORE", "DEFINE", "MINUTE", "REMOVE", "RELATE", "DEBATE", "DOMINO", "TOMATO",
                  "POTATO", "BANANA", "SOLUTE", "DELETE", "RESUME", "REMOTE", "DEMOTE", "PARADE",
                  "SALUTE", "LEGATO", "VOLUME", "DENOTE", "RESIDE", "DERIVE", "RETIRE", "REVISE"}


def make_sign(rng: random.Random, taken: set[str]) -> str:
    """A fresh sign word not in ``taken`` (which it extends)."""
    while True:
        word = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(3))
        if word not in taken and word not in _ENGLISH_SIGNS:
            taken.add(word)
            return word


def find_signs(text: str) -> list[str]:
    return [w for w in SIGN_RE.findall(text) if w not in _ENGLISH_SIGNS]


# -- narrated topics: (domain, playlist name, series title, topic nouns) ------------------------------
# Nouns are single words and unique across topics, so one word tells which topic it belongs to.
TOPICS: dict[str, list[tuple[str, str, list[str]]]] = {
    "Education": [
        ("Earth Science Basics", "Earth Science", ["glaciers", "sediment", "erosion", "bedrock",
         "limestone", "magma", "volcanoes", "minerals", "earthquakes", "canyons", "fossils", "aquifers"]),
        ("Cell Biology Explained", "Cell Biology", ["membranes", "proteins", "enzymes", "mitochondria",
         "chromosomes", "ribosomes", "nutrients", "metabolism", "genes", "bacteria", "tissues",
         "hormones"]),
    ],
    "History": [
        ("Ancient Rome", "Rome Rising", ["senators", "legions", "aqueducts", "emperors", "provinces",
         "gladiators", "consuls", "forums", "conquests", "citizens", "tributes", "republic"]),
        ("Medieval Trade", "Merchants of the Middle Ages", ["merchants", "guilds", "caravans", "spices",
         "ports", "markets", "silk", "coins", "monasteries", "castles", "tolls", "pilgrims"]),
    ],
    "Art": [
        ("Renaissance Painting", "Masters of Paint", ["frescoes", "patrons", "perspective", "brushwork",
         "altarpieces", "pigments", "workshops", "portraits", "canvases", "apprentices", "chapels",
         "sketches"]),
        ("Modern Sculpture", "Form and Space", ["marble", "chisels", "plaster", "installations",
         "galleries", "casting", "studios", "abstraction", "pedestals", "curators", "welding", "clay"]),
    ],
    "Documentary": [
        ("Ocean Worlds", "Ocean Worlds", ["coral", "whales", "plankton", "reefs", "currents", "dolphins",
         "kelp", "tides", "seabirds", "trenches", "migration", "octopuses"]),
        ("Desert Life", "Desert Life", ["dunes", "camels", "oases", "scorpions", "cacti", "droughts",
         "nomads", "lizards", "sandstorms", "wells", "mirages", "vultures"]),
    ],
    "Drama": [
        ("The Lighthouse Keepers", "The Keepers", ["keeper", "storm", "letters", "secrets", "island",
         "brother", "shipwreck", "promise", "diary", "fog", "debts", "inheritance"]),
        ("City of Strangers", "City of Strangers", ["detective", "alibi", "witness", "suspect",
         "apartment", "rumours", "betrayal", "landlord", "neighbour", "confession", "mystery",
         "ledger"]),
    ],
    "Life": [
        ("Home Cooking", "Home Kitchen", ["recipes", "dough", "garlic", "onions", "broth", "herbs",
         "ovens", "skillets", "noodles", "butter", "pastries", "seasoning"]),
        ("Everyday Fitness", "Move Daily", ["stretching", "muscles", "posture", "breathing", "jogging",
         "stamina", "joints", "routines", "hydration", "sleep", "recovery", "workouts"]),
    ],
    "Podcasts": [
        ("Tech Talk", "Tech Talk", ["startups", "software", "investors", "algorithms", "privacy",
         "servers", "smartphones", "robots", "engineers", "databases", "founders", "gadgets"]),
        ("Money Matters", "Money Matters", ["budgets", "savings", "mortgages", "pensions", "inflation",
         "debt", "investing", "salaries", "interest", "spending", "retirement", "insurance"]),
    ],
}
DOMAINS: tuple[str, ...] = tuple(TOPICS)

TOPIC_OF_WORD: dict[str, str] = {
    noun: playlist for topics in TOPICS.values() for playlist, _, nouns in topics for noun in nouns
}

# Narration templates: plain sentences that carry topic nouns and nothing visual.
SENTENCES: tuple[str, ...] = (
    "Today we turn to {a} and what they tell us about {b}.",
    "Experts often connect {a} with lasting changes in {b}.",
    "The key idea is that {a} depend on {b} more than most people expect.",
    "Think about how {a} and {b} influence each other over time.",
    "Here the story of {a} takes an unexpected turn.",
    "Without {a}, the role of {b} would be hard to explain.",
    "We will come back to {a} later in this series.",
    "Notice how often {a} appear alongside {b}.",
    "Many listeners ask why {a} matter so much.",
    "The history of {a} is closely tied to {b}.",
    "Let us compare {a} with {b} for a moment.",
    "Some of the best evidence about {a} comes from {b}.",
)

VISUAL_WORDS: frozenset[str] = frozenset(
    [*SHAPES, *COLOURS, *BACKGROUNDS, *POSITIONS, *POSITION_ALIASES]
)
