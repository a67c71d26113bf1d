"""Judges run elsewhere (issue 40 item 9): a file of verdicts made a judge run of the benchmark.

A researcher exports the benchmark (`export`: ``data/test.jsonl``, one row per pair with ``pair_id``,
``answer_a``, ``answer_b``), has a judge answer every row wherever it runs, and brings the verdicts back
with `eval import FILE --judge NAME` (eval/verdict_file.py reads the file). The verdicts become a judge
run with judgments like those `eval judge` makes — same table, same sides, same scores — so the
leaderboard, `power`, `eval attribute`, the judge − judge table with Holm and the report count it
exactly as a run made here: the same pairs, the same clusters (question, video, playlist), the same
Holm family. What differs is on record, not in the statistics:

- the run's recorded settings are the benchmark protocol's options for the evidence it declares (the
  protocol's by default), plus ``imported: true`` and the source file's name and SHA-256 (eval/runkey.py
  ``PROVENANCE``: part of the run's hash, not of its variant, so it is its judge's *main* run);
- no model call was made here: nothing is on the ledger, so no spend is recorded for it (not $0 of some
  model); the tokens the file reports are kept on each judgment, never priced;
- each judgment's evidence record is ``{"mode": "imported", …}``: what the judge was shown is not known.

The sides: an exported row's ``answer_a`` is Model A, so a verdict "A" is read with the benchmark's
drawn side (``benchmark_pair.a_is_better``), as a forward run reads it; ``swapped`` reads a file judged
with the two answers exchanged (the position-bias pass). Everything is checked before one transaction
writes the run and all its judgments: a bad file leaves nothing behind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.benchmark.keys import pair_key, question_keys
from playlisteval.benchmark.names import check_judge_name
from playlisteval.benchmark.pairs import find_benchmark
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import runkey, verdict_file
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.verdicts import score
from playlisteval.logs import get_logger
from playlisteval.logs.redaction import redact_known, secret_values
from playlisteval.store import open_store, protocol, versions
from playlisteval.store.engine import read, transaction
from playlisteval.store.tables import Benchmark, BenchmarkPair, JudgeError, JudgeRun, Judgment, Pair, now

log = get_logger(__name__)

SPEND_NOTE = "not recorded: the judge ran elsewhere, no model call was made here (nothing is on the ledger)"


@dataclass
class ImportSummary:
    run_id: int
    judge: str
    benchmark: str
    evidence: str
    scope: str
    swapped: bool
    file: str
    sha256: str
    pairs: int  # the benchmark's
    judged: int  # lines imported, one judgment each
    missing: int  # benchmark pairs the file has no line for: the run is incomplete
    accuracy: float | None
    outcomes: dict[str, int] = field(default_factory=dict)
    input_tokens: int | None = None  # totals of what the file reports (None: it reports none)
    output_tokens: int | None = None
    replaced: list[int] = field(default_factory=list)  # earlier imported runs this one replaced
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def no_verdict(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != "verdict")

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "judge": self.judge, "benchmark": self.benchmark, "imported": True,
                "file": self.file, "sha256": self.sha256, "evidence": self.evidence, "scope": self.scope,
                "swapped": self.swapped, "pairs": self.pairs, "judged": self.judged, "missing": self.missing,
                "state": "finished" if not self.missing else "incomplete", "accuracy": self.accuracy,
                "no_verdict": self.no_verdict, "outcomes": self.outcomes, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "spend_usd": None, "spend": SPEND_NOTE,
                "replaced": self.replaced, "options_hash": runkey.options_hash(self.settings),
                "settings": self.settings}


def _keys_of(s: Session, rows: list[Any]) -> dict[str, list[int]]:
    """Content key (as `export` writes ``pair_id``) → the pair numbers with it; rows: (id, item, better, worse)."""
    qkeys = question_keys(s, {int(r[1]) for r in rows})
    out: dict[str, list[int]] = defaultdict(list)
    for pair_id, item_id, better, worse in rows:
        if int(item_id) in qkeys:
            out[pair_key(qkeys[int(item_id)], int(better), int(worse))].append(int(pair_id))
    return out


def _pair_rows(s: Session, benchmark_id: int, *, others: bool = False) -> list[Any]:
    query = (select(Pair.id, Pair.item_id, Pair.better_rating, Pair.worse_rating)
             .join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)))
    where = col(BenchmarkPair.benchmark_id) != benchmark_id if others else BenchmarkPair.benchmark_id == benchmark_id
    return list(s.exec(query.where(where)).all())


def _resolve(engine: Engine, bench: Benchmark, lines: list[verdict_file.VerdictLine],
             swapped: bool) -> tuple[dict[int, bool], dict[int, int], list[tuple[int, str]]]:
    """(benchmark pair → side, line number → pair, problems): every line's pair found in this benchmark,
    or its problem named — unknown, of another benchmark, given twice, on the other side."""
    bid = int(bench.id or 0)
    problems: list[tuple[int, str]] = []
    with read(engine) as s:
        sides = {int(p): bool(a) for p, a in s.exec(select(BenchmarkPair.pair_id, BenchmarkPair.a_is_better)
                                                     .where(BenchmarkPair.benchmark_id == bid)).all()}
        keys = _keys_of(s, _pair_rows(s, bid))
        strays = [ln for ln in lines if ln.pair not in (keys if isinstance(ln.pair, str) else sides)]
        elsewhere: dict[str | int, set[str]] = defaultdict(set)
        if strays:  # only then: the other benchmarks' keys, to say where a stray pair belongs
            names = dict(s.exec(select(Benchmark.id, Benchmark.name)).all())
            bench_of: dict[int, set[str]] = defaultdict(set)
            for p, b in s.exec(select(BenchmarkPair.pair_id, BenchmarkPair.benchmark_id)
                               .where(col(BenchmarkPair.benchmark_id) != bid)).all():
                bench_of[int(p)].add(str(names.get(b, b)))
            for key, ids in _keys_of(s, _pair_rows(s, bid, others=True)).items():
                for other_id in ids:
                    elsewhere[key] |= bench_of[other_id]
            for other_id, benches in bench_of.items():
                elsewhere[other_id] |= benches
    found: dict[int, int] = {}
    seen: dict[int, int] = {}  # pair → the line that gave it first
    for ln in lines:
        pair_id: int | None
        if isinstance(ln.pair, str):
            ids = keys.get(ln.pair, [])
            if len(ids) > 1:  # identical content: export names both the same way
                problems.append((ln.line, f"pair {ln.pair!r} names {len(ids)} pairs of identical content: "
                                          f"give the pair number ({', '.join(map(str, ids))})"))
                continue
            pair_id = ids[0] if ids else None
        else:
            pair_id = ln.pair if ln.pair in sides else None
        if pair_id is None:
            other = sorted(elsewhere.get(ln.pair, set()))
            problems.append((ln.line, f"pair {ln.pair!r} is a pair of benchmark {', '.join(map(repr, other))}, "
                                      f"not of {bench.name!r}" if other else
                                      f"unknown pair {ln.pair!r}: not a pair of benchmark {bench.name!r} "
                                      + ("(its `export` data/test.jsonl lists their pair_id)"
                                         if isinstance(ln.pair, str) else "(nor a pair number of it)")))
            continue
        if pair_id in seen:
            problems.append((ln.line, f"pair {ln.pair!r} was given already on line {seen[pair_id]}"))
            continue
        seen[pair_id] = ln.line
        expected = sides[pair_id] != swapped  # whether the file's Model A is the better answer
        if ln.a_is_better is not None and ln.a_is_better != expected:
            how = "swapped export" if swapped else "export"
            problems.append((ln.line, f"the line says answer {'A' if ln.a_is_better else 'B'} is the better one, "
                                      f"the benchmark's {how} says {'A' if expected else 'B'}: the file's A/B is "
                                      "not the orientation its verdicts are read in"
                                      + ("" if swapped else " (judged swapped? --swapped)")))
            continue
        found[ln.line] = pair_id
    return sides, found, problems


def _clear_way(s: Session, bid: int, judge: str, recorded: dict[str, Any], replace: bool) -> list[int]:
    """The earlier runs the new one would compete with for main run: an earlier import of the judge with
    the same evidence, scope and sides is deleted with ``replace`` (refused without); a run made here with
    the same options is never replaced (it was paid for): refused. Returns the run ids deleted."""
    runs = s.exec(select(JudgeRun).where(JudgeRun.benchmark_id == bid, JudgeRun.judge == judge,
                                         JudgeRun.evidence == recorded["evidence"],
                                         JudgeRun.scope == recorded["scope"],
                                         JudgeRun.swapped == bool(recorded["swap"]))).all()
    mine = runkey.variant_hash(recorded)
    for run in runs:
        options = runkey.parse_settings(run.settings)
        if not runkey.is_imported(options) and runkey.variant_hash(options) == mine:
            raise ConfigError(f"judge {judge!r} already has run {run.id} made here with these options: an import "
                              "under the same name would compete with it for its main run; import under another "
                              f"--judge name, or delete that run first (`playlisteval eval drop {run.id}`)")
    earlier = [r for r in runs if runkey.is_imported(runkey.parse_settings(r.settings))]
    if earlier and not replace:
        run = earlier[0]
        options = runkey.parse_settings(run.settings) or {}
        raise ConfigError(f"judge {judge!r} was imported already (run {run.id}, from {options.get('import_file')!r}, "
                          f"sha256 {str(options.get('import_sha256', ''))[:12]}…): pass --replace to replace it")
    ids = [int(r.id or 0) for r in earlier]
    if ids:
        s.execute(delete(Judgment).where(col(Judgment.run_id).in_(ids)))
        s.execute(delete(JudgeError).where(col(JudgeError.run_id).in_(ids)))
        s.execute(delete(JudgeRun).where(col(JudgeRun.id).in_(ids)))
    return ids


def import_verdicts(settings: Settings, path: Path, judge: str, benchmark: str | None = None, *,
                    evidence: str | None = None, scope: str | None = None, swapped: bool = False,
                    replace: bool = False) -> ImportSummary:
    """Read ``path`` and record it as judge ``judge``'s run of the benchmark; see the module docstring."""
    judge = check_judge_name(judge)
    engine = open_store(settings)
    bench = find_benchmark(engine, benchmark or settings.select.benchmark)
    bid = int(bench.id or 0)
    # the options of the benchmark protocol's main runs, for the evidence the import declares (issue 22)
    base = protocol.applied(settings, protocol.stored(engine, bid))
    options = JudgeOptions.from_settings(base, evidence=evidence, scope=scope, swap=swapped)
    vf, bad_lines = verdict_file.read_lines(path)
    sides, found, problems = _resolve(engine, bench, vf.lines, swapped)
    if bad_lines or problems:  # every problem of the file at once, in the order of its lines
        raise verdict_file.VerdictFileError(str(path), sorted(bad_lines + problems))
    recorded = {**options.as_settings(), runkey.IMPORTED: True, "import_file": vf.name, "import_sha256": vf.sha256}
    version = versions.version_number(engine, bid)  # its own transaction: before the write one
    rows: list[Judgment] = []
    keys = secret_values()  # a reply brought in a file is model text too: no known key stored (issue 44)
    tokens: dict[str, list[int]] = {"input_tokens": [], "output_tokens": []}
    for ln in vf.lines:
        pair_id = found[ln.line]
        a_is_better = sides[pair_id] != swapped
        record: dict[str, Any] = {"mode": "imported", "file": vf.name, "line": ln.line}
        for name in tokens:
            value = getattr(ln, name)
            if value is not None:  # reported by the file, kept as reported: never priced
                record[name] = value
                tokens[name].append(value)
        rows.append(Judgment(run_id=0, pair_id=pair_id, a_is_better=a_is_better, verdict=ln.verdict,
                             score=score(ln.verdict, a_is_better), raw=redact_known(ln.raw, keys), evidence=record,
                             outcome=ln.outcome, call_id=0))
    with transaction(engine) as s:  # one transaction: the run whole, or nothing
        replaced = _clear_way(s, bid, judge, recorded, replace)
        run = JudgeRun(benchmark_id=bid, judge=judge, evidence=options.evidence, scope=options.scope,
                       swapped=options.swap, settings=recorded, modality=options.modality,
                       options_hash=runkey.options_hash(recorded), benchmark_version=version, finished_at=now())
        s.add(run)
        s.flush()
        run_id = int(run.id or 0)
        for row in rows:
            row.run_id = run_id
        s.add_all(rows)
    scores = [r.score for r in rows]
    log.info("eval.imported", run_id=run_id, judge=judge, benchmark=bench.name, file=vf.name, sha256=vf.sha256,
             judged=len(rows), pairs=len(sides), replaced=replaced)
    return ImportSummary(
        run_id=run_id, judge=judge, benchmark=bench.name, evidence=options.evidence, scope=options.scope,
        swapped=options.swap, file=vf.name, sha256=vf.sha256, pairs=len(sides), judged=len(rows),
        missing=len(sides) - len(rows), accuracy=sum(scores) / len(scores) if scores else None,
        outcomes=dict(Counter(r.outcome for r in rows)),
        input_tokens=sum(tokens["input_tokens"]) if tokens["input_tokens"] else None,
        output_tokens=sum(tokens["output_tokens"]) if tokens["output_tokens"] else None,
        replaced=replaced, settings=recorded)


