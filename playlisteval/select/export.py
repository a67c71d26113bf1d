"""`playlisteval export OUT`: the benchmark as a dataset — Parquet and JSON Lines with the same rows,
and a dataset card (README.md) holding the SPEC F4 statistics.

One row per preference pair: the question, both answers as a judge sees them (citations removed) on
their shared sides (SPEC G5), which one is better, the ratings and gap, the gold answer with its
citations, the two evidence segments (video, playlist, time range) and the weak judges' verdicts. The
card's YAML header names the Parquet file, so ``datasets.load_dataset("parquet", data_files=…)`` and
``load_dataset(OUT)`` both read it.

Portable (issue 9, item 9): a video is named by a stable id (from its content hash), its path relative
to the collection root (the folder holding all of the collection's videos) and its sha256 — never a
path of the machine that built it; weak-judge verdicts are given in the row's own A/B order (and as
"chosen"/"rejected"), not in the order the weak judge happened to see. An OUT folder that holds
anything is left alone unless ``force``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy.engine import Engine

from playlisteval.benchmark.names import markdown_text, yaml_scalar
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.models.simulated import NOTE as SIMULATED_NOTE
from playlisteval.models.simulated import is_simulated
from playlisteval.select import annotations as released  # not `annotations`: that is __future__'s name
from playlisteval.select.content import Sealed
from playlisteval.select.pairs import find_benchmark
from playlisteval.select.rows import benchmark_rows
from playlisteval.select.stats import BenchmarkStats, Length, benchmark_stats
from playlisteval.store import open_store
from playlisteval.store.tables import Benchmark

PARQUET = "data/test.parquet"
JSONL = "data/test.jsonl"


@dataclass
class ExportReport:
    out: Path
    rows: int
    files: list[Path]
    stats: BenchmarkStats
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what this export lacks, and why


def _card(name: str, st: BenchmarkStats, rows: int, simulated: bool = False) -> str:
    gaps = ", ".join(f"gap {g}: {n}" for g, n in st.pairs_by_gap.items())
    domains = "\n".join(f"| {markdown_text(d)} | {n} |" for d, n in st.pairs_by_domain.items())
    banner = f"\n> **{SIMULATED_NOTE}**\n" if simulated else ""
    return f"""---
configs:
- config_name: default
  data_files:
  - split: test
    path: {PARQUET}
task_categories:
- video-text-to-text
tags:
- judge-evaluation
- preference-pairs
- long-video
pretty_name: {yaml_scalar(name)}
---

# {markdown_text(name)}
{banner}
Video-language **judge** benchmark made by playlisteval: {rows} preference pairs. Each row is a two-hop
question over a playlist collection, two answers (`answer_a`, `answer_b`, citations removed, sides drawn
once per pair from a shared seed), `label` — the better one — and the rating gap (gold = 5 … 1).
The wrong answers differ from the gold only in what is *seen*, so a judge needs the video to tell them
apart. `segments` locates the two evidence segments; `weak_judges` records the difficulty gate.

- `weak_judges[].verdict` is in **this row's** A/B order (the weak judge saw the pair on sides drawn
  apart from the row's); `picked` says the same as `chosen` or `rejected`; `correct` is whether it
  picked `chosen`. No verdict (no reply, a refusal): both null.
- Each segment names its video by `video_id` (stable: from the file's content), `video_path` (relative
  to the root folder of the collection, `/` separated) and `video_sha256`: put the videos under any
  folder and check them by hash. `video_url` is the source URL when the collection gave one.

```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files="{PARQUET}")["train"]
```

## Statistics

| Statistic | Value |
|---|---|
| Domains | {st.domains} |
| Playlists | {st.playlists} |
| Source videos | {st.videos} |
| Accepted questions | {st.accepted_questions} |
| Sampled questions (before pair sampling) | {st.sampled_before} |
| Sampled questions (after pair sampling) | {st.sampled_after} |
| Preference pairs | {st.pairs} ({gaps}) |
| Words in question (mean / max) | {st.question_words.mean} / {st.question_words.max} |
| Words in gold answer (mean / max) | {st.gold_words.mean} / {st.gold_words.max} |
| Words in degraded answers (mean / max) | {st.degraded_words.mean} / {st.degraded_words.max} |
| Chosen minus rejected, words (per pair) | {st.chosen_minus_rejected_words} |
| Longer answer wins (%) | {st.longer_answer_wins_pct} |

Word counts are of the texts without citations.

