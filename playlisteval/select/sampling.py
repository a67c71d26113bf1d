"""SPEC F3: the benchmark, drawn in two seeded levels per domain, and the items' moves that follow.

1. Accepted questions are sampled per domain to a common count (``questions_per_domain``; 0 = the
   smallest domain's count). Their ten pairs are made (F1) and go through the difficulty gate (F2).
2. ``pairs_per_domain`` kept pairs are drawn per domain from those questions' kept pairs.
Every draw is seeded by the project seed and the domain's name, over questions and pairs in the order of
their content keys (select/keys.py), never their row ids, so the same collection and seed give the same
benchmark on SQLite and PostgreSQL. Each drawn pair gets its Model A side from the shared seed (G5).

Then, through the state machine: a sampled question with a drawn pair is SELECTED; one the gate left
without any kept pair is TOO_EASY; the rest stay accepted. Selecting under an existing benchmark name
changes nothing (it only finishes moves an interrupted run left undone); when items were accepted after
its draw it says so, and ``redraw=True`` draws it again as its next version (select/redraw.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select as sa_select
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors.evaluation import fans_out
from playlisteval.benchmark.names import check_name
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.models.runner import Runner
from playlisteval.select.difficulty import GateReport, pending_pairs, run_gate
from playlisteval.select.gate_key import judge_key
from playlisteval.select.keys import by_key, pair_key, question_keys
from playlisteval.select.pairs import finished_items, make_pairs, side_of
from playlisteval.store import benchmark_gate, open_store
from playlisteval.store import items as item_store
from playlisteval.store.engine import transaction
from playlisteval.store.states import WORKING, Event, Limits, State
from playlisteval.store.tables import Benchmark, BenchmarkPair, BenchmarkQuestion, Domain, Item, Pair

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class DomainDraw:
    domain: str
    accepted: int = 0
    sampled: int = 0  # first level
    kept_pairs: int = 0
    pairs: int = 0  # second level
    questions: int = 0  # sampled questions with a drawn pair


@dataclass
class Selection:
    benchmark_id: int
    name: str
    created: bool
    domains: dict[str, DomainDraw] = field(default_factory=dict)
    gate: GateReport = field(default_factory=GateReport)
    selected: int = 0  # items moved to selected now
    too_easy: int = 0  # items moved to too_easy now
    warnings: list[str] = field(default_factory=list)
    sent: bool = False  # the gate's questions were sent to the workers, not waited for (--no-wait)
    new_items: dict[str, int] = field(default_factory=dict)  # domain → accepted after the draw, not in it
    redrawn: bool = False  # an existing benchmark drawn again (redraw=True)
    version: int = 0  # the live version after this run
    new_version: bool = False  # this run made it (a redraw whose content moved)
    judges_changed: list[str] = field(default_factory=list)  # weak judges configured now ≠ those it was drawn with

    @property
    def pairs(self) -> int:
        return sum(d.pairs for d in self.domains.values())


def _sample(rng_key: str, keys: dict[int, str], n: int) -> list[int]:
    """``n`` of the ids in ``keys`` (id → content key), drawn over the ids in key order: the draw does not
    depend on the ids, only on what they hold. Returned in key order."""
    ordered = by_key(keys)
    chosen = set(random.Random(rng_key).sample(ordered, min(n, len(ordered))))
    return [i for i in ordered if i in chosen]


def select_benchmark(settings: Settings, name: str | None = None, *, runner: Runner | None = None,
                     progress: Progress | None = None, wait: bool = True, redraw: bool = False) -> Selection:
    """Draw the benchmark (see the module's docstring). ``wait=False`` with Redis: the difficulty gate's
    questions are sent to the `playlisteval worker` processes and nothing is drawn until `select` runs again.
    ``redraw``: an existing benchmark is drawn again from every accepted item, as its next version."""
    from playlisteval.select import redraw as redraw_rules
    from playlisteval.store import versions as stored_versions

    engine = open_store(settings)
    name = check_name("benchmark", name or settings.select.benchmark)  # one printable line (issue 25)
    with transaction(engine) as s:
        existing = s.exec(select(Benchmark).where(Benchmark.name == name)).first()
        into = None if existing is None else Benchmark.model_validate(existing.model_dump())
    if into is not None and not redraw:
        bid = int(into.id or 0)
        out = Selection(bid, name, created=False)
        _describe(engine, out)
        _move_items(settings, engine, out)
        _fix_protocol_and_version(settings, engine, bid)  # one drawn before issue 22
        out.version = stored_versions.version_number(engine, bid)
        out.new_items = redraw_rules.accepted_since(engine, into)
        if out.new_items:  # never left out without a word (issue 22)
            out.warnings.append(redraw_rules.refusal(name, out.version, out.new_items, settings.select.benchmark))
        out.judges_changed = redraw_rules.judges_changed(settings, into)
        if out.judges_changed:  # not gated again, and not silently (issue 41)
            out.warnings.append(redraw_rules.judges_refusal(name, out.version, out.judges_changed,
                                                            settings.select.benchmark))
        return out
    if into is not None:
        _fix_protocol_and_version(settings, engine, int(into.id or 0))  # its version 1 first, to freeze
    cfg = settings.select
    pool_read_at = time.time()  # benchmark.drawn_at: items accepted after it are not in this draw
    by_domain = finished_items(engine)
    if not by_domain:
        raise ConfigError("no accepted items to select from: run `playlisteval build` first")
    working = sum(n for state, n in item_store.counts(engine).items() if state in {s.value for s in WORKING})
    warnings = [f"{working} item(s) are still being built: they are not part of this draw"] if working else []
    with transaction(engine) as s:
        names = {int(d.id or 0): d.name for d in s.exec(select(Domain)).all()}
        qkeys = question_keys(s, [i for ids in by_domain.values() for i in ids])
    count = cfg.questions_per_domain if cfg.questions_per_domain > 0 else min(len(v) for v in by_domain.values())
    seed = settings.project.seed
    draws: dict[int, DomainDraw] = {}
    sampled: dict[int, list[int]] = {}
    for domain_id, ids in sorted(by_domain.items()):
        dname = names[domain_id]
        sampled[domain_id] = _sample(f"{seed}:F3:questions:{dname}", {i: qkeys[i] for i in ids}, count)
        draws[domain_id] = DomainDraw(dname, accepted=len(ids), sampled=len(sampled[domain_id]))
        if len(ids) < count:
            warnings.append(f"{dname}: only {len(ids)} accepted question(s), fewer than {count}")
    every = [i for ids in sampled.values() for i in ids]
    make_pairs(engine, every)
    total = len(every) * 10
    done = [total - sum(len(v) for v in pending_pairs(engine, every, settings).values())]

    def tick(n: int) -> None:
        done[0] += n
        if progress:
            progress("difficulty gate", done[0], total)

    if progress:
        progress("difficulty gate", done[0], total)
    gate = run_gate(settings, engine, every, runner=runner, tick=tick, wait=wait)
    if not wait and fans_out(settings, runner) and gate.undecided:
        warnings.append(f"the difficulty gate's questions ({gate.undecided} pair(s)) were sent to the workers: run "
                        "`playlisteval select` again once they are done to draw the benchmark")
        return Selection(0, name, created=False, gate=gate, warnings=warnings, sent=True)
    if gate.undecided:  # a weak judge's fault leaves pairs open: no draw from a partial gate (issue 9)
        warnings.append(f"{gate.undecided} pair(s) have no difficulty verdict yet (a weak judge's call failed): "
                        "run `playlisteval select` again to ask again; nothing was drawn")
        return Selection(0, name, created=False, gate=gate, warnings=warnings)
    drawn: dict[int, list[int]] = {}
    with transaction(engine) as s:
        kept_rows = s.exec(select(Pair.id, Pair.item_id, Pair.better_rating, Pair.worse_rating)
                           .where(col(Pair.item_id).in_(every), col(Pair.kept).is_(True))
                           .order_by(col(Pair.item_id), col(Pair.better_rating), col(Pair.worse_rating))).all()
    kept_by_item: dict[int, list[int]] = {}
    pkeys: dict[int, str] = {}
    for pair_id, item_id, better, worse in kept_rows:
        kept_by_item.setdefault(int(item_id), []).append(int(pair_id or 0))
        pkeys[int(pair_id or 0)] = pair_key(qkeys[int(item_id)], better, worse)
    for domain_id, ids in sampled.items():
        kept = [p for i in ids for p in kept_by_item.get(i, [])]
        dname = names[domain_id]
        drawn[domain_id] = _sample(f"{seed}:F3:pairs:{dname}", {p: pkeys[p] for p in kept}, cfg.pairs_per_domain)
        draws[domain_id].kept_pairs = len(kept)
        draws[domain_id].pairs = len(drawn[domain_id])
        if len(kept) < cfg.pairs_per_domain:
            warnings.append(f"{dname}: only {len(kept)} kept pair(s), fewer than {cfg.pairs_per_domain}")
    pair_item = {p: i for i, ps in kept_by_item.items() for p in ps}
    drawn_with = {"questions_per_domain": count, "pairs_per_domain": cfg.pairs_per_domain,
                  "difficulty_evidence": cfg.difficulty_evidence, "difficulty_scope": cfg.difficulty_scope,
                  "weak_judges": {role: settings.model_for(role) for role in ("F_first", "F_second")},
                  "weak_judge_keys": {role: judge_key(settings, role) for role in ("F_first", "F_second")}}
    if into is not None:
        from playlisteval.select import versions

        versions.freeze(settings, engine, into)  # its export and leaderboard kept, as `remove` does
    try:
        bid = _write_draw(engine, name, seed, drawn_with, into, sampled, drawn, draws, kept_by_item, pair_item,
                          pkeys, pool_read_at)
    finally:
        made = _advance_redrawn(engine, into)
    out = Selection(bid, name, created=into is None, domains={d.domain: d for d in draws.values()}, gate=gate,
                    warnings=warnings, redrawn=into is not None, new_version=any(n == name for n, _, _ in made))
    _move_items(settings, engine, out)
    _fix_protocol_and_version(settings, engine, bid)
    out.version = stored_versions.version_number(engine, bid)
    return out


def _advance_redrawn(engine: Engine, into: Benchmark | None) -> list[tuple[str, int, str]]:
    """After a redraw (also a failed one): the next version when its content moved (select/versions.py)."""
    if into is None:
        return []
    from playlisteval.select import versions

    return versions.advance(engine, "select")


def _write_draw(engine: Engine, name: str, seed: int, drawn_with: dict[str, Any], into: Benchmark | None,
                sampled: dict[int, list[int]], drawn: dict[int, list[int]], draws: dict[int, DomainDraw],
                kept_by_item: dict[int, list[int]], pair_item: dict[int, int], pkeys: dict[int, str],
                drawn_at: float) -> int:
    """The draw's rows in one transaction: a new benchmark, or ``into``'s questions and pairs replaced."""
    from playlisteval.select.redraw import clear_draw

    with transaction(engine) as s:
        bench = Benchmark(name=name, seed=seed, settings=drawn_with) if into is None else s.get(Benchmark, into.id)
        if bench is None:
            raise ConfigError(f"benchmark {name!r} was removed while it was drawn again")
        bench.drawn_at = drawn_at
        if into is not None:
            bench.seed, bench.settings = seed, drawn_with
            clear_draw(s, int(into.id or 0))
        s.add(bench)
        s.flush()
        bid = int(bench.id or 0)
        for domain_id, ids in sampled.items():
            chosen = {pair_item[p] for p in drawn[domain_id]}
            draws[domain_id].questions = len(chosen)
            for item_id in ids:
                s.add(BenchmarkQuestion(
                    benchmark_id=bid, item_id=item_id, domain_id=domain_id,
                    kept_pairs=len(kept_by_item.get(item_id, [])),
                    drawn_pairs=sum(1 for p in drawn[domain_id] if pair_item[p] == item_id)))
            for pair_id in drawn[domain_id]:
                s.add(BenchmarkPair(benchmark_id=bid, pair_id=pair_id, a_is_better=side_of(seed, pkeys[pair_id])))
        s.flush()
        # the verdicts this draw was gated with become the benchmark's own (issue 41): in SQL, no row in Python
        gated = sa_select(col(Pair.difficulty)).where(col(Pair.id) == col(BenchmarkPair.pair_id)).scalar_subquery()
        s.execute(update(BenchmarkPair).where(col(BenchmarkPair.benchmark_id) == bid).values(difficulty=gated))
        # and the gate's record of every pair of its sampled questions, dropped ones too: its card's accuracy
        # by gap and weak judges read these, never the pairs' (the next draw's gate rewrites them)
        benchmark_gate.copy_draw(s.connection(), bid)
    return bid


def _fix_protocol_and_version(settings: Settings, engine: Engine, benchmark_id: int) -> None:
    """Issue 22: the protocol of the benchmark's main runs from the settings `select` runs with (kept if
    one is stored), and its version 1 with its content hash."""
    from playlisteval.select import versions
    from playlisteval.store import protocol

    protocol.store(engine, benchmark_id, protocol.of_settings(settings), "select", replace=False)
    with transaction(engine) as s:
        bench = s.get(Benchmark, benchmark_id)
        row = Benchmark.model_validate(bench.model_dump()) if bench is not None else None
    if row is not None:
        versions.ensure(engine, row)


def _describe(engine: Engine, out: Selection) -> None:
    """Fill an existing benchmark's per-domain counts from the store."""
    with transaction(engine) as s:
        rows = s.exec(select(BenchmarkQuestion, Domain.name)
                      .join(Domain, col(Domain.id) == col(BenchmarkQuestion.domain_id))
                      .where(BenchmarkQuestion.benchmark_id == out.benchmark_id)
                      .order_by(col(BenchmarkQuestion.item_id))).all()
    for q, dname in rows:
        d = out.domains.setdefault(dname, DomainDraw(dname))
        d.sampled += 1
        d.kept_pairs += q.kept_pairs
        d.pairs += q.drawn_pairs
        d.questions += q.drawn_pairs > 0


