"""Retriever ablations side by side (issue 20, deliverable 8; SPEC R4): the report's analogues of the paper's
Table 2 (retriever × input modality: Hit_both/Hit_any@k, nDCG@k), Fig. 5 right (bars by modality), Fig. 8
(frames per chunk and embedding width) and Table 4 (dims, index size on disk, single-query latency).

Each retriever run says its recipe (index/modality.py: retriever, modality, frames per chunk, dims) by its
embedder name, so runs made before recipes were recorded are placed too. The latest finished run of each
recipe stands for it; rates carry their question-clustered intervals (rates.retrieval). Latency and size
are what `eval retrieve` measured and stored on the run; a run from before latencies were timed shows "—",
never 0.
"""

from __future__ import annotations

import json
from typing import Any

from playlisteval.analytics import plots, rates
from playlisteval.analytics.rates import Bootstrap, Row
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.tabular import Col, Section, display
from playlisteval.index.modality import MODALITIES, describe

TABLE2_COLS = [Col("retriever", "Retriever"), Col("modality", "Input"), Col("run_id", "Run", "int"),
               Col("n", "Questions", "int"), Col("k", "k", "int"), Col("hit_both_ci", "Hit_both % [CI]", "ci"),
               Col("hit_any_ci", "Hit_any % [CI]", "ci"), Col("ndcg_ci", "nDCG % [CI]", "ci")]
FIG8_COLS = [Col("retriever", "Retriever"), Col("modality", "Input"), Col("frames_shown", "Frames / chunk"),
             Col("dims", "Dims", "int"), Col("run_id", "Run", "int"), Col("hit_both_ci", "Hit_both % [CI]", "ci"),
             Col("hit_any_ci", "Hit_any % [CI]", "ci"), Col("ndcg_ci", "nDCG % [CI]", "ci")]
TABLE4_COLS = [Col("embedder", "Retriever (stored as)"), Col("dims", "Dims", "int"),
               Col("vectors", "Vectors", "int"), Col("index_size", "Index size"),
               Col("p50_shown", "Query p50 ms"), Col("p95_shown", "Query p95 ms"),
               Col("latency_queries", "Queries timed", "int"), Col("run_id", "Run", "int")]


def latest_runs(an: Analytics, boot: Bootstrap) -> list[Row]:
    """One row per recipe (embedder name and k): the latest finished run's overall rates with intervals and
    what the run stored about its index (dims, bytes, latency percentiles, frames, modality)."""
    overall = {r["run_id"]: r for r in rates.retrieval(an, boot) if r["domain"] == "All"}
    runs = an.rows("SELECT id, embedder, k, dims, index_bytes, latency_p50_ms, latency_p95_ms, settings "
                   "FROM retrieval_run WHERE finished_at > 0 ORDER BY id")
    latest: dict[tuple[str, int], Row] = {}
    for run in runs:
        if run["id"] in overall:
            latest[(run["embedder"], run["k"])] = run
    out = []
    for (embedder, _), run in sorted(latest.items(), key=lambda kv: kv[1]["id"]):
        stored = _settings(run["settings"])
        recipe = {**describe(embedder), **{k: v for k, v in (stored.get("recipe") or {}).items() if v is not None}}
        timed = int(stored.get("latency_queries") or 0)
        out.append({**overall[run["id"]], "run_id": run["id"], "embedder": embedder,
                    "retriever": recipe["retriever"], "modality": recipe["modality"] or "?",
                    "frames": recipe.get("frames_per_chunk"), "dims": run["dims"], "full_width": not recipe["dims"],
                    "variant": stored.get("variant") or "", "index_bytes": run["index_bytes"],
                    "index_size": size_text(int(run["index_bytes"] or 0)),
                    "vectors": stored.get("vectors"), "latency_queries": timed,
                    # not timed one by one (a run from before issue 20): no figure, not a zero
                    "latency_p50_ms": run["latency_p50_ms"] if timed else None,
                    "latency_p95_ms": run["latency_p95_ms"] if timed else None,
                    "p50_shown": f"{run['latency_p50_ms']:.2f}" if timed else None,
                    "p95_shown": f"{run['latency_p95_ms']:.2f}" if timed else None})
    return out


