"""Evidence clips for every task of a study (SPEC H2): ground through the runner, then cut 30-s clips.

A grounded range becomes the whole 30-s chunks of the video it overlaps (the video's own chunk grid,
so a clip is exactly one chunk). Per segment the chunks cited most (a hop's range counts twice, an
answer sentence's once) are kept, up to ``max_clips_per_hop``, and shown in time order. Each is cut
exactly (re-encoded, H.264 + AAC, fast start) into the media folder, named by content, so tasks of one
question share their files. A clip's poster (the still a player shows before it plays) is a frame `index`
kept inside the clip's range (playlisteval/media/kept.py): no decoding; none when none was kept.

A grounding that stays unusable, a model error, or a clip that cannot be cut leaves the task in
``fault`` with its reason: no task is ever ready with an empty clip list. The next run retries faults
as a new attempt (a new request, so no cached answer is reused). A budget stop leaves the rest pending.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.errors import BudgetExceeded, MediaError, ModelError
from playlisteval.human import grounding
from playlisteval.human.grounding import GroundedRange, GroundingInput, SegmentMedia
from playlisteval.human.tasks import study_tasks
from playlisteval.logs import get_logger
from playlisteval.media.clips import ClipSpec, model_clip
from playlisteval.media.kept import KeptFrames, kept_root
from playlisteval.models import preflight
from playlisteval.models.runner import Runner
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanStudy, HumanTask

log = get_logger(__name__)
HOP_WEIGHT = 2  # a hop's own range outranks an answer sentence's when clips are chosen
CLIP_FPS_CAP = 30.0  # annotators' clips keep the source frame rate up to this

Progress = Callable[[int, int], None]


@dataclass
class EvidenceReport:
    ready: int = 0  # tasks with their clips (before and now)
    grounded_now: int = 0
    faults: dict[int, str] = field(default_factory=dict)  # task id -> reason
    pending: int = 0  # left for a later run (the budget stopped this one)
    paused: str = ""  # why the run stopped early
    calls: int = 0


def choose_chunks(found: list[GroundedRange], seg: SegmentMedia, chunk_s: float, limit: int) -> list[int]:
    """Indices (on the video's chunk grid) of the chunks to show for one segment, in time order."""
    score: dict[int, int] = defaultdict(int)
    for r in found:
        if r.hop != seg.hop:
            continue
        lo, hi = seg.start + r.start, min(seg.start + r.end, seg.end)
        first = int(lo // chunk_s)
        last = max(first, int(math.ceil(hi / chunk_s)) - 1)
        for k in range(first, last + 1):
            score[k] += HOP_WEIGHT if r.supports.startswith("hop") else 1
    best = sorted(score, key=lambda k: (-score[k], k))[:limit]
    return sorted(best)


def _clips_for(settings: Settings, given: GroundingInput, found: list[GroundedRange]) -> list[dict[str, Any]]:
    cfg = settings.human
    media_dir = settings.media_dir
    clips = []
    for seg in given.segments:
        for k in choose_chunks(found, seg, cfg.clip_s, cfg.max_clips_per_hop):
            start, end = max(k * cfg.clip_s, seg.start), min((k + 1) * cfg.clip_s, seg.end)
            path = model_clip(seg.path, ClipSpec(start=start, end=end, fps=CLIP_FPS_CAP, size=cfg.clip_size,
                                                 audio=True, crf=cfg.clip_crf), media_dir,
                              settings.providers.clip_timeout_s)
            supports = [r for r in found if r.hop == seg.hop and seg.start + r.start < end
                        and seg.start + min(r.end, seg.length) > start - 1e-6]
            clips.append({
                "hop": seg.hop, "video_id": seg.video_id, "start": start, "end": end,
                "poster": _poster(media_dir, seg.path, start, end),
                "segment_start": start - seg.start, "segment_end": end - seg.start,
                "file": str(Path(path).resolve().relative_to(media_dir)),
                "supports": sorted({r.supports for r in supports}, key=_support_order),
                "events": list(dict.fromkeys(r.event for r in supports if r.event))[:4],
            })
    return clips


def _poster(media_dir: Path, video: str, start: float, end: float) -> str | None:
    """The kept frame nearest the middle of [start, end), relative to the media folder; None if none."""
    kept = KeptFrames(kept_root(media_dir), video)
    inside = kept.within(start, end)
    if not inside:
        return None
    middle = (start + end) / 2
    t = min(inside, key=lambda k: (abs(k - middle), k))
    return str(kept.path(t).resolve().relative_to(media_dir))


def _support_order(label: str) -> tuple[int, int]:
    kind, _, n = label.partition(" ")
    return (0 if kind == "hop" else 1, int(n) if n.isdigit() else 0)


def _check(given: GroundingInput, parsed: dict[str, Any]) -> str | None:
    return grounding.problem(parsed, given)


def _save(engine: Engine, task_id: int, **values: Any) -> None:
    with transaction(engine) as s:
        task = s.get(HumanTask, task_id)
        assert task is not None
        for key, value in values.items():
            setattr(task, key, value)
        s.add(task)


def ground_study(settings: Settings, engine: Engine, study: HumanStudy, *, runner: Runner | None = None,
                 progress: Progress | None = None) -> EvidenceReport:
    # the SDK, the key and a price for model H, and no sim on videos synth did not make
    preflight.require(settings, "human clips", preflight.roles(settings, ["H"]), engine)
    runner = runner or Runner(settings, engine)
    tasks = study_tasks(engine, int(study.id or 0))
    report = EvidenceReport(ready=sum(1 for t in tasks if t.evidence_status == "ok"))
    todo = [t for t in tasks if t.evidence_status != "ok"]
    for n, task in enumerate(todo, 1):
        task_id = int(task.id or 0)
        try:
            given = grounding.load_input(engine, task.pair_id)
            request = grounding.build_request(settings, given, task.evidence_attempts)
            response = runner.call(request, validate=functools.partial(_check, given))
        except BudgetExceeded as exc:
            report.pending = len(todo) - n + 1
            report.paused = str(exc)
            break
        except ModelError as exc:  # transient errors the runner gave up on, permanent ones: retry later
            _fault(engine, task, f"model H failed: {exc}", 0, report)
            continue
        report.calls += 1
        call_id = int(response.call_id or 0)
        if response.malformed or response.parsed is None:
            _fault(engine, task, f"grounding unusable: {response.malformed_reason}", call_id, report)
            continue
        found = grounding.ranges(response.parsed)
        try:
            clips = _clips_for(settings, given, found)
        except MediaError as exc:
            _fault(engine, task, f"cannot cut a clip: {exc}", call_id, report)
            continue
        if not clips:  # the checker requires a range per hop, so this is a bug, and kept as a fault
            _fault(engine, task, "the grounding gave no clip", call_id, report)
            continue
        _save(engine, task_id, evidence_status="ok", evidence_reason="", evidence_call_id=call_id,
              grounding=response.parsed, clips={"clips": clips})
        report.ready += 1
        report.grounded_now += 1
        if progress:
            progress(n, len(todo))
    return report


def _fault(engine: Engine, task: HumanTask, reason: str, call_id: int, report: EvidenceReport) -> None:
    task_id = int(task.id or 0)
    log.warning("human.evidence_fault", task=task_id, reason=reason[:300])
    _save(engine, task_id, evidence_status="fault", evidence_reason=reason[:2000],
          evidence_attempts=task.evidence_attempts + 1, evidence_call_id=call_id, clips=None)
    report.faults[task_id] = reason
