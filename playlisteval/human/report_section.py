"""The human study's tables (paper Table 22, by domain, by gap) as rows for the CLI and the HTML report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.store.engine import read_core, transaction

if TYPE_CHECKING:  # the ORM's classes load once a study is there: most reports have none (issue 26)
    from playlisteval.store.tables import HumanStudy


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _ci(ci: list[float] | None, scale: float = 100.0, digits: int = 1) -> str:
    return "" if not ci else f" [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"


def summary_rows(out: dict[str, Any]) -> list[tuple[str, str]]:
    """(statistic, value) in the order of the paper's Table 22."""
    n = out["n_tasks"]
    checks = out["attention_checks"]
    alpha = "—" if out["alpha"] is None else f"{out['alpha']:.3f}{_ci(out['alpha_ci'], 1.0, 3)}"

    def share(key: str) -> str:
        return f" ({100 * out[key] / n:.1f}%)" if n else ""

    return [
        ("Pairs rated", f"{n} of {out['n_planned']}"),
        ("Valid ratings", str(out["n_ratings"])),
        ("Ratings discarded (failed attention check)", f"{out['n_discarded']} "
                                                        f"({len(out['annotators_failed'])} annotator(s))"),
        ("Attention checks passed", f"{checks['passed']}/{checks['ratings']}"),
        ("Krippendorff's alpha (nominal)", alpha),
        ("Unanimous pairs", str(out["unanimous"])),
        ("Ratings that agree with the intended answer (%)",
         _pct(out["agree_with_intended"]) + _ci(out["agree_with_intended_ci"])),
        ("Majority agrees", f"{out['majority_agrees']}{share('majority_agrees')}"),
        ("Majority overturns", f"{out['majority_overturns']}{share('majority_overturns')}"),
        ("Majority tied", str(out["majority_tied"])),
        ("Preferred slot A / B (%)", "—" if out["slot_a"] is None else
         f"{100 * out['slot_a']:.1f} / {100 * (1 - out['slot_a']):.1f}{_ci(out['slot_a_ci'])} (A)"),
    ]


def group_rows(out: dict[str, Any], key: str) -> list[dict[str, str]]:
    return [{key: str(r[key]), "pairs": str(r["n_tasks"]), "ratings": str(r["n_ratings"]),
             "agree": _pct(r["agree_with_intended"]) + _ci(r["agree_with_intended_ci"]),
             "majority": f"{r['majority_agrees']} / {r['majority_overturns']}",
             "unanimous": str(r["unanimous"]), "alpha": "—" if r["alpha"] is None else f"{r['alpha']:.3f}",
             "slot_a": _pct(r["slot_a"])} for r in out[f"by_{key}"]]


GROUP_HEADERS = ["Pairs", "Ratings", "Agree %", "Majority agrees / overturns", "Unanimous", "Alpha", "Slot A %"]


def study_report(settings: Settings, engine: Engine, study: HumanStudy, ppi_judge: str | None = None
                 ) -> dict[str, Any]:
    """Every figure of the study; ``ppi``: the PPI++ interval with ``ppi_judge``'s verdicts (label_ppi.py)."""
    # imported here: results loads the select package (and with it the model runner), 0.16 s of every
    # `playlisteval report`, which asks for this section and has no study in most projects
    from playlisteval.human import label_ppi, results
    from playlisteval.store.tables import Benchmark

    tasks, ratings, simulated = results.load(engine, study)
    cfg = settings.human
    out = results.summarize(tasks, ratings, seed=study.seed, resamples=cfg.bootstrap, level=cfg.confidence)
    with transaction(engine) as s:
        bench = s.get(Benchmark, study.benchmark_id)
    ppi = label_ppi.study_ppi(settings, engine, study.benchmark_id, tasks, ratings, ppi_judge)
    return {"study": study.name, "benchmark": bench.name if bench else None, "evidence_simulated": simulated, **out,
            "ppi": ppi}


def ppi_rows(ppi: dict[str, Any]) -> list[tuple[str, str]]:
    """The PPI++ estimate and the human-only one beside it, as (statistic, value)."""
    preds = ppi["predictions"]
    used = preds["shown_as"] or "the intended labels"
    if ppi.get("estimate") is None:
        return [("Intended answer right, PPI++ (%)", f"— {ppi.get('note', 'not computed')}")]
    classical = ppi["classical"]

    def cell(d: dict[str, Any]) -> str:
        ci = None if d["low"] is None else [d["low"], d["high"]]
        return _pct(d["estimate"]) + _ci(ci)

    return [("Intended answer right, PPI++ (%)",
             f"{cell(ppi)} with {used}, lambda {ppi['lambda']:.2f}, {ppi['n_labelled']} rated + "
             f"{ppi['n_unlabelled']} judged pairs"),
            ("Intended answer right, ratings only (%)", f"{cell(classical)}, {classical['n']} rated pairs")]


def latest_study(engine: Engine, name: str) -> HumanStudy | None:
    """The study of that name, else the latest one planned (the HTML report shows one)."""
    with read_core(engine) as c:  # one Core query first: without a study the ORM is not loaded
        if not c.execute(text("SELECT 1 FROM human_study LIMIT 1")).first():
            return None
    from sqlmodel import col, select

    from playlisteval.store.tables import HumanStudy

    with transaction(engine) as s:
        named = s.exec(select(HumanStudy).where(HumanStudy.name == name)).first()
        return named or s.exec(select(HumanStudy).order_by(col(HumanStudy.id).desc())).first()


def html_section(settings: Settings) -> Any | None:
    """The report's "Human evaluation" section (an analytics.report.Section), or None without a study."""
    from playlisteval.analytics.report import Section
    from playlisteval.analytics.tabular import DisplayTable
    from playlisteval.store import open_store

    engine = open_store(settings)
    study = latest_study(engine, settings.human.study)
    if study is None:
        return None
    out = study_report(settings, engine, study)
    note = (f"Study {study.name!r}: forced A/B choices with the intended answer in a random slot; ratings of "
            "annotators who failed an attention check are discarded. Intervals: "
            f"{100 * out['level']:.0f}% bootstrap over pairs; PPI++ and ratings-only: normal intervals over "
            "pairs, the PPI++ one using a judge's verdicts on every benchmark pair (issue 21).")
    if out["evidence_simulated"]:
        note += " The evidence clips were grounded by the sim (simulated), not by a model."
    section = Section("human", "Human evaluation (paper Table 22)", note)
    section.tables.append(("", DisplayTable(headers=["Statistic", "Value"],
                                            rows=[[a, b] for a, b in summary_rows(out) + ppi_rows(out["ppi"])],
                                            numeric=[False, True])))
    for key, label in (("domain", "By domain"), ("gap", "By rating gap")):
        rows = group_rows(out, key)
        if rows:
            section.tables.append((label, DisplayTable(headers=[key.capitalize(), *GROUP_HEADERS],
                                                       rows=[list(r.values()) for r in rows],
                                                       numeric=[False] + [True] * len(GROUP_HEADERS))))
    return section