def size_text(n: int) -> str:
    """Bytes as the paper's Table 4 writes them (1.59 GB), in decimal units."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _settings(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        found = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _modality_order(modality: str) -> int:
    return list(MODALITIES).index(modality) if modality in MODALITIES else len(MODALITIES)


def table2_rows(runs: list[Row]) -> list[Row]:
    """Full-width, default-frames runs: one row per (retriever, modality), the latest."""
    picked: dict[tuple[str, str], Row] = {}
    for r in runs:
        if r["full_width"] and not r["frames"]:
            picked[(r["retriever"], r["modality"])] = r
    return sorted(picked.values(), key=lambda r: (r["retriever"], _modality_order(r["modality"])))


def fig8_rows(runs: list[Row]) -> list[Row]:
    """Per (retriever, modality) with more than one frames or width setting: each setting's latest run."""
    groups: dict[tuple[str, str], dict[tuple[int, int], Row]] = {}
    for r in runs:
        groups.setdefault((r["retriever"], r["modality"]), {})[(r["frames"] or 0, r["dims"])] = r
    out = []
    for key in sorted(groups):
        if len(groups[key]) > 1:
            for _, r in sorted(groups[key].items(), key=lambda kv: (kv[0][0], -kv[0][1])):
                out.append({**r, "frames_shown": str(r["frames"]) if r["frames"] else "default"})
    return out


def section(an: Analytics, boot: Bootstrap) -> Section:
    runs = latest_runs(an, boot)
    out = Section("retriever_ablation", "Retriever ablations (paper Tables 2 and 4, Figs 5 and 8)",
                  "Each retriever recipe — embedder, input modality (transcript, on-screen text, both, frames …), "
                  "frames per chunk, vector width — stored side by side (`playlisteval index --variant NAME`) and "
                  "scored by `eval retrieve --variant NAME`; the latest run of each. Index size is the stored "
                  "vectors' bytes plus a saved HNSW index; query latency is each question asked alone "
                  f"(embed + rank), p50 and p95. {boot.label}.")
    if not runs:
        out.note += " No retriever run yet: `playlisteval eval retrieve` (and `--variant NAME`)."
        return out
    table2 = table2_rows(runs)
    out.tables.append(("Retriever × input (paper Table 2)", display(table2, TABLE2_COLS)))
    retrievers = sorted({r["retriever"] for r in table2})
    modalities = sorted({r["modality"] for r in table2}, key=_modality_order)
    if table2:
        cell = {(r["retriever"], r["modality"]): r for r in table2}
        series = {m: [cell[(ret, m)]["hit_any_ci"] if (ret, m) in cell else None for ret in retrievers]
                  for m in modalities}
        out.figures.append(("Hit_any by retriever and input modality, 95 % intervals (paper Fig. 5 right)",
                            plots.grouped_bars(retrievers, series, ylabel=f"Hit_any@{table2[0]['k']} (%)",
                                               title="Retrieval by input modality")))
    fig8 = fig8_rows(runs)
    if fig8:
        out.tables.append(("Frames per chunk and embedding width (paper Fig. 8)", display(fig8, FIG8_COLS)))
        for (ret, mod) in sorted({(r["retriever"], r["modality"]) for r in fig8}):
            points = [r for r in fig8 if (r["retriever"], r["modality"]) == (ret, mod)]
            xs = [f"{r['frames_shown']} fr / {r['dims']} d" for r in points]
            out.figures.append((f"{ret} ({mod}) by frames per chunk and width, 95 % intervals (paper Fig. 8)",
                                plots.lines(xs, {"Hit_both": [r["hit_both_ci"] for r in points],
                                                 "Hit_any": [r["hit_any_ci"] for r in points],
                                                 "nDCG": [r["ndcg_ci"] for r in points]},
                                            xlabel="frames per chunk / dims", ylabel="retrieval quality (%)",
                                            title=f"{ret} ({mod})")))
    else:
        out.note += (" Fig. 8 needs one recipe at two frame counts or widths (`index --variant w128 --dims 128`; "
                     "frame counts need a visual embedder).")
    out.tables.append(("Index size and query latency (paper Table 4)", display(runs, TABLE4_COLS)))
    return out
