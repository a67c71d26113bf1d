"""Crowd platforms (issue 12): `human export DIR` writes what a platform hosts, `human import FILE.csv`
reads the ratings back.

Export: ``tasks.csv`` (one row per task whose clips are ready: the question, both answers as text and
with their word differences marked in escaped HTML, the clips' relative paths and labels), the clips
under ``clips/``, a ``ratings_template.csv`` and a ``README.txt``. Nothing in it tells which answer is
intended or which tasks are attention checks: that stays in the store.

Import: columns ``task_id, annotator, choice, reason`` (others are ignored). Every row is checked first
(a task of the study, an annotator, A or B, a reason of enough words, no second rating of a task by the
same annotator, in the file or in the store); one bad row and nothing is imported, and the error names
the line of every bad row.
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.human.diff import Piece
from playlisteval.human.errors import HumanStudyError
from playlisteval.human.grounding import mmss
from playlisteval.human.tasks import study_setting, study_tasks, task_views
from playlisteval.human.words import choice_problem, reason_problem
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanRating, HumanStudy, HumanTask, now

COLUMNS = ("task_id", "annotator", "choice", "reason")
MAX_PROBLEMS_SHOWN = 25


def marked_html(pieces: list[Piece]) -> str:
    """An answer as escaped HTML with each difference in <mark data-diff="k">."""
    out = []
    for p in pieces:
        text = escape(p.text)
        out.append(str(Markup('<mark data-diff="{}">{}</mark>').format(p.change, text))
                   if p.change is not None else str(text))
    return "".join(out)


@dataclass
class ExportReport:
    tasks: int
    clips: int
    skipped: int  # tasks without ready clips


def export_study(settings: Settings, engine: Engine, study: HumanStudy, out: Path) -> ExportReport:
    tasks = study_tasks(engine, int(study.id or 0))
    ready = [t for t in tasks if t.evidence_status == "ok"]
    views = task_views(engine, ready)
    max_clips = max((len(v.clips) for v in views.values()), default=0)
    (out / "clips").mkdir(parents=True, exist_ok=True)
    n_clips = 0
    header = ["task_id", "question", "answer_a", "answer_b", "answer_a_html", "answer_b_html", "differences",
              "n_clips"] + [f"clip_{i}{s}" for i in range(1, max_clips + 1) for s in ("", "_label")]
    with (out / "tasks.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for task in ready:
            v = views[int(task.id or 0)]
            diff = v.diff()
            row: list[object] = [v.task_id, v.question, v.answer_a, v.answer_b, marked_html(diff.a),
                                 marked_html(diff.b), diff.changes, len(v.clips)]
            for i, clip in enumerate(v.clips, 1):
                source = settings.media_dir / clip["file"]
                name = f"task{v.task_id}_clip{i}.mp4"
                shutil.copyfile(source, out / "clips" / name)
                n_clips += 1
                row += [f"clips/{name}", clip_label(clip)]
            row += [""] * (len(header) - len(row))
            writer.writerow(row)
    (out / "ratings_template.csv").write_text(",".join(COLUMNS) + "\n", encoding="utf-8")
    per_pair = study_setting(study, "annotators_per_pair", 3)
    words = study_setting(study, "min_reason_words", 20)
    (out / "README.txt").write_text(
        f"Human study {study.name!r}: {len(ready)} task(s) for a crowd platform.\n\n"
        "tasks.csv     one task a row: the question, answer A and answer B (plain text, and as HTML with\n"
        "              each difference in <mark data-diff=\"k\">), the number of differences, and the\n"
        "              evidence clips (H.264/AAC mp4 under clips/, with a label saying which video and when).\n"
        f"Ask for {per_pair} different workers per task. Each worker must choose A or B (no tie) and write a\n"
        f"reason of at least {words} words. Host the clips where the platform's task page can load them.\n\n"
        "Bring the ratings back as a CSV with the columns of ratings_template.csv\n"
        "(task_id, annotator, choice, reason; choice is A or B) and run:\n"
        "    playlisteval human import ratings.csv\n", encoding="utf-8")
    return ExportReport(len(ready), n_clips, len(tasks) - len(ready))


def clip_label(clip: dict[str, Any]) -> str:
    return f"Video {clip['hop']}, {mmss(clip['segment_start'])}-{mmss(clip['segment_end'])} of its segment"


def import_ratings(engine: Engine, study: HumanStudy, path: Path) -> int:
    """Import every row of ``path`` or none; returns how many ratings were added."""
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise HumanStudyError(f"{path}: cannot read: {exc.strerror}") from None
    with fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            raise HumanStudyError(f"{path}: empty file; expected the columns {', '.join(COLUMNS)}") from None
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise HumanStudyError(f"{path} line 1: missing column(s) {', '.join(missing)}; "
                                  f"expected {', '.join(COLUMNS)}")
        at = {c: header.index(c) for c in COLUMNS}
        rows = []
        start = reader.line_num + 1
        for raw in reader:
            rows.append((start, raw))
            start = reader.line_num + 1
    with transaction(engine) as s:
        task_ids = set(s.exec(select(HumanTask.id).where(HumanTask.study_id == study.id)).all())
        existing = {(int(t), a) for t, a in s.exec(select(HumanRating.task_id, HumanRating.annotator)
                                                   .where(col(HumanRating.task_id).in_(task_ids or {-1}))).all()}
    min_words = int(study_setting(study, "min_reason_words", 20))
    problems: list[str] = []
    seen: dict[tuple[int, str], int] = {}
    ratings = []
    for line, raw in rows:
        if not any(cell.strip() for cell in raw):
            continue  # blank lines
        cells = {c: (raw[i].strip() if i < len(raw) else "") for c, i in at.items()}
        why = []
        task_id = int(cells["task_id"]) if cells["task_id"].isdigit() else None
        if task_id is None:
            why.append(f"task_id {cells['task_id']!r} is not a number")
        elif task_id not in task_ids:
            why.append(f"task {task_id} is not a task of study {study.name!r}")
        annotator = " ".join(cells["annotator"].split())
        if not annotator:
            why.append("no annotator")
        choice = cells["choice"].upper()
        why += [p for p in (choice_problem(choice), reason_problem(cells["reason"], min_words)) if p]
        if task_id is not None and annotator:
            key = (task_id, annotator)
            if key in existing:
                why.append(f"{annotator!r} already rated task {task_id} (a rating is final)")
            elif key in seen:
                why.append(f"a second rating of task {task_id} by {annotator!r} (first on line {seen[key]})")
            seen.setdefault(key, line)
        if why:
            problems.append(f"{path} line {line}: {'; '.join(why)}")
        else:
            ratings.append(HumanRating(task_id=task_id or 0, annotator=annotator, choice=choice,
                                       reason=cells["reason"], source="import", created_at=now()))
    if problems:
        more = len(problems) - MAX_PROBLEMS_SHOWN
        shown = problems[:MAX_PROBLEMS_SHOWN] + ([f"… and {more} more bad row(s)"] if more > 0 else [])
        raise HumanStudyError(f"nothing imported: {len(problems)} bad row(s)\n" + "\n".join(shown))
    try:
        with transaction(engine) as s:
            s.add_all(ratings)
    except IntegrityError:
        raise HumanStudyError(f"{path}: nothing imported: a rating in it was stored meanwhile; run it again") from None
    return len(ratings)
