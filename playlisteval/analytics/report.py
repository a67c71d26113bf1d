"""`playlisteval report`: the analytics views rendered as one self-contained HTML page.

Everything shown comes from the views of this package (the same ones `playlisteval sql` queries).
Judge names, questions and answers are model or user text: the template escapes every cell
(autoescape), and figures are SVG images that cannot run script (see plots.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined

from playlisteval.analytics import section_cache
from playlisteval.analytics.provenance import labelled as provenance_rows
from playlisteval.analytics.provenance import provenance as provenance_of
from playlisteval.analytics.runner import Analytics, AnalyticsError
from playlisteval.analytics.tabular import Col, Section, display, fmt, generic, settings_interval_label
from playlisteval.config import Settings
from playlisteval.logs.redaction import redact_known

__all__ = ["Page", "Section", "build_sections", "choose_benchmark", "leaderboard_rows", "render", "write_page",
           "write_report"]

EXCERPT_CHARS = 700  # of each answer in the hardest-pairs section; the full text is in the store


def choose_benchmark(an: Analytics, name: str | None) -> dict[str, Any] | None:
    """The named benchmark, else the one with the latest judge run, else the latest one made."""
    if name is not None:
        rows = an.rows("SELECT id, name FROM benchmark WHERE name = ?", [name])
        if not rows:
            raise AnalyticsError(f"no benchmark named {name!r}")
        return rows[0]
    rows = an.rows(
        "SELECT b.id, b.name FROM benchmark AS b LEFT JOIN judge_run AS r ON r.benchmark_id = b.id "
        "GROUP BY b.id, b.name ORDER BY max(r.id) DESC NULLS LAST, b.id DESC LIMIT 1"
    )
    return rows[0] if rows else None


def _where(bench: dict[str, Any] | None, alias: str = "") -> tuple[str, list[Any]]:
    """The filter to the chosen benchmark (none chosen: every row)."""
    return (f"{alias}benchmark_id = ?", [bench["id"]]) if bench else ("true", [])


def leaderboard_rows(an: Analytics, bench: dict[str, Any] | None) -> list[dict[str, Any]]:
    where, params = _where(bench)
    return an.rows(f"SELECT * FROM leaderboard WHERE {where} AND domain = 'All' "
                   "ORDER BY retrieved DESC NULLS LAST, uniform DESC NULLS LAST, judge", params)


STAT_ROWS = [("Domains", "domains", "int"), ("Playlists", "playlists", "int"), ("Indexed videos", "videos", "int"),
             ("Accepted questions", "accepted_questions", "int"),
             ("Questions with a kept pair", "kept_questions", "int"), ("Kept pairs", "kept_pairs", "int"),
             ("Sampled questions (before pair sampling)", "sampled_questions", "int"),
             ("Sampled questions (after pair sampling)", "benchmark_questions", "int"),
             ("Preference pairs", "pairs", "int"),
             ("Question words, mean", "question_words_mean", "num"),
             ("Question words, max", "question_words_max", "int"),
             ("Gold answer words, mean", "gold_words_mean", "num"), ("Gold answer words, max", "gold_words_max", "int"),
             ("Degraded answer words, mean", "degraded_words_mean", "num"),
             ("Degraded answer words, max", "degraded_words_max", "int"),
             ("Chosen minus rejected, words", "chosen_minus_rejected_words", "num"),
             ("Longer answer wins (%)", "longer_answer_wins", "pct")]


def _stats(an: Analytics, bench: dict[str, Any] | None) -> Section:
    rows = an.rows("SELECT * FROM benchmark_stats WHERE benchmark_id IS NOT DISTINCT FROM ?",
                   [bench["id"] if bench else None])
    stats = rows[0] if rows else {}
    table = display([{"label": label, "value": fmt(stats.get(key), kind)} for label, key, kind in STAT_ROWS],
                    [Col("label", "Statistic"), Col("value", "Value")])
    return Section("stats", "Benchmark statistics (paper Table 12)", "Words counted with citations removed.",
                   tables=[("", table)])


COST_DOMAIN = [Col("domain", "Domain"), Col("runs", "Runs", "int"), Col("questions", "Questions", "int"),
               Col("spend", "Spend ($)", "usd"), Col("pooled", "Pooled ($/q)", "usd"), Col("mean", "Mean ($/q)", "usd"),
               Col("sd", "± sd", "usd"), Col("min", "Min", "usd"), Col("max", "Max", "usd")]
COST_MODEL = [Col("model", "Model"), Col("roles", "Roles"), Col("calls", "Calls", "int"),
              Col("cache_hits", "Cache hits", "int"), Col("tokens", "Tokens", "int"),
              Col("gpu_hours", "GPU-hours", "hours"), Col("spend", "Spend ($)", "usd"), Col("share", "Share %", "pct"),
              Col("per_question", "Per question ($)", "usd3")]
COST_ROLE = [Col("purpose", "Purpose"), Col("role", "Role"), Col("calls", "Calls", "int"),
             Col("failed", "Failed", "int"),
             Col("cache_hits", "Cache hits", "int"), Col("tokens", "Tokens", "int"), Col("spend", "Spend ($)", "usd"),
             Col("share", "Share %", "pct")]
COST_EVAL = [Col("judge", "Judge"), Col("protocol", "Protocol"), Col("passes", "Passes", "int"),
             Col("calls", "Calls", "int"), Col("tokens", "Tokens", "int"), Col("gpu_hours", "GPU-hours", "hours"),
             Col("spend", "Spend ($)", "usd"), Col("spend_per_pass", "Per pass ($)", "usd")]


def _cost(an: Analytics) -> Section:
    all_last = "CASE WHEN {0} = 'All' THEN 1 ELSE 0 END, {0}"
    return Section("cost", "Cost (paper Tables 19–21)",
                   "Build cost counts every retry and rejected candidate. A build run is a playlist (playlists are "
                   "added and built one at a time); mean ± sd and range are of each run's cost per accepted question. "
                   "The difficulty gate's calls (purpose select) are not build cost: see cost by role.",
                   tables=[
                       ("Build cost by domain", display(an.rows(
                           f"SELECT * FROM cost_by_domain ORDER BY {all_last.format('domain')}"), COST_DOMAIN)),
                       ("Build cost by model", display(an.rows(
                           "SELECT * FROM cost_by_model ORDER BY model = 'All', spend DESC"), COST_MODEL)),
                       ("Cost by role", display(an.rows(
                           "SELECT * FROM cost_by_role ORDER BY purpose, spend DESC, role"), COST_ROLE)),
                       ("Evaluation cost per judge and protocol (main run, each sweep)", display(an.rows(
                           "SELECT * FROM eval_cost_by_judge ORDER BY judge = 'All', judge, NOT main, protocol"),
                           COST_EVAL)),
                   ])


def _funnel(an: Analytics) -> Section | None:
    """The build's gate funnel (analytics/funnel.sql, owned by the build's side), when it is there."""
    if "funnel" not in an.view_names():
        return None
    rows = an.rows("SELECT * FROM funnel ORDER BY 2 DESC, 1")
    return Section("funnel", "Gate funnel", "How many attempts each gate saw, passed and rejected; and the fps "
                   "each video-reading role's latest calls got beside the SPEC's (frames sent per second covered, "
                   "or the rate a video file was sampled at).",
                   tables=[("", generic(rows)), ("Video fps", generic(_fps_rows(an)))])


def _fps_rows(an: Analytics) -> list[dict[str, Any]]:
    """Issue 42: per video-reading role, the fps its clips got (from the store's cached replies)."""
    from playlisteval.store.video_fps import SPEC_FPS, role_fps

    out = []
    for role in SPEC_FPS:
        f = role_fps(an.engine, role)
        got = None if f.sent_min is None else (
            f"{f.sent_min:.3g}" if f.sent_min == f.sent_max else f"{f.sent_min:.3g}–{f.sent_max:.3g}")
        out.append({"role": role, "SPEC fps": f.spec, "asked": "/".join(f"{a:g}" for a in f.asked) or None,
                    "got": got, "sent as": ", ".join(f.sent_as) or None, "calls": f.calls, "thinned": f.thinned})
    return out


def _hardest(an: Analytics, bench: dict[str, Any] | None, limit: int) -> Section:
    where, params = _where(bench, "d.")
    rows = an.rows(
        f"SELECT d.*, q.question, better.text AS better_text, worse.text AS worse_text, p.better_rating, "
        f"p.worse_rating FROM pair_difficulty AS d JOIN pair AS p ON p.id = d.pair_id "
        f"JOIN distractor_set AS ds ON ds.id = p.set_id JOIN qa AS q ON q.id = ds.qa_id "
        f"JOIN answer AS better ON better.set_id = p.set_id AND better.rating = p.better_rating "
        f"JOIN answer AS worse ON worse.set_id = p.set_id AND worse.rating = p.worse_rating "
        f"WHERE {where} ORDER BY d.accuracy, d.gap, d.pair_id LIMIT ?", [*params, limit])
    for r in rows:
        for key in ("better_text", "worse_text"):
            text = r[key] or ""
            r[key] = text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " …"
    note = "The pairs the fewest judges solved (retrieved evidence, full domain). Model text, shown as text."
    left_out = [r for r in unfinished_runs(an, bench) if not r["swapped"] and r["scope"] == "domain"
                and r["evidence"] == "retrieved"]
    if left_out:  # pair_difficulty counts finished runs only
        note += " Not counted until their runs finish: " + "; ".join(_run_said(r) for r in left_out) + "."
    return Section("hardest", "Hardest pairs", note, examples=rows)


def unfinished_runs(an: Analytics, bench: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The main runs that are not finished (errors, or pairs not judged yet): issue 9 wants every table
    that shows them to say so."""
    where, params = _where(bench)
    return an.rows(f"SELECT * FROM run_status WHERE {where} AND main AND state <> 'finished' "
                   "ORDER BY judge, evidence, scope, swapped", params)


def _run_said(r: dict[str, Any]) -> str:
    sides = ", swapped" if r["swapped"] else ""
    return f"{r['judge']} ({r['evidence']}, {r['scope']}{sides}): {r['status']}"


#: a section another package adds (the human study: playlisteval/human), made by the caller's choice so
#: that analytics never imports the packages above it; None when it has nothing to show
ExtraSection = Callable[[Settings], Section | None]


def build_sections(an: Analytics, settings: Settings, bench: dict[str, Any] | None,
                   progress: Callable[[str, int, int], None] | None = None,
                   extra: Sequence[ExtraSection] = ()) -> list[Section]:
    # the sections' modules (attribution, power, figures …) load when sections are computed: a report whose
    # sections are kept (section_cache) never imports them (issue 26: report with nothing changed <= 1 s)
    from playlisteval.analytics import (
        check_sections,
        rate_sections,
        retriever_ablation,
        section_threads,
        trust_sections,
    )
    from playlisteval.analytics.rates import Bootstrap

    boot = Bootstrap.of(settings)
    makers: list[tuple[str, Callable[[], section_threads.Made]]] = [
        ("leaderboard", lambda: rate_sections.leaderboard(an, bench, boot)),
        ("gap", lambda: rate_sections.gap(an, bench, boot)),
        ("scope", lambda: rate_sections.scope(an, bench, boot, settings.analytics.scope_order)),
        ("attribution", lambda: check_sections.attribution(an, bench, boot)),  # issue 20: Figs 9–12
        ("bias", lambda: rate_sections.bias(an, bench, boot)),
        ("sweeps", lambda: rate_sections.sweeps(an, bench, boot)),
        ("shortcuts", lambda: rate_sections.shortcuts(an, bench, boot)),
        # issue 21; its figures computed in a forked child while the other sections are (forked.py)
        ("trust", lambda: trust_sections.start_section(an, bench, boot, settings.eval.evidence)),
        ("retrieval", lambda: rate_sections.retrieval(an, boot)),
        ("ablation", lambda: retriever_ablation.section(an, boot)),  # issue 20: Tables 2 and 4, Figs 5 right and 8
        ("external", lambda: check_sections.external(an, bench, boot)),  # issue 20: Fig. 7
        ("stats", lambda: _stats(an, bench)), ("cost", lambda: _cost(an))]
    an.ensure_views()  # made once, before the threads ask
    sections = section_threads.compute(makers, progress)  # side by side, in this order (section_threads.py)
    unfinished = unfinished_runs(an, bench)
    for section in sections:  # a run that is not finished is never shown as a plain result (issue 9)
        if section.id in ("leaderboard", "gap", "scope", "bias") and unfinished:
            section.note += (" Not finished (accuracy over the pairs judged so far; run the same `eval judge` "
                             "command again): " + "; ".join(_run_said(r) for r in unfinished) + ".")
    from playlisteval.analytics.verdict_health import flagged_runs, flagged_said

    unhealthy = flagged_said(flagged_runs(an, bench))  # issue 40: never read as a chance-level judge
    for section in sections:
        if section.id in ("leaderboard", "gap", "scope", "bias", "sweeps") and unhealthy:
            section.note += unhealthy
    failed = an.rows("SELECT run_id, count(*) AS n FROM retrieval_error GROUP BY run_id ORDER BY run_id")
    for section in sections:
        if section.id == "retrieval" and failed:  # errors are not misses: left out of the means, and said so
            section.note += " Questions that could not be ranked (errors, left out of the means): " + ", ".join(
                f"run {r['run_id']}: {r['n']}" for r in failed) + "."
    funnel = _funnel(an)
    if funnel is not None:
        sections.append(funnel)
    sections.append(_hardest(an, bench, settings.analytics.report_examples))
    return _with_extra(sections, settings, extra)


def _with_extra(sections: list[Section], settings: Settings, extra: Sequence[ExtraSection]) -> list[Section]:
    """The sections with the ``extra`` ones (made now, never cached) after the funnel, before the hardest pairs."""
    added = [section for make_extra in extra if (section := make_extra(settings)) is not None]
    return [*sections[:-1], *added, *sections[-1:]]


def render(sections: list[Section], *, title: str, benchmark: str | None, simulated: str = "",
           intervals: str = "", provenance: dict[str, Any] | None = None) -> str:
    """The page; ``simulated``: the banner saying the numbers came from the sim ("" when they did not);
    ``provenance``: the block (analytics/provenance.py) shown under the header, escaped like every cell."""
    env = Environment(autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)
    source = resources.files("playlisteval.analytics").joinpath("report.html.j2").read_text(encoding="utf-8")
    return env.from_string(source).render(sections=sections, title=title, benchmark=benchmark, simulated=simulated,
                                          intervals=intervals,
                                          provenance=provenance_rows(provenance) if provenance else [])


def simulated_banner(an: Analytics) -> str:
    """The report's banner when anything in the store came from the sim."""
    from playlisteval.analytics.rates import is_simulated
    from playlisteval.models.simulated import NOTE

    return NOTE if is_simulated(an.engine) else ""


def write_report(an: Analytics, settings: Settings, out: Path, benchmark: str | None = None,
                 progress: Callable[[str, int, int], None] | None = None,
                 extra: Sequence[ExtraSection] = ()) -> list[Section]:
    """``progress(task, done, total)`` is called as each section is computed (the CLI's bar); ``extra``
    sections (the human study) come after the funnel. The sections computed from the analytics file are
    reused when nothing they depend on changed since the last report (section_cache)."""
    return write_page(an, settings, out, benchmark, progress, extra).sections


@dataclass
class Page(section_cache.Kept):
    """What a written page shows: the cached part and its provenance (made anew by every report, never
    cached: its ``generated_at`` is this report's time, and the cache key never sees it)."""

    provenance: dict[str, Any] = field(default_factory=dict)


def write_page(an: Analytics, settings: Settings, out: Path, benchmark: str | None = None,
               progress: Callable[[str, int, int], None] | None = None,
               extra: Sequence[ExtraSection] = ()) -> Page:
    """``write_report``, returning what the page shows: the benchmark's name, the simulated banner, every
    section (the CLI prints the leaderboard from it rather than computing it again) and the provenance."""
    cache_key = section_cache.key(an, settings, benchmark) if an.file is not None else None
    kept = section_cache.load(an, cache_key) if cache_key else None
    if kept is not None:
        if progress:
            progress("report sections", 1, 1)
    else:
        bench = choose_benchmark(an, benchmark)
        kept = section_cache.Kept(bench["name"] if bench else None, simulated_banner(an),
                                  build_sections(an, settings, bench, progress))
        if cache_key:
            section_cache.save(an, cache_key, kept)
    from playlisteval.analytics.check_record_section import report_section  # issue 41: read now, never cached

    benchmark_name = kept.benchmark
    sections = _with_extra(kept.sections, settings,
                           [*extra, lambda _: report_section(an.engine, benchmark_name)])
    prov = provenance_of(an.engine, settings, kept.benchmark, generated=True)  # issue 22: after the cache
    page = render(sections, title=settings.project.name, benchmark=kept.benchmark, simulated=kept.simulated,
                  intervals=settings_interval_label(settings), provenance=prov)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(redact_known(page), encoding="utf-8")  # a key in a stored text never shown (issue 44)
    return Page(kept.benchmark, kept.simulated, sections, prov)
