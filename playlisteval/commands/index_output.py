"""What `playlisteval index` prints: the report as text or JSON, and why a result is empty."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console
from playlisteval.config import Settings
from playlisteval.store.tables import Segment, Video


def _paths(engine: Engine, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    with Session(engine) as session:
        return {int(i or 0): p for i, p in session.exec(select(Video.id, Video.path).where(col(Video.id).in_(ids)))}


def _videos_by_status(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {str(s): int(n) for s, n in session.exec(select(Video.status, func.count()).group_by(Video.status))}


def _live_segments(engine: Engine, embedder: str) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Segment).join(Video, col(Video.id) == Segment.video_id)
                                .where(Segment.embedder == embedder, Video.status == "indexed",
                                       col(Segment.duplicate_of).is_(None))).one())


def hints(report: Any, engine: Engine, settings: Settings) -> list[str]:
    """Why a count is zero, and what to run (issue 14: no empty result without a reason)."""
    out: list[str] = []
    statuses = _videos_by_status(engine)
    cfg = settings.index
    if not sum(statuses.values()):
        return ["the collection is empty: add videos first (`playlisteval add DOMAIN FOLDER…` or `add --manifest "
                "FILE`; for the offline world, `playlisteval synth videos` writes some)"]
    if not report.videos_indexed and not report.skipped and not report.failed and not report.unfinished:
        out.append(f"no new video to index: {statuses.get('indexed', 0)} indexed already"
                   + (f", {statuses['skipped']} skipped (their files; `add` them again once repaired)"
                      if statuses.get("skipped") else "")
                   + (f", {statuses['duplicate']} near-duplicate(s)" if statuses.get("duplicate") else ""))
    if not report.seeds.candidates:
        live = _live_segments(engine, cfg.embedder)
        if live < 2:
            out.append(f"no seeds: {live} live segment(s), and a seed pairs two; index more videos (or a video "
                       "longer than [index] segment_max_s makes several segments)")
        else:
            scope = "one playlist" if cfg.seeds_same_playlist else "one domain"
            out.append(
                f"no seeds: no two of the {live} live segments qualify — a seed pairs two segments of {scope} whose "
                f"cosine lies in [{cfg.seed_similarity_min}, {cfg.seed_similarity_max}] and, within one video, "
                f"{cfg.seed_min_gap_s:g} s apart. Short videos need short segments: [index] segment_min_s and "
                f"segment_max_s (now {cfg.segment_min_s:g} and {cfg.segment_max_s:g} s; e.g. "
                "PLAYLISTEVAL_INDEX__SEGMENT_MIN_S=60 PLAYLISTEVAL_INDEX__SEGMENT_MAX_S=90), then `playlisteval index`")
    elif not report.seeds.inserted:
        out.append(f"all {report.seeds.candidates} seed(s) were stored already; `playlisteval build` makes items "
                   "for seeds that have none")
    return out


def index_json(report: Any, engine: Engine, settings: Settings) -> dict[str, Any]:
    paths = _paths(engine, [d.video_id for d in report.segments.duplicates]
                   + [d.of_video_id for d in report.segments.duplicates] + report.retried)
    return {
        "videos_indexed": report.videos_indexed, "chunks": report.chunks,
        "transcripts": dict(report.transcript_sources), "asr_models": dict(report.transcript_models),
        "no_text": report.no_text,
        "vectors": {"computed": report.embedded, "reused": report.reused},
        "ocr": {"read": report.ocr_read, "reused": report.ocr_reused},
        "segments": report.segments.segments,
        "near_duplicates": [{"path": paths.get(d.video_id), "of": paths.get(d.of_video_id),
                             "similarity": round(d.similarity, 4)} for d in report.segments.duplicates],
        "seeds": {"new": report.seeds.inserted, "candidates": report.seeds.candidates},
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "failed": [{"path": s.path, "reason": s.reason} for s in report.failed],
        "unfinished": report.unfinished, "retried": [paths.get(v) for v in report.retried],
        "held": [{"video_id": h.video_id, "path": h.path, "owner": h.owner, "until": round(h.until, 3)}
                 for h in report.held],
        "warnings": report.warnings, "hints": hints(report, engine, settings),
        "seconds": round(report.seconds, 3), "changed": report.changed.as_dict(),
        "unreachable": [{"path": u.path, "domain": u.domain} for u in _unreachable(engine, settings)],
    }


def _unreachable(engine: Engine, settings: Settings) -> list[Any]:
    from playlisteval.index.embedders import get_embedder
    from playlisteval.index.search import unreachable_videos

    cfg = settings.index  # the embedder `index` just used (cached in the process: nothing is loaded again)
    return unreachable_videos(engine, get_embedder(cfg.embedder, cfg.embedding_dims, cfg))


#: videos named one by one before "… and N more"
_NAMED = 10


def print_unreachable(engine: Engine, settings: Settings) -> None:
    """Issue 44: the indexed videos no query can find, named (they are not an error: a visual embedder, or
    captions added later, would reach them)."""
    found = _unreachable(engine, settings)
    if not found:
        return
    console.print(f"  [yellow]{len(found)} indexed video(s) have no vector[/] — no speech, captions or on-screen "
                  "text to embed — so no query can find them (add captions, or index with a visual embedder):",
                  highlight=False, soft_wrap=True)
    for u in found[:_NAMED]:
        console.print(f"    {u.domain}: {u.path}", highlight=False, markup=False, soft_wrap=True)  # copyable
    if len(found) > _NAMED:
        console.print(f"    … and {len(found) - _NAMED} more (`playlisteval index --json` lists all)", highlight=False)


def print_index_report(report: Any, engine: Engine, settings: Settings) -> None:
    sources = ", ".join(f"{n} from {src}" for src, n in sorted(report.transcript_sources.items())) or "none"
    if report.no_text:  # still chunks (a visual embedder finds them), but no words to search by
        sources += f"; {report.no_text} with no text"
    rtf = f", {report.video_seconds / report.seconds:.1f}x real time" if report.video_seconds and report.seconds else ""
    console.print(
        f"indexed {report.videos_indexed} video(s) in {report.seconds:.1f}s{rtf}: {report.chunks} chunks "
        f"(transcripts: {sources}); on-screen text: {report.ocr_read} frame(s) read, {report.ocr_reused} "
        f"unchanged; vectors {report.embedded} computed, {report.reused} reused; "
        f"{report.segments.segments} segment(s); seeds {report.seeds.inserted} new of {report.seeds.candidates}",
        highlight=False,
    )
    for model, n in sorted(report.transcript_models.items()):
        console.print(f"  speech recognised by {model}: {n} chunk(s)", highlight=False)
    paths = _paths(engine, [d.video_id for d in report.segments.duplicates]
                   + [d.of_video_id for d in report.segments.duplicates] + report.retried)
    for dup in report.segments.duplicates:
        console.print(f"  [yellow]near-duplicate[/] {paths.get(dup.video_id)} repeats {paths.get(dup.of_video_id)} "
                      f"(segment cosine {dup.similarity:.3f} > {settings.index.near_duplicate}): left out of seeds",
                      highlight=False)
    for video_id in report.retried:
        console.print(f"  tried again under the new settings: {paths.get(video_id)}", highlight=False)
    changed = report.changed
    for path in changed.reindexed:
        console.print(f"  [yellow]changed on disk[/] {path}: indexed again; what its old content made (chunks, "
                      "segments, seeds, items) was dropped", highlight=False)
    for path in changed.unreadable:
        console.print(f"  [yellow]changed on disk[/] {path}: the new file cannot be used (skipped)", highlight=False)
    for path in changed.busy:
        console.print(f"  [yellow]changed on disk[/] {path}: an item built on it is being worked on; the next "
                      "`playlisteval index` re-indexes it", highlight=False)
    if changed.finished_items:
        console.print(f"  {changed.finished_items} finished item(s) were built on the old content and went with "
                      "it", highlight=False)
    for skipped in report.skipped:
        console.print(f"  [yellow]skipped[/] {skipped.path}: {skipped.reason}", highlight=False)
    for failed in report.failed:
        console.print(f"  [red]failed[/] {failed.path}: {failed.reason}", highlight=False)
    if report.unfinished:
        console.print(f"  [yellow]not finished[/] {len(report.unfinished)} video(s) still queued or failing; "
                      "run `playlisteval index` again (or look at the workers' logs)", highlight=False)
    for held in report.held:  # issue 25: what `index` could not take, and why
        until = datetime.fromtimestamp(held.until).astimezone().strftime("%Y-%m-%d %H:%M:%S")
        console.print(f"  [yellow]held[/] {held.path}: leased by {held.owner} until {until} (renewed while that "
                      f"worker lives; taken back once it stops)", highlight=False)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", highlight=False)
    for hint in hints(report, engine, settings):
        console.print(f"  [cyan]hint[/] {hint}", highlight=False)


def index_exit(report: Any) -> int:
    """3 when videos failed (a setting to fix) or were left unfinished; skipped files are reported, not errors."""
    return exitcodes.INCOMPLETE if report.failed or report.unfinished else exitcodes.DONE
