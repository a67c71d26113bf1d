"""Issue 21 wiring: power, the judge − judge table with Holm, position and best-of-5 from a benchmark's
judgments, and `playlisteval check` — each figure against a direct computation."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats
from sqlalchemy import text

from playlisteval.analytics import power
from playlisteval.analytics.intervals import cluster_difference, cluster_mean
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.sign_flips import sign_flip_p
from playlisteval.analytics.trust import paired_table, power_figures
from playlisteval.analytics.trust_data import Observations, Run
from playlisteval.analytics.trust_position import DISTANCE_BINS, POSITION_BINS, position_figures
from playlisteval.cli import main
from playlisteval.store import open_store
from tests import analytics_fixtures, stat_reference
from tests.helpers import project

BOOT = Bootstrap(seed=11, resamples=500)


def observations(judges: dict[str, list[float]], per_question: int = 3) -> Observations:
    obs = Observations()
    for run_id, (judge, scores) in enumerate(sorted(judges.items()), start=1):
        obs.runs[run_id] = Run(run_id, judge, "retrieved", "domain", False, "frames+transcript", {}, True)
        for pair, score in enumerate(scores):
            obs.scores[run_id][pair] = score
            q = pair // per_question
            obs.units[pair] = {"question": f"q{q}", "video": f"v{q // 2}", "playlist": f"p{q // 4}",
                               "video_b": f"v{(q * 7) % 9 // 2}", "playlist_b": f"p{q // 4}"}
            obs.item_of[pair] = q
            obs.ratings[pair] = (5, 4)
    return obs


def test_paired_table_matches_a_direct_computation_and_holm_by_hand() -> None:
    rng = np.random.default_rng(3)
    judges = {name: rng.binomial(1, p, 60).astype(float).tolist() for name, p in (("a", 0.8), ("b", 0.5), ("c", 0.45))}
    for scores in judges.values():  # a no-verdict (0.5) each: not 0/1, so the CR2 t (0/1 judges: MOVER, test_mover)
        scores[7] = 0.5
    table = paired_table(observations(judges), "retrieved", BOOT)
    assert [(r["judge_a"], r["judge_b"]) for r in table["rows"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    raw = []
    for r in table["rows"]:
        d = np.array(judges[r["judge_a"]]) - np.array(judges[r["judge_b"]])
        assert r["difference"]["estimate"] == np.mean(d)
        totals = [d[q * 3:(q + 1) * 3].sum() for q in range(20)]
        # equal questions of 3 pairs: the cluster-robust t is the one-sample t of the questions' means
        assert r["p_value"] == pytest.approx(float(stats.ttest_1samp(np.array(totals) / 3, 0.0).pvalue), rel=1e-9)
        assert r["difference"]["p_sign_flip"] == sign_flip_p(totals)
        assert r["difference"]["method"] and r["difference"]["clusters"] == 20 and r["difference"]["resamples"] == 500
        raw.append(r["p_value"])
    order = np.argsort(raw)  # Holm by hand: sorted, times (m - rank), running max, capped at 1
    expected = np.maximum.accumulate(np.minimum(1, (3 - np.arange(3)) * np.array(raw)[order]))
    assert [table["rows"][i]["p_holm"] for i in order] == expected.tolist()
    assert table["m"] == 3 and "Holm" in table["method"]


def test_paired_table_on_arrays_equals_the_same_statistics_on_lists_and_labels() -> None:
    """The table takes each run's scores as arrays and the clusters as integer codes; every number must be
    what the statistics give on the lists and string labels (pairs judged by one judge only left out)."""
    rng = np.random.default_rng(8)
    judges = {name: rng.choice([0.0, 0.5, 1.0], 90).tolist() for name in ("a", "b", "c")}
    obs = observations(judges, per_question=4)
    del obs.scores[2][5], obs.scores[3][17], obs.scores[3][40]  # b and c each miss pairs
    table = paired_table(obs, "retrieved", BOOT)
    for row in table["rows"]:
        sa, sb = obs.scores[row["run_a"]], obs.scores[row["run_b"]]
        pairs = sorted(set(sa) & set(sb))
        xa, xb = [sa[p] for p in pairs], [sb[p] for p in pairs]
        labels = [obs.units[p]["question"] for p in pairs]
        want = cluster_difference(xa, xb, labels, seed=BOOT.seed, resamples=BOOT.resamples).as_dict()
        same = [k for k in want if k != "method"]  # the row's method names the comparison too
        assert row["pairs"] == len(pairs) and {k: row["difference"][k] for k in same} == {k: want[k] for k in same}
        d = [x - y for x, y in zip(xa, xb, strict=True)]
        unit = power.paired_power(d, {"question": labels})["units"]["question"]
        assert row["mde"] == unit["mde"]
    assert obs.codes([17, 0, 4], "video").tolist() == [2, 0, 0]  # pair 17 is in v2; 0 and 4 in v0
    with pytest.raises(KeyError, match="pair 999"):  # a pair without units is refused, as labels() refuses it
        obs.codes([0, 999], "question")


def test_power_figures_give_an_mde_per_unit_equal_to_the_formula() -> None:
    rng = np.random.default_rng(5)
    judges = {"sim/a": rng.binomial(1, 0.7, 48).astype(float).tolist(),
              "sim/b": rng.binomial(1, 0.6, 48).astype(float).tolist()}
    got = power_figures(observations(judges, per_question=4), "retrieved")
    assert set(got["units"]) == {"question", "video", "playlist"}
    d = np.array(judges["sim/a"]) - np.array(judges["sim/b"])
    q = got["units"]["question"]
    labels = [f"q{i // 4}" for i in range(48)]
    icc = power.icc_oneway(d, labels)
    assert q["icc"] == icc
    deff = power.design_effect([4] * 12, icc or 0.0)
    expected = power.minimum_detectable_difference(float(np.std(d, ddof=1)), 48, deff, clusters=12)
    assert abs(q["mde"] - expected) < 1e-12 and got["clusters"]["question"] == 12


def test_position_bins_hold_the_pairs_of_their_third() -> None:
    obs = observations({"j": [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]}, per_question=2)  # questions 0, 1, 2
    positions = {0: {"position": 0.1, "videos_apart": 0.0}, 1: {"position": 0.5, "videos_apart": 1.0},
                 2: {"position": 0.9, "videos_apart": 3.0}}
    (fig,) = position_figures(obs, positions, "retrieved", BOOT)
    assert [(c["bin"], c["pairs"], c["accuracy"]["estimate"]) for c in fig["by_position"]] == [
        ("early", 2, 0.5), ("middle", 2, 1.0), ("late", 2, 0.5)]
    assert [c["pairs"] for c in fig["by_distance"]] == [2, 2, 2]


@pytest.mark.parametrize("unit", ["question", "video"])
def test_position_bins_drawn_together_are_each_bin_s_own_interval(unit: str) -> None:
    """Every bin of every run goes through one intervals_from_sums batch: each cell is what cluster_mean
    gives that bin alone (near-ceiling bins take the beta-binomial; by video the clusters are dyadic)."""
    rng = np.random.default_rng(5)
    judges = {"a": rng.binomial(1, 0.97, 120).astype(float).tolist(),
              "b": rng.binomial(1, 0.6, 120).astype(float).tolist(), "c": [1.0] * 120}
    obs = observations(judges, per_question=3)
    positions = {q: {"position": float(rng.random()), "videos_apart": float(rng.integers(0, 4))} for q in range(40)}
    boot = Bootstrap(seed=11, resamples=500, unit=unit)
    figures = position_figures(obs, positions, "retrieved", boot)
    assert len(figures) == 3
    for fig in figures:
        pairs, scores = obs.run_arrays(fig["run"])
        for key, field, bins in (("by_position", "position", POSITION_BINS), ("by_distance", "videos_apart",
                                                                             DISTANCE_BINS)):
            for cell, (name, low, high) in zip(fig[key], bins, strict=True):
                inside = [i for i, p in enumerate(pairs.tolist()) if low <= positions[obs.item_of[p]][field] < high]
                chosen = [int(pairs[i]) for i in inside]
                assert cell["bin"] == name and cell["pairs"] == len(chosen)
                if not chosen:
                    assert cell["accuracy"] is None
                    continue
                alone = cluster_mean(scores[inside], obs.labels(chosen, unit), seed=boot.seed,
                                     resamples=boot.resamples, level=boot.level, second=obs.second(chosen, unit))
                assert cell["accuracy"] == {**alone.as_dict(), "resamples": boot.resamples, "unit": unit,
                                            "method": cell["accuracy"]["method"]}
                assert cell["accuracy"]["method"].endswith(alone.method)


def test_power_and_leaderboard_json_on_a_store(tmp_path: Path) -> None:
    settings = project(tmp_path)
    analytics_fixtures.build(open_store(settings))
    runner = CliRunner()
    out = runner.invoke(main, ["--project", str(tmp_path), "power", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert set(got["units"]) == {"question", "video", "playlist"} and got["judges"] == ["alpha", "beta"]
    board = runner.invoke(main, ["--project", str(tmp_path), "leaderboard", "--json"])
    assert board.exit_code == 0, board.output
    doc = json.loads(board.output)
    assert {"rows", "intervals", "paired", "power"} <= set(doc)
    (row,) = doc["paired"]["rows"]  # alpha vs beta on p1 and p3: alpha 1, 0; beta 1, 1
    assert (row["judge_a"], row["judge_b"], row["pairs"]) == ("alpha", "beta", 2)
    assert row["difference"]["estimate"] == -0.5 and row["p_holm"] == row["p_value"]


def test_check_exits_3_when_a_video_changes_and_names_the_pairs(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = open_store(settings)
    fx = analytics_fixtures.build(engine)
    files = {}
    with engine.begin() as conn:
        for (video_id,) in conn.execute(text("SELECT id FROM video WHERE status = 'indexed'")).all():
            path = tmp_path / f"{video_id}.mp4"
            path.write_bytes(f"video {video_id}".encode())
            files[video_id] = path
            conn.execute(text("UPDATE video SET path = :p, sha256 = :h WHERE id = :i"),
                         {"p": str(path), "h": hashlib.sha256(path.read_bytes()).hexdigest(), "i": video_id})
    runner = CliRunner()
    ok = runner.invoke(main, ["--project", str(tmp_path), "check", "--benchmark", "bench-1", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["problems"] == []
    item1_video = min(files)  # item 1's segments are in the first video
    files[item1_video].write_bytes(b"re-encoded")
    bad = runner.invoke(main, ["--project", str(tmp_path), "check", "--benchmark", "bench-1", "--json"])
    assert bad.exit_code == 3, bad.output
    got = json.loads(bad.stdout)
    assert got["changed"] == 1 and got["affected_pairs"] == sorted([fx.pairs["p1"], fx.pairs["p2"]])
    files[item1_video].unlink()
    gone = runner.invoke(main, ["--project", str(tmp_path), "check", "--benchmark", "bench-1"])
    assert gone.exit_code == 3 and "missing" in gone.output


def test_blind_run_is_compared_with_the_same_judges_video_run() -> None:
    from playlisteval.analytics.trust import blind_figures
    from playlisteval.eval.modes import MODALITIES

    assert MODALITIES["none"] == (False, None)  # no frames, no second stream: question and answers only
    obs = observations({"j": [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]}, per_question=2)
    obs.runs[2] = Run(2, "j", "retrieved", "domain", False, "none", {"modality": "none"}, False)
    for pair, score in enumerate([0.0, 1.0, 0.0, 0.5, 1.0, 0.0]):
        obs.scores[2][pair] = score
    (fig,) = blind_figures(obs, BOOT)
    assert fig["video_run"] == 1 and fig["accuracy"]["estimate"] == 2.5 / 6
    assert fig["difference"]["estimate"] == (5 - 2.5) / 6 and fig["difference"]["clusters"] == 3


def test_the_shortcut_audit_has_each_judges_blind_run(tmp_path: Path) -> None:
    """A `--modality none` run is audited like a shortcut: its accuracy against 50 % with the audit's
    interval, the same numbers as a direct bootstrap of its scores by question."""
    from playlisteval.analytics import Analytics, science
    from playlisteval.analytics.intervals import cluster_mean
    from playlisteval.eval import runkey
    from playlisteval.store import transaction
    from playlisteval.store.tables import JudgeRun, Judgment

    settings = project(tmp_path)
    engine = open_store(settings)
    fx = analytics_fixtures.build(engine)
    boot = Bootstrap(seed=7, resamples=400)
    with Analytics(engine, settings) as an:
        assert not [r for r in science.shortcut_audit(an, {"id": fx.benchmark_id}, boot) if r.get("blind")]
    recorded = {**analytics_fixtures.DEFAULTS["retrieved"], "scope": "domain", "swap": False, "modality": "none"}
    scores = {"p1": 1.0, "p2": 1.0, "p3": 0.5, "p4": 1.0}
    with transaction(engine) as s:
        for swapped in (False, True):  # the swapped pass is not the audit's (forward sides, as the shortcuts)
            run = JudgeRun(benchmark_id=fx.benchmark_id, judge="alpha", evidence="retrieved", scope="domain",
                           swapped=swapped, modality="none", settings={**recorded, "swap": swapped},
                           options_hash=runkey.options_hash({**recorded, "swap": swapped}))
            s.add(run)
            s.flush()
            for name, score in scores.items():
                s.add(Judgment(run_id=run.id, pair_id=fx.pairs[name], a_is_better=True,
                               verdict=None if score == 0.5 else "A" if score else "B", score=score if not swapped
                               else 0.0))
    with Analytics(engine, settings) as an:
        audit = science.shortcut_audit(an, {"id": fx.benchmark_id}, boot)
    [blind] = [r for r in audit if r.get("blind")]
    assert blind["shortcut"] == "alpha, blind" and blind["source"] == "--modality none run (retrieved, domain)"
    items = {"p1": 1, "p2": 1, "p3": 4, "p4": 4}  # the fixture's pairs' questions
    direct = cluster_mean(list(scores.values()), [items[p] for p in scores], seed=7, resamples=400, null=0.5)
    got = blind["accuracy_ci"]
    assert (got.estimate, got.n, got.clusters) == (3.5 / 4, 4, 2)
    assert (got.low, got.high) == pytest.approx((direct.low, direct.high))
    assert got.p_value == pytest.approx(direct.p_value) and blind["flagged"] == got.excludes(0.5)


def test_paired_table_by_video_is_dyadic_over_both_videos_of_a_pair() -> None:
    """Issue 40: by video, a pair belongs to the videos of both its segments; the table's difference is the
    dyadic interval over them (on Bell–McCaffrey's df, below videos − 1), no sign-flip check."""
    rng = np.random.default_rng(5)
    judges = {name: rng.binomial(1, p, 60).astype(float).tolist() for name, p in (("a", 0.8), ("b", 0.5))}
    obs = observations(judges)
    by_video = Bootstrap(seed=11, resamples=500, unit="video")
    row = paired_table(obs, "retrieved", by_video)["rows"][0]
    pairs = sorted(obs.scores[1])
    want = cluster_difference(judges["a"], judges["b"], obs.labels(pairs, "video"), second=obs.second(pairs, "video"))
    videos = set(obs.labels(pairs, "video")) | set(obs.second(pairs, "video") or [])
    df = stat_reference.dyadic_df(obs.labels(pairs, "video"), obs.second(pairs, "video") or [])
    assert df < len(videos) - 1
    assert row["difference"]["df"] == int(df) == want.df and "p_sign_flip" not in row["difference"]
    assert (row["difference"]["low"], row["difference"]["high"]) == pytest.approx((want.low, want.high))
