"""Every kind of work as a module-level dramatiq actor on a named queue, taking ids (issue 10):

    queue "build":  generate_qa, check_qa, generate_distractors, check_distractors (item id): one per
                    working state, declared from the state table (state.STEPS)
    queue "index":  index_video (video id, embedder, run)
    queue "select": gate_question (job id: one question of the difficulty gate)
    queue "eval":   judge_question (job id: one question of a judge run), retrieve_questions (job id: a block of
                    up to 64 questions of a retriever run, embedded and searched as one batch)

Importing this module sets up the broker from the project's settings (found through PLAYLISTEVAL_PROJECT or
the working directory), so ``dramatiq playlisteval.actors.tasks`` serves the same queues as ``playlisteval
worker``, sweeper included (a worker middleware). In a process that makes an ``App`` (the CLI, the tests),
the App binds these same actors to its own broker (``bind``): one declaration, any broker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker

from playlisteval.actors import middleware
from playlisteval.actors.middleware import Sweeper
from playlisteval.actors.outage_logs import quiet_dramatiq_outages
from playlisteval.config import Settings
from playlisteval.errors import as_infrastructure
from playlisteval.logs import get_logger
from playlisteval.store.states import STEPS as STATE_STEPS
from playlisteval.store.states import State, Step

log = get_logger(__name__)

BUILD_QUEUE = STATE_STEPS[State.PENDING].queue
INDEX_QUEUE = "index"
SELECT_QUEUE = "select"
EVAL_QUEUE = "eval"
QUEUES = tuple(dict.fromkeys([*(step.queue for step in STATE_STEPS.values()), INDEX_QUEUE, SELECT_QUEUE, EVAL_QUEUE]))

#: the settings this module's broker came from, when a project was found at import (the dramatiq CLI)
SETTINGS: Settings | None = None


def with_middleware(target: dramatiq.Broker) -> dramatiq.Broker:
    """``target`` with this project's middleware (once): actors/middleware.py; dramatiq's lines during a
    store or broker outage folded into one warning (actors/outage_logs.py)."""
    quiet_dramatiq_outages()
    return middleware.install(target)


def _bootstrap() -> dramatiq.Broker:
    """The broker these actors are declared on at import: the process's own if it has one, else the
    project's (PLAYLISTEVAL_PROJECT or the working directory), else an in-process placeholder."""
    global SETTINGS
    from dramatiq import broker as dramatiq_broker

    existing = dramatiq_broker.global_broker
    if existing is not None:
        return with_middleware(existing)
    try:
        from playlisteval.actors.broker import is_redis, make_broker
        from playlisteval.config import load_settings

        project = os.environ.get("PLAYLISTEVAL_PROJECT")
        settings = load_settings(Path(project) if project else None)
        broker = make_broker(settings)
        if is_redis(settings.broker.url):
            broker.add_middleware(Sweeper())
        SETTINGS = settings
    except Exception:  # no project here: an App binds the actors to its broker later
        broker = StubBroker()
    dramatiq.set_broker(with_middleware(broker))
    return broker


broker = _bootstrap()
MAX_RETRIES = 5


def retry_infrastructure(retries: int, exc: BaseException) -> bool:
    """dramatiq's Retries retry a message only for an infrastructure error (Redis or the store failed under
    it), at most MAX_RETRIES times. Model calls have one retry layer, the runner's; a step's own outcomes
    (a failed item, a checker fault sent again after its backoff) are the step's to decide (step.py)."""
    return retries < MAX_RETRIES and as_infrastructure(exc) is not None


_RETRIES: dict[str, Any] = dict(retry_when=retry_infrastructure, min_backoff=2_000, max_backoff=120_000)


def _step(state: State, item_id: int) -> None:
    from playlisteval.actors.step import run_step, take_step

    turn = middleware.current_turn()  # opened by the step middleware before this body runs
    if turn is None or (turn.state, turn.item_id) != (state, item_id):  # a broker without it: run it inline
        from playlisteval.actors.app import current_app

        run_step(current_app(), state, item_id)
        return
    middleware.run_turn(turn, take_step)


