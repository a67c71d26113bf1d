"""Cancelling running work (issue 44): `playlisteval cancel build|index|select|judge RUN`.

A cancellation is a row of the store's ``kv`` table, not a signal: the store is what every worker on every
machine reads, so a `cancel` typed anywhere reaches them all. Each kind of work checks it before it starts a
unit and, when it is set, leaves the unit as it was — the message is acknowledged and dropped:

- build (``cancel:build``): a step's claim (actors/middleware.StepClaim) takes no item; the item stays in its
  working state, unleased, for `resume`. A step in flight finishes and commits as usual; the message it sends
  for the next step is dropped at its claim. The sweepers send nothing while it is set (as for a budget pause).
- index (``cancel:index``): a video not yet started is left as it was (new); one in flight finishes.
- select (``cancel:gate:0``) and judge runs (``cancel:judge:RUN``): the queued jobs are marked ``cancelled`` in
  the same transaction, so the waiting command stops waiting on them; a job in flight finishes its question.

The waiting command (foreground `build`, `index`, `select`, `eval judge`) sees the row, ends with exit status
``CANCELLED`` and says what resumes it. Running the work again the normal way (`resume`/`build`, `index`,
`select`, `eval judge`) clears its row: a cancellation stops one run, it does not forbid the work.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.engine import Engine

from playlisteval.store.engine import transaction

# the ORM's table classes are imported in the functions that write or read rows, not here: `status` imports
# this module for PREFIX and what_of, and reads the store without the ORM (issue 26, tests/test_kept_imports.py)

PREFIX = "cancel:"
BUILD = f"{PREFIX}build"
INDEX = f"{PREFIX}index"
#: a job state (actors/jobs.py): queued when its run was cancelled; the next pass queues it again
JOB_CANCELLED = "cancelled"


def job_key(kind: str, run_id: int) -> str:
    """The cancellation of the jobs of one run: ``gate`` (run 0: `select`), ``judge`` or ``retrieve``."""
    return f"{PREFIX}{kind}:{run_id}"


@dataclass(frozen=True)
class Pending:
    key: str  # e.g. "cancel:judge:3"
    since: float  # when it was requested (epoch seconds)

    @property
    def what(self) -> str:
        return what_of(self.key)


def what_of(key: str) -> str:
    """The work a key cancels, as the `cancel` command names it ("build", "judge 3", "select")."""
    kind, _, run = key.removeprefix(PREFIX).partition(":")
    return "select" if kind == "gate" else kind + (f" {run}" if run else "")


def request(engine: Engine, key: str) -> int:
    """Record the cancellation; for a job key, mark the run's queued jobs cancelled (returns how many)."""
    from sqlmodel import col

    from playlisteval.store.tables import KeyValue, WorkJob, now

    stopped = 0
    with transaction(engine) as s:
        s.merge(KeyValue(key=key, value=repr(now())))
        kind, _, run = key.removeprefix(PREFIX).partition(":")
        if run:
            result = s.execute(update(WorkJob).where(
                col(WorkJob.kind) == kind, col(WorkJob.run_id) == int(run), col(WorkJob.state) == "queued")
                .values(state=JOB_CANCELLED, updated_at=now()))
            stopped = int(result.rowcount or 0)  # type: ignore[attr-defined]
    return stopped


def is_set(engine: Engine, key: str) -> bool:
    from playlisteval.store.tables import KeyValue

    with transaction(engine) as s:
        return s.get(KeyValue, key) is not None


def clear(engine: Engine, key: str) -> bool:
    """Lift the cancellation (the work is run again); whether one was set."""
    from playlisteval.store.tables import KeyValue

    with transaction(engine) as s:
        row = s.get(KeyValue, key)
        if row is None:
            return False
        s.delete(row)
        return True


def pending(engine: Engine) -> list[Pending]:
    """Every cancellation recorded and not yet cleared by running the work again, oldest first."""
    from sqlmodel import col, select

    from playlisteval.store.tables import KeyValue

    with transaction(engine) as s:
        rows = s.exec(select(KeyValue).where(col(KeyValue.key).startswith(PREFIX))).all()
        out = []
        for row in rows:
            try:
                since = float(row.value)
            except ValueError:  # written by hand: still a cancellation
                since = 0.0
            out.append(Pending(row.key, since))
    return sorted(out, key=lambda p: (p.since, p.key))