def _move_items(settings: Settings, engine: Engine, out: Selection) -> None:
    """SELECTED for sampled questions with a drawn pair, TOO_EASY for those with no kept pair."""
    with transaction(engine) as s:
        rows = s.exec(select(BenchmarkQuestion.item_id, BenchmarkQuestion.kept_pairs, BenchmarkQuestion.drawn_pairs,
                             Item.state)
                      .join(Item, col(Item.id) == col(BenchmarkQuestion.item_id))
                      .where(BenchmarkQuestion.benchmark_id == out.benchmark_id)
                      .order_by(col(BenchmarkQuestion.item_id))).all()
    limits = Limits(settings.build.attempts_per_phase, settings.build.phase2_per_question)
    for item_id, kept, drawn_n, state in rows:
        if state != State.ACCEPTED.value:
            continue  # already moved (by this benchmark or an earlier one)
        event = Event.SELECTED if drawn_n > 0 else Event.TOO_EASY if kept == 0 else None
        if event is None:
            continue
        claim = item_store.claim(engine, int(item_id), State.ACCEPTED, "select", settings.broker.lease_s)
        if claim is None:
            continue
        if item_store.commit(engine, claim, event, limits) is None:
            continue
        if event is Event.SELECTED:
            out.selected += 1
        else:
            out.too_easy += 1
