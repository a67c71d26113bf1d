"""`human plan` (SPEC H1): which pairs people rate, in which slot the intended answer stands, and the
attention checks.

- Pairs are drawn from one benchmark, stratified by domain and rating gap: each (domain, gap) stratum
  gets its proportional share of ``pairs`` (largest remainders round), then a seeded draw inside it.
- Each task's intended (better) answer stands in slot A or B by a seeded coin of its own.
- About ``attention_share`` × pairs attention checks: the gold answer against the worst answer of a
  benchmark question (the largest gap there is), pairs that are not in the sample, so nobody sees a
  pair twice; questions the sample does not use are taken first.
Every draw is keyed by content (the question and answers' text), never by row ids, so the same
benchmark and seed give the same study on any store. Planning a name that exists changes nothing.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.names import check_plain_name
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.human.errors import HumanStudyError
from playlisteval.select.pairs import PairText, find_benchmark, pair_texts
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Benchmark, BenchmarkPair, BenchmarkQuestion, HumanStudy, HumanTask, Pair


@dataclass
class Plan:
    study_id: int
    name: str
    benchmark: str
    created: bool
    tasks: int = 0  # study tasks (pairs to rate)
    attention: int = 0  # attention-check tasks
    strata: dict[str, dict[int, int]] = field(default_factory=dict)  # domain -> gap -> pairs drawn
    warnings: list[str] = field(default_factory=list)


def task_key(p: PairText) -> str:
    """A pair's identity by content: the same pair has the same key on any store."""
    body = "\x1f".join([p.question, p.better, p.worse, str(p.better_rating), str(p.worse_rating)])
    return hashlib.sha256(body.encode()).hexdigest()[:24]


def allocate(sizes: dict[tuple[str, int], int], n: int) -> dict[tuple[str, int], int]:
    """Proportional allocation of ``n`` draws over strata of the given sizes, by largest remainders
    (ties broken by stratum name, so the result does not depend on the dict's order)."""
    total = sum(sizes.values())
    n = min(n, total)
    if total == 0:
        return {s: 0 for s in sizes}
    exact = {s: n * size / total for s, size in sizes.items()}
    quota = {s: int(v) for s, v in exact.items()}
    order = sorted(sizes, key=lambda s: (-(exact[s] - quota[s]), s))
    for s in order[: n - sum(quota.values())]:
        quota[s] += 1
    return quota


def slot_of(seed: int, key: str) -> str:
    """The slot (A or B) of a task's intended answer: one seeded coin per task."""
    return "A" if random.Random(f"{seed}:human-slot:{key}").random() < 0.5 else "B"


def _benchmark_pairs(engine: Engine, benchmark_id: int) -> list[PairText]:
    with transaction(engine) as s:
        ids = [int(i) for i in s.exec(select(BenchmarkPair.pair_id).where(
            BenchmarkPair.benchmark_id == benchmark_id)).all()]
    return list(pair_texts(engine, ids).values())


def _check_candidates(engine: Engine, benchmark_id: int, taken: set[int]) -> list[PairText]:
    """Each benchmark question's largest-gap pair (gold against its worst answer), outside the sample."""
    with transaction(engine) as s:
        items = [int(i) for i in s.exec(select(BenchmarkQuestion.item_id).where(
            BenchmarkQuestion.benchmark_id == benchmark_id)).all()]
        pairs = s.exec(select(Pair).where(col(Pair.item_id).in_(items or [-1]))).all()
    widest: dict[int, Pair] = {}
    for p in pairs:
        best = widest.get(p.item_id)
        if best is None or p.gap > best.gap:
            widest[p.item_id] = p
    ids = [int(p.id or 0) for p in widest.values() if p.id not in taken]
    return list(pair_texts(engine, ids).values())