def _declare_step(state: State, step: Step) -> dramatiq.Actor[[int], None]:
    """The actor of one working state, as state.STEPS declares it (name, queue)."""

    def run(item_id: int) -> None:
        _step(state, item_id)

    run.__name__ = run.__qualname__ = step.actor
    declare = dramatiq.actor(actor_name=step.actor, queue_name=step.queue, broker=broker, **_RETRIES)
    actor: dramatiq.Actor[[int], None] = declare(run)
    return actor


#: the build's step per working state, derived from the state table
STEPS: dict[State, dramatiq.Actor[[int], None]] = {state: _declare_step(state, step)
                                                   for state, step in STATE_STEPS.items()}
globals().update({actor.actor_name: actor for actor in STEPS.values()})  # module attributes, like the others


@dramatiq.actor(actor_name="index_video", queue_name=INDEX_QUEUE, broker=broker, retry_when=retry_infrastructure,
                min_backoff=1_000, max_backoff=30_000)
def index_video(video_id: int, embedder: str, run: str) -> None:
    from playlisteval.actors.app import current_app
    from playlisteval.index.work import index_video as work
    from playlisteval.store import cancels

    app = current_app()
    if cancels.is_set(app.engine, cancels.INDEX):  # `playlisteval cancel index`: the video stays as it was
        log.info("index.video_cancelled", video=video_id, run=run)
        return
    work(app.settings, app.engine, video_id, embedder, run, app.worker_id)
    log.info("index.video_done", video=video_id, run=run)  # a worker's line per unit of work


@dramatiq.actor(actor_name="gate_question", queue_name=SELECT_QUEUE, broker=broker, **_RETRIES)
def gate_question(job_id: int) -> None:
    from playlisteval.actors.evaluation import run_job

    run_job(job_id, "gate")


@dramatiq.actor(actor_name="judge_question", queue_name=EVAL_QUEUE, broker=broker, **_RETRIES)
def judge_question(job_id: int) -> None:
    from playlisteval.actors.evaluation import run_job

    run_job(job_id, "judge")


@dramatiq.actor(actor_name="retrieve_questions", queue_name=EVAL_QUEUE, broker=broker, **_RETRIES)
def retrieve_questions(job_id: int) -> None:
    from playlisteval.actors.evaluation import run_job

    run_job(job_id, "retrieve")


#: a job's actor per kind (actors/jobs.py)
JOBS: dict[str, dramatiq.Actor[[int], None]] = {"gate": gate_question, "judge": judge_question,
                                                "retrieve": retrieve_questions}
ALL: tuple[dramatiq.Actor[..., None], ...] = (*STEPS.values(), index_video, gate_question, judge_question,
                                              retrieve_questions)


def bind(target: dramatiq.Broker, settings: Settings) -> None:
    """Declare every actor on ``target`` (an App's broker) with time limits from ``settings``."""
    with_middleware(target)
    # each actor's dramatiq time limit comes just after its start-to-close ceiling (actors/ceilings.py): the
    # lease heartbeat fails the unit with the reason at the ceiling, the interrupt then frees the thread
    from playlisteval.actors import ceilings

    step_ms = ceilings.interrupt_ms(ceilings.step_s(settings), settings)
    index_ms = ceilings.interrupt_ms(ceilings.index_s(settings), settings)
    job_ms = ceilings.interrupt_ms(ceilings.job_s(settings), settings)
    for actor in ALL:
        limit = index_ms if actor is index_video else job_ms if actor in JOBS.values() else step_ms
        actor.options["time_limit"] = limit
        if actor.broker is not target or actor.actor_name not in target.get_declared_actors():
            actor.broker = target
            target.declare_actor(actor)
