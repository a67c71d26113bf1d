"""The human study's arithmetic (issue 12 item 5): Krippendorff's alpha against a worked example, the
`krippendorff` package and a hand-written coincidence matrix; the attention-check rule; agreement counts;
the stratified allocation; the word-level diff and the reason's word count."""

from __future__ import annotations

import random
from collections import Counter
from itertools import permutations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playlisteval.human.design import allocate
from playlisteval.human.diff import word_diff
from playlisteval.human.results import RatingFacts, TaskFacts, alpha, alpha_interval, summarize, value_counts
from playlisteval.human.words import count_words, reason_problem

NAN = float("nan")
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers, 12 units,
# values 1-5 with missing data; nominal alpha = 0.743
WORKED = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
          [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
          [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
          [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


def coincidence_alpha(units: list[list[str]]) -> float:
    """Nominal alpha from the coincidence matrix, written out by hand (no library)."""
    o: Counter[tuple[str, str]] = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, j in permutations(range(m), 2):
            o[(values[i], values[j])] += 1 / (m - 1)
    n_c: Counter[str] = Counter()
    for (c, _k), w in o.items():
        n_c[c] += w
    n = sum(n_c.values())
    d_o = sum(w for (c, k), w in o.items() if c != k) / n
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n * (n - 1))
    return 1 - d_o / d_e


def test_alpha_matches_krippendorffs_worked_example() -> None:
    units = [[str(int(v)) for v in col if v == v] for col in zip(*WORKED, strict=True)]
    domain = sorted({v for u in units for v in u})
    counts = np.array([[u.count(v) for v in domain] for u in units], dtype=float)
    value = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    assert value == pytest.approx(0.743, abs=5e-4)
    assert coincidence_alpha(units) == pytest.approx(value, abs=1e-12)


def test_alpha_of_ab_ratings_equals_the_package_and_the_hand_count() -> None:
    rng = random.Random(3)
    annotators = [f"w{i}" for i in range(7)]
    matrix = np.full((len(annotators), 40), np.nan)
    units: list[list[str]] = []
    for u in range(40):
        raters = rng.sample(range(len(annotators)), rng.choice([1, 2, 3, 3, 3]))
        truth = rng.choice("AB")
        values = [truth if rng.random() < 0.85 else "AB"[truth == "A"] for _ in raters]
        for r, v in zip(raters, values, strict=True):
            matrix[r, u] = 0.0 if v == "A" else 1.0
        units.append(values)
    ours = alpha(value_counts(units))
    assert ours is not None
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"),
                                 abs=1e-9)
    assert ours == pytest.approx(coincidence_alpha(units), abs=1e-9)


def test_alpha_is_undefined_rather_than_invented() -> None:
    assert alpha(value_counts([["A"], ["B"]])) is None  # no pair rated twice
    assert alpha(value_counts([["A", "A"], ["A", "A", "A"]])) is None  # one value only: no expected disagreement
    assert alpha(value_counts([])) is None


def test_alpha_interval_is_seeded_and_brackets_the_estimate() -> None:
    rng = random.Random(5)
    units = [[rng.choice("AB") if rng.random() < 0.3 else "A" if u % 2 else "B" for _ in range(3)]
             for u in range(60)]
    counts = value_counts(units)
    first = alpha_interval(counts, seed=7, resamples=300, level=0.95)
    again = alpha_interval(counts[::-1], seed=7, resamples=300, level=0.95)  # row order never matters
    assert first is not None and first == again
    estimate = alpha(counts)
    assert estimate is not None and first[0] <= estimate <= first[1]
    assert alpha_interval(counts, seed=7, resamples=0, level=0.95) is None


def _flip(slot: str) -> str:
    return "B" if slot == "A" else "A"


def test_summary_discards_every_rating_of_an_annotator_who_fails_a_check() -> None:
    tasks = [TaskFacts(1, 10, "Art", 1, "A", False), TaskFacts(2, 11, "Art", 2, "B", False),
             TaskFacts(3, 12, "Life", 1, "A", False), TaskFacts(4, 13, "Life", 4, "B", True)]
    ratings = [
        RatingFacts(1, "ann", "A"), RatingFacts(1, "bob", "A"), RatingFacts(1, "cat", "B"),
        RatingFacts(2, "ann", "B"), RatingFacts(2, "bob", "B"), RatingFacts(2, "cat", "B"),
        RatingFacts(3, "ann", "B"), RatingFacts(3, "bob", "B"), RatingFacts(3, "cat", "A"),
        RatingFacts(4, "ann", "B"), RatingFacts(4, "bob", "B"), RatingFacts(4, "cat", "B"),
        RatingFacts(1, "dan", "B"), RatingFacts(3, "dan", "B"), RatingFacts(4, "dan", "A"),  # dan fails the check
    ]
    out = summarize(tasks, ratings, seed=1, resamples=200, level=0.95)
    assert out["annotators_failed"] == ["dan"] and out["n_discarded"] == 3
    assert out["attention_checks"] == {"tasks": 1, "ratings": 4, "passed": 3}
    assert out["n_tasks"] == 3 and out["n_ratings"] == 9 and out["n_planned"] == 3
    assert out["agree_with_intended"] == pytest.approx(6 / 9)  # task 1: 2, task 2: 3, task 3: 1
    assert (out["majority_agrees"], out["majority_overturns"], out["majority_tied"]) == (2, 1, 0)
    assert out["unanimous"] == 1
    assert out["slot_a"] == pytest.approx(3 / 9)
    assert out["alpha"] == pytest.approx(coincidence_alpha([["A", "A", "B"], ["B", "B", "B"], ["B", "B", "A"]]))
    assert [r["domain"] for r in out["by_domain"]] == ["Art", "Life"]
    assert [(r["gap"], r["n_ratings"]) for r in out["by_gap"]] == [(1, 6), (2, 3)]
    low, high = out["agree_with_intended_ci"]
    assert low <= out["agree_with_intended"] <= high


def test_an_even_split_is_a_tie_not_a_majority() -> None:
    tasks = [TaskFacts(1, 1, "Art", 1, "A", False)]
    out = summarize(tasks, [RatingFacts(1, "a", "A"), RatingFacts(1, "b", "B")], seed=1, resamples=10, level=0.9)
    assert (out["majority_agrees"], out["majority_overturns"], out["majority_tied"]) == (0, 0, 1)


def test_allocation_is_proportional_and_sums_to_n() -> None:
    sizes = {("Art", 1): 50, ("Art", 2): 30, ("Life", 1): 15, ("Life", 3): 5}
    quota = allocate(sizes, 10)
    assert sum(quota.values()) == 10 and quota == {("Art", 1): 5, ("Art", 2): 3, ("Life", 1): 2, ("Life", 3): 0}
    assert allocate(sizes, 1000) == sizes  # never more than a stratum holds
    assert allocate(dict(reversed(sizes.items())), 7) == allocate(sizes, 7)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["red", "blue", "the", "circle", "<b>", "&", "\n\n", " "]), max_size=30),
       st.lists(st.sampled_from(["red", "green", "the", "circle", "<b>", "&", "\n\n", " "]), max_size=30))
def test_diff_pieces_rebuild_both_answers_and_number_changes_on_both_sides(a: list[str], b: list[str]) -> None:
    text_a, text_b = " ".join(a), " ".join(b)
    d = word_diff(text_a, text_b)
    assert "".join(p.text for p in d.a) == text_a and "".join(p.text for p in d.b) == text_b
    for side in (d.a, d.b):
        assert sorted({p.change for p in side if p.change is not None}) == list(range(d.changes))
    assert (d.changes == 0) == (text_a.split() == text_b.split())


def test_diff_marks_only_the_changed_words() -> None:
    d = word_diff("A red circle stands at the left.", "A blue circle stands at the left of it.")
    assert d.changes == 2
    assert [p.text for p in d.a if p.change is not None] == ["red", "left."]
    assert [p.text for p in d.b if p.change is not None] == ["blue", "left of it."]


def test_reason_words() -> None:
    assert count_words("Don't pick the left-hand one: it's wrong, 3 times!") == 9
    assert count_words("   ") == 0 and count_words("— … !!") == 0
    assert reason_problem("too short", 20) == "the reason has 2 word(s); at least 20 are required"
    assert reason_problem(" ".join(["word"] * 20), 20) is None
