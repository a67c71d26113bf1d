"""The judge − judge table's discordant cells (issue 41, deliverable 5): per two judges, the pairs where A is
right and B wrong, and B right and A wrong, on the pairs both judged; a no verdict (0.5) is neither. The
viewer's judge-against-judge lists are held to these counts (tests/test_view_bundle.py)."""

from __future__ import annotations

from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.trust import paired_table
from tests.test_trust import observations


def test_the_discordant_cells_count_one_right_and_the_other_wrong_on_common_pairs() -> None:
    a = [1.0, 1.0, 0.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1.0]
    b = [1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 1.0, 0.0, 0.0]
    obs = observations({"a": a, "b": b})
    del obs.scores[2][8]  # judged by A only: not a common pair
    (row,) = paired_table(obs, "retrieved", Bootstrap(seed=1, resamples=200))["rows"]
    assert row["pairs"] == 8
    assert (row["a_right_b_wrong"], row["b_right_a_wrong"]) == (2, 2)  # pairs 1, 7 and 2, 6; 4 and 5 have a 0.5