| Domain | Pairs |
|---|---|
{domains}
"""


def export(settings: Settings, out: Path, name: str | None = None, *, force: bool = False,
           progress: Callable[[str, int, int], None] | None = None, version: int | None = None,
           frozen: dict[str, Any] | None = None, sealed: Sealed | None = None,
           notes: list[str] | None = None) -> ExportReport:
    """``progress(task, done, total)`` is called as each file is written (the CLI's bar). ``sealed``: the
    version's content as it was recorded (select/sealed.py), written byte for byte; ``frozen``: the copy an
    older ``version`` kept when it was superseded (its card; its rows where it has no seal). Neither: the
    live benchmark from the store. select/versions.py ``export_version`` finds both. Beside the data:
    provenance.json, and the same block at the end of the card (issue 22)."""
    tick = progress or (lambda task, done, total: None)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} is not empty: export into a new or empty folder, or pass --force to write "
                          "over the files there")
    from playlisteval.analytics.provenance import card_lines, provenance

    engine = open_store(settings)
    bench = find_benchmark(engine, name or settings.select.benchmark)
    tick("export steps", 0, 6)
    rows = sealed.rows() if sealed is not None else benchmark_rows(engine, bench) if frozen is None else frozen["rows"]
    if not rows:
        raise ConfigError(f"benchmark {bench.name!r} has no pairs to export")
    tick("export steps", 1, 6)
    st = (stats_of(sealed.stats) if sealed is not None else stats_of(frozen["stats"]) if frozen is not None
          else benchmark_stats(engine, int(bench.id or 0)))
    tick("export steps", 2, 6)
    (out / "data").mkdir(parents=True, exist_ok=True)
    parquet, jsonl, card, stats = out / PARQUET, out / JSONL, out / "README.md", out / "stats.json"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    tick("export steps", 3, 6)
    with jsonl.open("w", encoding="utf-8") as f:
        if sealed is not None:
            f.write(sealed.rows_text)  # the bytes the version's content hash was taken of
        else:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tick("export steps", 4, 6)
    prov = provenance(engine, settings, int(bench.id or 0), version=version, generated=True)
    body = (str(frozen["card"]) if frozen is not None else
            card_text(settings, engine, bench, st, len(rows), described=sealed.domains if sealed else None))
    from playlisteval.benchmark.check_record import card_section as check_section  # issue 41: videos checked

    card.write_text(body + "\n" + check_section(engine, int(bench.id or 0)) + "\n" + card_lines(prov),
                    encoding="utf-8")
    # issue 20: the causal records and domain descriptions in their own file (the parquet stays as it was)
    extra: list[Path] = []
    if sealed is not None:
        (out / released.ANNOTATIONS).write_text(sealed.annotations_text, encoding="utf-8")
        extra.append(out / released.ANNOTATIONS)
    elif frozen is None:
        extra.append(released.write(engine, bench, out))
    tick("export steps", 5, 6)
    stats.write_text(json.dumps(st.as_dict(), indent=2), encoding="utf-8")
    provenance_file = out / "provenance.json"  # beside the data: the data files stay as they were (issue 22)
    provenance_file.write_text(json.dumps(prov, indent=2), encoding="utf-8")
    tick("export steps", 6, 6)
    return ExportReport(out, len(rows), [parquet, jsonl, card, stats, provenance_file, *extra], st, prov,
                        list(notes or []))


def card_text(settings: Settings, engine: Engine, bench: Benchmark, st: BenchmarkStats, rows: int, *,
              described: dict[str, str] | None = None) -> str:
    """The dataset card of the live benchmark, without its provenance lines (a frozen version keeps this);
    ``described``: the domains' descriptions a sealed version recorded (else the store's now)."""
    from playlisteval.analytics.science import card_section  # issue 9: shortcut audit, accuracy by gap

    return (_card(bench.name, st, rows, is_simulated(engine)) + "\n"
            + card_section(settings, engine, int(bench.id or 0)) + "\n"
            + released.card_section(engine, list(st.pairs_by_domain), described))


def stats_of(data: dict[str, Any]) -> BenchmarkStats:
    """BenchmarkStats back from its ``as_dict`` (as a frozen version stored it: JSON keys are text)."""
    words: dict[str, Any] = {k: Length(**data[k]) for k in ("question_words", "gold_words", "degraded_words")
                             if k in data}
    rest: dict[str, Any] = {k: v for k, v in data.items() if k not in words}
    rest["pairs_by_gap"] = {int(g): n for g, n in (rest.get("pairs_by_gap") or {}).items()}
    return BenchmarkStats(**rest, **words)