def plan_study(settings: Settings, engine: Engine, name: str | None = None, *, pairs: int | None = None,
               annotators: int | None = None) -> Plan:
    cfg = settings.human
    try:  # one printable line, no path separator: it names the study's export and shows in its pages (issue 25)
        name = check_plain_name("human study", name or cfg.study)
    except ConfigError as exc:
        raise HumanStudyError(str(exc)) from None
    bench_name = cfg.benchmark or settings.select.benchmark
    with transaction(engine) as s:
        existing = s.exec(select(HumanStudy).where(HumanStudy.name == name)).first()
    if existing is not None:
        return describe(engine, existing, created=False)
    bench = find_benchmark(engine, bench_name)
    population = _benchmark_pairs(engine, int(bench.id or 0))
    if not population:
        raise HumanStudyError(f"benchmark {bench_name!r} has no pairs: run `playlisteval select` first")
    seed = settings.project.seed
    wanted = pairs if pairs is not None else cfg.pairs
    keyed = sorted(((task_key(p), p) for p in population), key=lambda kp: kp[0])
    strata: dict[tuple[str, int], list[tuple[str, PairText]]] = defaultdict(list)
    for key, p in keyed:
        strata[(p.domain, p.gap)].append((key, p))
    quota = allocate({s: len(v) for s, v in strata.items()}, wanted)
    chosen: list[tuple[str, PairText]] = []
    for stratum in sorted(strata):
        members = strata[stratum]
        rng = random.Random(f"{seed}:human-sample:{stratum[0]}:{stratum[1]}")
        chosen += rng.sample(members, quota[stratum])
    plan = Plan(0, name, bench_name, created=True)
    if wanted > len(population):
        plan.warnings.append(f"the benchmark has {len(population)} pair(s); all are in the study, not {wanted}")
    n_checks = round(cfg.attention_share * len(chosen))
    if cfg.attention_share > 0 and chosen:
        n_checks = max(1, n_checks)
    candidates = _check_candidates(engine, int(bench.id or 0), {p.pair_id for _, p in chosen})
    used_items = {p.item_id for _, p in chosen}
    # questions the sample leaves out first: a check then never repeats a question just rated
    ranked = sorted(((p.item_id in used_items, task_key(p), p) for p in candidates), key=lambda t: (t[0], t[1]))
    fresh = [(k, p) for used, k, p in ranked if not used]
    rng = random.Random(f"{seed}:human-checks")
    checks = rng.sample(fresh, min(n_checks, len(fresh)))
    if len(checks) < n_checks:
        rest = [(k, p) for used, k, p in ranked if used]
        checks += rng.sample(rest, min(n_checks - len(checks), len(rest)))
    if len(checks) < n_checks:
        plan.warnings.append(f"only {len(checks)} attention check(s) could be made, not {n_checks}")
    settings_used = {"pairs": wanted, "annotators_per_pair": annotators or cfg.annotators_per_pair,
                     "attention_share": cfg.attention_share, "min_reason_words": cfg.min_reason_words}
    rows = sorted([(k, p, False) for k, p in chosen] + [(k, p, True) for k, p in checks], key=lambda t: t[0])
    with transaction(engine) as s:
        study = HumanStudy(name=name, benchmark_id=int(bench.id or 0), seed=seed, settings=settings_used)
        s.add(study)
        s.flush()
        for key, p, check in rows:
            s.add(HumanTask(study_id=int(study.id or 0), pair_id=p.pair_id, task_key=key,
                            intended_slot=slot_of(seed, key), attention_check=check))
    out = describe(engine, study, created=True)
    out.warnings = plan.warnings
    return out


def describe(engine: Engine, study: HumanStudy, *, created: bool) -> Plan:
    with transaction(engine) as s:
        tasks = s.exec(select(HumanTask).where(HumanTask.study_id == study.id)).all()
        bench = s.get(Benchmark, study.benchmark_id)
    texts = pair_texts(engine, [t.pair_id for t in tasks if not t.attention_check])
    strata: dict[str, Counter[int]] = defaultdict(Counter)
    for p in texts.values():
        strata[p.domain][p.gap] += 1
    return Plan(int(study.id or 0), study.name, bench.name if bench else "?", created,
                tasks=sum(1 for t in tasks if not t.attention_check),
                attention=sum(1 for t in tasks if t.attention_check),
                strata={d: dict(sorted(c.items())) for d, c in sorted(strata.items())})
