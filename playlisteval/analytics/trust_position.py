"""Accuracy by where a question's evidence sits (issue 21): the cited segments' position in the playlist and
how many videos apart they are, per judge's main run.

Why apart from trust.py: it is the one trust figure binned by a fact of the question (its segments'
places, trust_data.segment_positions), and its intervals are drawn for every bin of every run at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from playlisteval.analytics.intervals import Request, cluster_sums, dyad_sums, intervals_from_sums
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.trust_data import Observations

POSITION_BINS = (("early", 0.0, 1 / 3), ("middle", 1 / 3, 2 / 3), ("late", 2 / 3, 1.0 + 1e-9))
DISTANCE_BINS = (("same video", 0.0, 0.5), ("adjacent videos", 0.5, 1.5), ("2+ videos apart", 1.5, float("inf")))



def _per_pair(obs: Observations, of: dict[int, float]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Every pair with units (ascending) and its question's value in ``of`` (NaN where it has none: in no
    bin), made once for all runs."""
    every = np.array(sorted(obs.item_of), dtype=np.int64)
    return every, np.fromiter((of.get(obs.item_of[p], np.nan) for p in every.tolist()), dtype=np.float64,
                              count=len(every))


def _binned(obs: Observations, run: int, of: tuple[NDArray[np.int64], NDArray[np.float64]],
            bins: tuple[tuple[str, float, float], ...], boot: Bootstrap, what: str,
            requests: list[Request]) -> list[dict[str, Any]]:
    """The run's bins, each bin's "accuracy" the index of its request in ``requests`` (appended here; its
    interval drawn with every other run's in one batch: position_figures)."""
    # as arrays (50 runs x 3 bins of a loop over every judged pair were most of the position figures): the
    # run's pairs in ascending order with their values (every judged pair has units: trust_data.load)
    pairs, scores = obs.run_arrays(run)
    every, values = of
    value = values[np.searchsorted(every, pairs)]
    out: list[dict[str, Any]] = []
    for name, low, high in bins:
        inside = (low <= value) & (value < high)
        chosen = pairs[inside]
        cell: dict[str, Any] = {"bin": name, "pairs": len(chosen), "accuracy": None}
        if len(chosen):
            second = obs.second(chosen, boot.unit)
            # what cluster_mean(scores, labels, second=second) would send to interval_from_sums: integer codes
            # where the clusters are one unit (the same partition as the names, numbered faster); dyadic
            # clusters number both lists' names together (intervals.dyad_sums)
            if second is None:
                requests.append((*cluster_sums(scores[inside], obs.codes(chosen, boot.unit)), None, None))
            else:
                sums, counts, members = dyad_sums(scores[inside], obs.labels(chosen.tolist(), boot.unit), second)
                requests.append((sums, counts, None, members))
            cell["accuracy"] = (len(requests) - 1, f"accuracy of pairs whose {what}")
        out.append(cell)
    return out


def position_figures(obs: Observations, positions: dict[int, dict[str, float]], evidence: str, boot: Bootstrap
                     ) -> list[dict[str, Any]]:
    """Per judge's main run: accuracy by the cited segments' position in the playlist (early / middle /
    late thirds of its segments) and by how many videos apart the two segments are."""
    where = _per_pair(obs, {q: v["position"] for q, v in positions.items()})
    apart = _per_pair(obs, {q: v["videos_apart"] for q, v in positions.items()})
    requests: list[Request] = []
    out: list[dict[str, Any]] = [
        {"judge": judge, "run": run,
         "by_position": _binned(obs, run, where, POSITION_BINS, boot, "cited segments sit in that third of "
                                "the playlist's segments (mean rank of the two)", requests),
         "by_distance": _binned(obs, run, apart, DISTANCE_BINS, boot, "two segments are that far apart", requests)}
        for judge, run in sorted(obs.main_runs(evidence).items())]
    # every bin of every run at once: the near-ceiling rates' beta-binomial fits in one batch
    # (intervals_from_sums), where one bin at a time cost ~70 ms per such bin; the same numbers as
    # cluster_mean's one at a time
    drawn = intervals_from_sums(requests, seed=boot.seed, resamples=boot.resamples, level=boot.level)
    for figure in out:
        for cell in (*figure["by_position"], *figure["by_distance"]):
            if cell["accuracy"] is not None:
                index, method = cell["accuracy"]
                iv = drawn[index]
                cell["accuracy"] = {**iv.as_dict(), "resamples": boot.resamples, "unit": boot.unit,
                                    "method": f"{method}; {iv.method}"}
    return out
