"""The trust figures (analytics/trust.py) as report sections and as the leaderboard's extra JSON keys.

Why apart from trust.py: that module chooses observations and calls the statistics; this one only lays
the results out (cells as text, intervals as the shared ``ci`` cells), so the page, the terminal and
``--json`` show the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playlisteval.analytics import agreement, forked, trust, trust_data, trust_position
from playlisteval.analytics.intervals import Interval
from playlisteval.analytics.power import mde_cell
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.tabular import Col, Deferred, Section, display

PAIRED_COLS = [Col("judge_a", "Judge A"), Col("judge_b", "Judge B"), Col("pairs", "Pairs", "int"),
               Col("difference_ci", "A − B pts [CI]", "cipts"), Col("p_value", "p", "p"),
               Col("p_holm", "p (Holm)", "p"), Col("mde_cell", "MDE pts", "text")]
POWER_COLS = [Col("unit", "Unit"), Col("clusters", "Clusters", "int"), Col("icc", "ICC"),
              Col("design_effect", "Design effect"), Col("mde_cell", "MDE pts", "text"),
              Col("pairs_for_5", "Pairs for 5 pts", "int")]
RATE_COLS = [Col("judge", "Judge"), Col("what", "Figure"), Col("rate_ci", "% [CI]", "ci"), Col("n", "Pairs", "int"),
             Col("note", "Note")]
AGREEMENT_COLS = [Col("judges", "Judges"), Col("what", "Coefficient"), Col("value", "Value [CI]"),
                  Col("n", "Pairs", "int"), Col("clusters", "Clusters", "int"), Col("note", "Note")]


def _interval(d: dict[str, Any] | None) -> Interval | None:
    if not d or d.get("estimate") is None:
        return None
    return Interval(d["estimate"], d.get("low"), d.get("high"), int(d.get("n", 0)), int(d.get("clusters", 0)),
                    d.get("level", 0.95), d.get("p_value"), d.get("null"))


@dataclass(frozen=True)
class _Read:
    """What the trust figures read from the analytics file, read before they are computed."""

    judgments: trust_data.Read
    positions: dict[int, dict[str, float]]
    ratings: dict[str, Any]
    boot: Bootstrap
    evidence: str


def start_figures(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, evidence: str
                  ) -> forked.Child[dict[str, Any]]:
    """Every trust figure of the benchmark, as JSON-ready dicts: read here, computed in a forked child while
    the caller goes on (forked.py: ~0.8 CPU-s of Python at 1M judgments, off this process's GIL);
    ``result()`` waits for them."""
    read = _Read(trust_data.read(an, bench, boot.unit), trust_data.segment_positions(an),
                 trust_data.read_ratings(an), boot, evidence)
    return forked.start(_computed, read, "trust figures")


def _computed(read: _Read) -> dict[str, Any]:
    obs, evidence, boot = trust_data.build(read.judgments), read.evidence, read.boot
    return {"power": trust.power_figures(obs, evidence), "paired": trust.paired_table(obs, evidence, boot),
            "stability": trust.stability_figures(obs, boot), "blind": trust.blind_figures(obs, boot),
            "position": trust_position.position_figures(obs, read.positions, evidence, boot),
            "best_of": trust.best_of_figures(obs, trust_data.ratings_of(read.ratings, set(obs.units)), evidence,
                                             boot),
            "agreement": agreement.figures(obs, evidence, boot)}  # issue 40: alpha, kappa per judge pair


def leaderboard_keys(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, evidence: str) -> dict[str, Any]:
    """What `leaderboard --json` adds: the judge-vs-judge table with Holm's p-values, the power figures,
    agreement between judges and, where swapped main runs exist, the swap-aggregated accuracy."""
    obs = trust_data.load(an, bench, boot.unit)
    return {"paired": trust.paired_table(obs, evidence, boot), "power": trust.power_figures(obs, evidence),
            "agreement": agreement.figures(obs, evidence, boot),  # issue 40: alpha, kappa per judge pair
            "swap_aggregated": agreement.swap_figures(obs, evidence, boot)}  # forward and swapped passes


def _num(value: Any) -> str:
    return "—" if value is None else f"{float(value):.3f}"


def paired_rows(paired: dict[str, Any]) -> list[dict[str, Any]]:
    # "mde_cell": points, or "none detectable" where no difference ≤ 100 points is (analytics/power.py)
    return [{**r, "difference_ci": _interval(r["difference"]), "mde_cell": mde_cell(r)} for r in paired["rows"]]


def _coefficient(d: dict[str, Any] | None) -> str:
    """An agreement coefficient (alpha, kappa in [−1, 1]) with its interval: "0.412 [0.301, 0.523]"."""
    if not d or d.get("estimate") is None:
        return "—"
    bounds = "[—]" if d.get("low") is None else f"[{d['low']:.3f}, {d['high']:.3f}]"
    return f"{d['estimate']:.3f} {bounds}"


def agreement_rows(fig: dict[str, Any]) -> list[dict[str, Any]]:
    """Krippendorff's alpha over every judge, then Cohen's kappa per judge pair (agreement.figures)."""
    rows = []
    if len(fig.get("judges", [])) >= 2:
        a = fig.get("alpha") or {}
        rows.append({"judges": f"all {len(fig['judges'])}", "what": "Krippendorff's alpha (nominal)",
                     "value": _coefficient(a), "n": a.get("n", 0), "clusters": a.get("clusters"),
                     "note": a.get("note", "") or f"pairs every judge judged ({fig.get('shared_pairs', 0)})"})
    for k in fig.get("kappa", []):
        d = k["kappa"]
        share = d.get("observed_agreement")
        rows.append({"judges": f"{k['judge_a']} vs {k['judge_b']}", "what": "Cohen's kappa", "value": _coefficient(d),
                     "n": d.get("n"), "clusters": d.get("clusters"),
                     "note": d.get("note", "") or (f"agree on {100 * share:.1f} %" if share is not None else "")})
    return rows


def _rates(fig: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(judge: str, what: str, d: dict[str, Any] | None, note: str = "") -> None:
        iv = _interval(d)
        rows.append({"judge": judge, "what": what, "rate_ci": iv, "n": iv.n if iv else 0, "note": note})

    for s in fig["stability"]:
        label = f"{s['judge']} ({s['samples']} samples, T={s['temperature']})"
        for key, what in (("expected_accuracy", "expected accuracy"), ("consensus_accuracy", "consensus accuracy"),
                          ("consistency", "consistency (all samples agree)")):
            add(label, what, s.get(key), s.get("note", ""))
    for b in fig["blind"]:
        add(b["judge"], "blind accuracy (question and answers only)", b["accuracy"])
        add(b["judge"], "video − blind (pts)", b.get("difference"), "" if b.get("video_run") else "no video run")
    for p in fig["position"]:
        for part, key in (("position", "by_position"), ("distance", "by_distance")):
            for cell in p[key]:
                add(p["judge"], f"{part}: {cell['bin']}", cell["accuracy"])
    for b in fig["best_of"]:
        chance = b.get("chance", {}).get("random_ranking")
        add(b["judge"], "best-of-5 (gold wins all its pairs)", b.get("best_of"),
            b.get("note", "") or (f"chance {100 * chance:.0f} % here (20 % with all four rivals)" if chance else ""))
    return rows


def section(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, evidence: str) -> Section:
    """The report's section: power per unit, judge − judge with Holm, stability, blind, position, best-of-5,
    agreement between judges."""
    return start_section(an, bench, boot, evidence).finish()


def start_section(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, evidence: str) -> Deferred:
    """``section``, its figures computed while the caller goes on (``finish()`` gives it)."""
    child = start_figures(an, bench, boot, evidence)
    return Deferred(lambda: _section(child.result(), boot), child.cancel)


def _section(fig: dict[str, Any], boot: Bootstrap) -> Section:
    power_rows = [{**u, "icc": _num(u["icc"]), "design_effect": _num(u["design_effect"]),
                   "mde_cell": mde_cell(u),
                   "pairs_for_5": next((p["pairs"] for p in u["pairs_for"] or [] if p["difference"] == 0.05), None)}
                  for u in fig["power"].get("units", {}).values()]
    judges = " vs ".join(fig["power"].get("judges", [])) or "—"
    note = (f"Minimum detectable difference (MDE) at alpha 0.05 and 80 % power from this benchmark's own "
            f"intra-cluster correlation ({judges}), by the exact noncentral t on clusters − 1 degrees of freedom "
            f"(\"none detectable\" where no difference of at most 100 points reaches that power); every "
            f"judge − judge comparison on the pairs both judged, "
            f"p-values Holm-adjusted across the table ({fig['paired'].get('smallest_p', '')}), with its own "
            f"MDE; stability over repeated samples "
            f"(`eval judge --samples N --temperature T`); the blind run (`--modality none`) and its difference "
            f"from the video run; accuracy by where the cited segments sit in the playlist; best-of-5 (chance "
            f"is 20 % only where all four rivals of the gold were judged: each row states its own); agreement "
            f"between judges (main runs, no verdict as missing): Krippendorff's alpha over the pairs all judged "
            f"and Cohen's kappa per pair of judges, intervals by a {boot.unit}-cluster jackknife, t on K − 1 df. "
            f"{boot.label}.")
    return Section("trust", "Power, paired comparisons and validity checks", note, tables=[
        ("Minimum detectable difference by clustering unit", display(power_rows, POWER_COLS)),
        ("Judge − judge (main runs, Holm-adjusted)", display(paired_rows(fig["paired"]), PAIRED_COLS)),
        ("Stability, blind run, evidence position, best-of-5", display(_rates(fig), RATE_COLS)),
        ("Agreement between judges: alpha [CI] over the shared pairs; kappa per pair",
         display(agreement_rows(fig["agreement"]), AGREEMENT_COLS))])
