"""A re-select never changes a benchmark silently (issue 22).

`select` under an existing benchmark name changes nothing — that is what makes it safe to run again (an
interrupted gate resumes, `--no-wait` draws on the next run). But items accepted after the benchmark was
drawn are then left out without a word. So `select` looks for them: the finished items (accepted,
selected, too easy) whose step to ``accepted`` was committed after the benchmark's last *draw* — its
version 1, or the last version a redraw made; versions that `remove` or a re-indexed video made drew
nothing, so they do not count; ``benchmark.drawn_at`` (2300) is the time the draw read its pool, so an
unchanged redraw also counts — and that the benchmark does not hold. Found ones are named per domain
and `select` exits 3 with the benchmark unchanged; `select --redraw` draws it again from every accepted
item with this run's settings: the live version is frozen first (its export and leaderboard kept, as
`remove` does: select/versions.py) and the new draw becomes the next version. A redraw whose content
hash does not move makes no version.

Why refuse rather than redraw by default: a redraw runs the difficulty gate on the new questions (real
money with real weak judges) and a new seeded draw over a larger pool can replace most of the pairs, so
judge runs of the old version judge mostly new pairs; that is a decision, not a side effect of running
a command again. The times compared are the store's own (``item_event.at``, ``benchmark_version.created_at``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import Settings
from playlisteval.select.gate_key import judge_key
from playlisteval.store import benchmark_gate
from playlisteval.store import versions as stored_versions
from playlisteval.store.engine import transaction
from playlisteval.store.states import FINISHED, State
from playlisteval.store.tables import (
    Benchmark,
    BenchmarkPair,
    BenchmarkQuestion,
    Domain,
    Item,
    ItemEvent,
    Seed,
)

DRAWS = ("select",)  # the version reasons that drew the benchmark's questions (remove / index drew nothing)


def drawn_at(engine: Engine, benchmark_id: int) -> tuple[int, float] | None:
    """(version, time) of the benchmark's last draw by its versions — the newest made by `select`, else its
    first — for a benchmark drawn before ``benchmark.drawn_at`` was kept."""
    rows = stored_versions.listing(engine, benchmark_id)
    if not rows:
        return None
    draws = [r for r in rows if r.reason in DRAWS] or rows[:1]
    return draws[-1].version, float(draws[-1].created_at)


def accepted_since(engine: Engine, bench: Benchmark) -> dict[str, int]:
    """Domain name → how many finished items were accepted after the benchmark's last draw and are not
    among its questions (empty: the draw saw every accepted item there is)."""
    bid = int(bench.id or 0)
    drawn = drawn_at(engine, bid)
    since = float(bench.drawn_at or 0) or (drawn[1] if drawn else float(bench.created_at))
    accepted = (select(ItemEvent.item_id, func.max(ItemEvent.at).label("at"))
                .where(ItemEvent.to_state == State.ACCEPTED.value).group_by(col(ItemEvent.item_id)).subquery())
    held = select(BenchmarkQuestion.item_id).where(BenchmarkQuestion.benchmark_id == bid)
    with transaction(engine) as s:
        rows = s.exec(select(Domain.name, func.count())
                      .select_from(Item)
                      .join(accepted, accepted.c.item_id == col(Item.id))
                      .join(Seed, col(Seed.id) == col(Item.seed_id))
                      .join(Domain, col(Domain.id) == col(Seed.domain_id))
                      .where(col(Item.state).in_([st.value for st in FINISHED]),
                             col(Item.current_set_id).is_not(None), accepted.c.at > since,
                             col(Item.id).not_in(held))
                      .group_by(col(Domain.name)).order_by(col(Domain.name))).all()
    return {str(name): int(n) for name, n in rows}


def describe(found: dict[str, int]) -> str:
    """``History: 2, Science: 1`` (the change named, per domain)."""
    return ", ".join(f"{name}: {n}" for name, n in found.items())


def refusal(name: str, version: int, found: dict[str, int], default_name: str) -> str:
    """The message of a re-select that found items its benchmark's draw did not see."""
    total = sum(found.values())
    named = "" if name == default_name else f" --name {name}"
    return (f"benchmark {name!r} version {version} was drawn before {total} item(s) were accepted "
            f"({describe(found)}): they are not in it and it was not changed; `playlisteval select --redraw"
            f"{named}` draws version {version + 1} from every accepted item (version {version} stays readable: "
            f"`leaderboard --version {version}`, `export --version {version}`), or `select --name NEW` draws "
            "another benchmark")


def judges_changed(settings: Settings, bench: Benchmark) -> list[str]:
    """``F_first: sim/weak → sim/judge`` for each weak judge configured now that is not the one the benchmark
    was gated with (its key where the draw recorded one — model, generation settings, prompt, evidence —
    else its model); a benchmark drawn before weak judges were recorded has nothing to compare."""
    drawn: dict[str, Any] = bench.settings or {}
    models, keys = drawn.get("weak_judges") or {}, drawn.get("weak_judge_keys") or {}
    changed = []
    for role, was in sorted(models.items()):
        now = settings.model_for(role)
        if now != was:
            changed.append(f"{role}: {was} → {now}")
        elif role in keys and keys[role] != judge_key(settings, role):
            changed.append(f"{role}: {was} with other settings (generation, prompt or evidence)")
    return changed


def judges_refusal(name: str, version: int, changed: list[str], default_name: str) -> str:
    """The message of a re-select whose weak judges are not those the benchmark was gated with."""
    named = "" if name == default_name else f" --name {name}"
    return (f"benchmark {name!r} version {version} was gated by other weak judges than those configured now "
            f"({'; '.join(changed)}): it was not judged again and stays as drawn; `playlisteval select --name NEW` "
            f"gates and draws another benchmark with them, or `playlisteval select --redraw{named}` draws version "
            f"{version + 1} of this one with them (version {version} stays readable: `export --version {version}`)")


def clear_draw(s: Session, benchmark_id: int) -> None:
    """Drop the benchmark's drawn questions and pairs, in the transaction that writes the redraw's in their
    place (the caller froze the live version first). Judge runs, judgments and versions stay."""
    s.execute(delete(BenchmarkPair).where(col(BenchmarkPair.benchmark_id) == benchmark_id))
    s.execute(delete(BenchmarkQuestion).where(col(BenchmarkQuestion.benchmark_id) == benchmark_id))
    benchmark_gate.clear(s.connection(), benchmark_id)  # its gate records: the redraw copies its own