def label_board(engine: Engine, benchmark_id: int | None, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Mark the leaderboard's rows whose judge's forward full-domain runs (the board's) were imported
    (``row["imported"]``); returns judge → its imported runs, for the board's ``imported`` key."""
    runs = imported_runs(engine, benchmark_id) if benchmark_id is not None else {}
    by_judge: dict[str, list[Any]] = defaultdict(list)
    for run_id, info in sorted(runs.items()):
        by_judge[str(info["judge"])].append({"run_id": run_id, **{k: v for k, v in info.items() if k != "judge"}})
    on_board = {str(i["judge"]) for i in runs.values() if i["scope"] == "domain" and not i["swapped"]}
    for row in rows:
        row["imported"] = str(row.get("judge")) in on_board
    return dict(by_judge)


def imported_runs(engine: Engine, benchmark_id: int | None = None) -> dict[int, dict[str, Any]]:
    """Run id → {judge, evidence, scope, swapped, file, sha256} of every imported run (of one benchmark)."""
    query = core_select(*(col(c) for c in (JudgeRun.id, JudgeRun.judge, JudgeRun.evidence, JudgeRun.scope,
                                           JudgeRun.swapped, JudgeRun.settings)))
    if benchmark_id is not None:
        query = query.where(col(JudgeRun.benchmark_id) == benchmark_id)
    with read(engine) as s:
        rows = s.execute(query).all()
    out: dict[int, dict[str, Any]] = {}
    for run_id, judge, ev, sc, sw, raw in rows:
        options = runkey.parse_settings(raw)
        if runkey.is_imported(options):
            assert options is not None
            out[int(run_id)] = {"judge": judge, "evidence": ev, "scope": sc, "swapped": bool(sw),
                                "file": options.get("import_file"), "sha256": options.get("import_sha256")}
    return out
