"""The build's step loop (issue 13): item transitions per second with a zero-latency model, and with Redis
workers the gap between a step's commit and the next step's first model call, and the loop's overhead
at 1 s model latency.

Each figure comes from a process of its own (this file run as a script with ``child``), for this tree
and for a baseline commit (default: the one before the lean step loop, unpacked with ``git archive``),
one after the other in the same run, so a ratio is taken on the same machine under the same load:

1. ``inproc``: a store with ``--seeds`` seeds over made-up videos (sim worlds, no media), a ``--budget``
   so every paid call is checked against it, optionally ``--ledger-rows`` earlier ledger rows (a long
   project: the old budget check summed them all); `build` with the in-process broker and its default
   threads and the sim at zero latency. Transitions = ``item_event`` rows, over the build's wall time.
   ``inproc_1thread``: the same on one broker thread (what the default threads cost under the GIL).
2. ``redis``: a redis-server of its own, one `playlisteval worker` process (``--redis-threads`` threads,
   as many as items, so no item waits for a thread), ``--redis-items`` items, sim latency 1 s. From
   the store: gap = first call of a step − the previous step's commit (``item_event.at``), per step that
   calls a model; overhead = 1 − (model seconds) / (commit-to-commit seconds) over those steps.
3. ``redis_few``: two items on two threads (the queue is mostly empty, so a consumer's back-off grows), also
   run with this tree's worker polling at dramatiq's default bound (1 s) instead of ``workers.POLL_MS``.
4. ``redis_saturated``: the same with four items per thread (half the threads): messages wait in Redis
   while every thread is in a call; busy = model seconds / (threads x the time every thread had an
   item), so a consumer asleep while work waits shows as idle threads.

    .venv/bin/python -m bench steps [--seeds 60] [--ledger-rows 100000] [--baseline REV | --no-baseline]

Prints each figure with the 1-minute load average; saves build/bench/steps.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "bench"
BASELINE = "14552a3"  # main before the lean step loop (issue 13)


# -- in the child process: only ``playlisteval`` of the tree on PYTHONPATH is imported ------------------
def _settings(project: Path, env: dict[str, str]) -> Any:
    from playlisteval.config import load_settings, write_project

    if not (project / "playlisteval.toml").exists():
        write_project(project)
    return load_settings(project, environ=env)


def _seed(settings: Any, n: int, ledger_rows: int) -> None:
    """``n`` seeds over made-up 2-minute videos, each with a sim world beside its path (the sim needs no
    media), four 30-s chunks per video, one segment per video; then ``ledger_rows`` finished calls."""
    import random

    import numpy as np

    from playlisteval.store import open_store, transaction
    from playlisteval.store.tables import Chunk, Domain, Playlist, Seed, Segment, Video
    from playlisteval.world.synth import vocab
    from playlisteval.world.synth.make import plan_world
    from playlisteval.world.synth.world import save_world

    engine = open_store(settings)
    rng, taken = random.Random(n), set[str]()
    topic = vocab.TOPICS["Education"][0][0]
    vector = np.ones(4, dtype=np.float32).tobytes()
    videos = settings.root / "videos"
    videos.mkdir(exist_ok=True)
    with transaction(engine) as s:
        domain = Domain(name="Education")
        s.add(domain)
        s.flush()
        playlist = Playlist(domain_id=domain.id or 0, name="P1")
        s.add(playlist)
        s.flush()
        for i in range(n):
            segments = []
            for j in range(2):
                path = str(videos / f"v{i}_{j}.mp4")
                save_world(plan_world(rng, taken, domain="Education", playlist="P1", topic=topic,
                                      title=f"Series Episode {j + 1}", episode=j + 1, duration=120.0), path)
                video = Video(playlist_id=playlist.id or 0, path=path, title=f"v{i}_{j}", position=j,
                              duration=120.0, status="indexed", index_report=json.dumps({"run": f"bench-{i}-{j}"}))
                s.add(video)
                s.flush()
                for k in range(4):
                    s.add(Chunk(video_id=video.id or 0, idx=k, start=30.0 * k, end=30.0 * (k + 1),
                                transcript=f"narration {i} {j} {k}", transcript_source="captions"))
                segment = Segment(video_id=video.id or 0, idx=0, embedder="minilm", start=0.0, end=120.0,
                                  first_chunk=0, last_chunk=3, vector=vector)
                s.add(segment)
                s.flush()
                segments.append(segment)
            s.add(Seed(domain_id=domain.id or 0, segment1_id=segments[0].id or 0,
                       segment2_id=segments[1].id or 0, similarity=0.6))
    if ledger_rows:
        with transaction(engine) as s:
            conn = s.connection()
            conn.exec_driver_sql(
                "INSERT INTO model_call (request_hash, role, provider, model, purpose, status, cache_hit, "
                "input_tokens, output_tokens, thinking_tokens, gpu_seconds, estimated_usd, usd, latency_s, "
                "cached_input_tokens, batch_id, created_at) VALUES (?, 'B', 'sim', 'old', 'build', 'ok', 0, "
                "0, 0, 0, 0, 0, 0.0000001, 0.1, 0, 0, 0)", [(f"old{i}",) for i in range(ledger_rows)])


def _count(engine: Any, sql: str) -> Any:
    with engine.connect() as conn:
        return conn.exec_driver_sql(sql).scalar()


class Replay:
    """The zero-latency model: the sim's replies recorded by a first build of the same store, replayed by
    request (the sim itself spends ~20 ms of CPU per reply writing it). A request not recorded is asked of
    the sim and counted as a miss. Keyed by the request's JSON (pydantic's serializer), not by the runner's
    ``request_hash``: computing that a second time for the stand-in model was ~2.7 % of a step's CPU, the
    bench's cost rather than the loop's."""

    name = "sim"

    def __init__(self, inner: Any, memo: dict[str, Any], record: bool) -> None:
        self.inner, self.memo, self.record, self.misses = inner, memo, record, 0

    def complete(self, model: str, request: Any, schema: Any, timeout: float) -> Any:
        key = f"{model}\n{request.model_dump_json()}"
        if key in self.memo:
            return self.memo[key]
        reply = self.inner.complete(model, request, schema, timeout)
        if self.record:
            self.memo[key] = reply
        else:
            self.misses += 1
        return reply

    def __getattr__(self, name: str) -> Any:  # anything else a provider offers: the sim's
        return getattr(self.inner, name)


def _watch_write_lock(engine: Any) -> list[float]:
    """The seconds each transaction that may write held SQLite's write lock: from its ``BEGIN IMMEDIATE``
    (store/engine.py sends it in the engine's first ``begin`` listener; this one runs after it) to the end
    of its commit or rollback. One writer at a time: their sum over the build's wall time is how busy the
    one write lock was, the loop's ceiling that more threads cannot raise. Read-only transactions begin
    deferred and take no write lock: not counted."""
    from sqlalchemy import event

    try:
        from playlisteval.store.engine import _READ_ONLY
    except ImportError:  # a baseline from before read-only transactions: every transaction is counted
        _READ_ONLY = "playlisteval_read_only"

    try:  # a read on a connection kept per thread (store/kept.py) says so by a flag, not an option
        from playlisteval.store.kept import deferred
    except ImportError:  # a baseline from before it
        def deferred() -> bool:
            return False

    held: list[float] = []
    began: dict[int, float] = {}

    @event.listens_for(engine, "begin")
    def _began(conn: Any) -> None:
        if not (deferred() or conn.get_execution_options().get(_READ_ONLY, False)):
            began[id(conn.connection.driver_connection)] = time.perf_counter()

    dialect = engine.dialect
    for name in ("do_commit", "do_rollback"):
        def ended(dbapi_conn: Any, _end: Any = getattr(dialect, name)) -> None:
            try:
                _end(dbapi_conn)
            finally:
                start = began.pop(id(getattr(dbapi_conn, "driver_connection", dbapi_conn)), None)
                if start is not None:
                    held.append(time.perf_counter() - start)
        setattr(dialect, name, ended)  # this engine's dialect only
    return held


def _build_once(project: Path, env: dict[str, str], seeds: int, ledger_rows: int, memo: dict[str, Any],
                record: bool) -> dict[str, Any]:
    from playlisteval.actors.app import App
    try:
        from playlisteval.actors.build_run import build
    except ModuleNotFoundError:  # the baseline (14552a3) kept it in playlisteval/build.py, the same signature
        from playlisteval.build import build  # type: ignore[attr-defined,no-redef]
    from playlisteval.models.registry import Registry
    from playlisteval.models.runner import Runner
    from playlisteval.store import forget_engines, open_store

    forget_engines()
    settings = _settings(project, env)
    db = Path(settings.store_url[len("sqlite:///"):])
    for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        leftover.unlink(missing_ok=True)  # a fresh store: the same seeds, the same requests
    _seed(settings, seeds, ledger_rows)
    engine = open_store(settings)
    registry = Registry(settings)
    replay = Replay(registry.get("sim"), memo, record)
    registry.register("sim", replay)
    app = App(settings, engine=engine, runner=Runner(settings, engine, registry=registry))
    held = _watch_write_lock(engine)
    cpu, wall = time.process_time(), time.perf_counter()
    build(settings, app=app)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    held_s = sum(held)
    events = int(_count(engine, "SELECT count(*) FROM item_event"))
    calls = int(_count(engine, "SELECT count(*) FROM model_call WHERE request_hash NOT LIKE 'old%'"))
    with engine.connect() as conn:
        states = {str(k): int(v) for k, v in conn.exec_driver_sql("SELECT state, count(*) FROM item GROUP BY state")}
    return {"transitions": events, "calls": calls, "s": round(wall, 3), "cpu_s": round(cpu, 3),
            "per_s": round(events / wall, 1), "cpu_ms_per_transition": round(1000 * cpu / max(events, 1), 1),
            # the loop's two ceilings in this run: one core of CPU, and the one write lock (_watch_write_lock)
            "cpu_pct_of_wall": round(100 * cpu / wall, 1), "write_transactions": len(held),
            "write_held_ms_per_transition": round(1000 * held_s / max(events, 1), 2),
            "write_held_pct_of_wall": round(100 * held_s / wall, 1),
            "threads": settings.broker.threads, "states": states, "replay_misses": replay.misses,
            "load": round(os.getloadavg()[0], 2)}


def child_inproc(project: Path, seeds: int, ledger_rows: int, budget: float, threads: int = 0) -> dict[str, Any]:
    # no injected rate limits: their retries sleep (a model's latency, not the loop's)
    env = {"PLAYLISTEVAL_BUILD__BUDGET_USD": str(budget), "PLAYLISTEVAL_SIM__RATE_LIMITED": "0"}
    if threads:  # else the in-process broker's default
        env["PLAYLISTEVAL_BROKER__THREADS"] = str(threads)
    memo: dict[str, Any] = {}
    _build_once(project, env, seeds, 0, memo, record=True)  # the replies, recorded
    return _build_once(project, env, seeds, ledger_rows, memo, record=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int) -> None:
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"redis-server did not start on port {port}")


def child_redis(project: Path, items: int, threads: int, latency: float, timeout_s: float) -> dict[str, Any]:
    try:
        from playlisteval.actors.build_run import build
    except ModuleNotFoundError:  # the baseline's place for it (see _build_once)
        from playlisteval.build import build  # type: ignore[attr-defined,no-redef]
    from playlisteval.store import open_store
    try:
        from playlisteval.store.states import WORKING
    except ModuleNotFoundError:  # the baseline's playlisteval/state.py
        from playlisteval.state import WORKING  # type: ignore[import-not-found,no-redef]

    port = _free_port()
    redis = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                              "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(project.parent)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"PLAYLISTEVAL_BROKER__URL": json.dumps(f"redis://127.0.0.1:{port}/0"),
           "PLAYLISTEVAL_BROKER__THREADS": str(threads), "PLAYLISTEVAL_SIM__LATENCY_S": str(latency),
           "PLAYLISTEVAL_SIM__RATE_LIMITED": "0"}  # a rate-limit retry's backoff is the model's time, not the loop's
    worker = None
    try:
        _wait_port(port)
        project.mkdir(parents=True, exist_ok=True)
        settings = _settings(project, env)
        _seed(settings, items, 0)
        engine = open_store(settings)
        log = open(project / "worker.log", "wb")  # noqa: SIM115  (the worker writes it until it stops)
        worker = subprocess.Popen([sys.executable, "-c", "from playlisteval.cli import main; main()", "--project",
                                   str(project), "worker"], env={**os.environ, **env}, stdout=log, stderr=log)
        time.sleep(2.0)  # the worker's consumers up before the first message
        wall = time.perf_counter()
        build(settings)
        working = [st.value for st in WORKING]
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            left = _count(engine, "SELECT count(*) FROM item WHERE state IN ("
                          + ", ".join(f"'{w}'" for w in working) + ")")
            if not left:
                break
            time.sleep(0.2)
        wall = time.perf_counter() - wall
        figures = _step_figures(engine)
        figures.update(_busy(engine, threads, items))
        with engine.connect() as conn:
            figures["states"] = {str(k): int(v) for k, v in conn.exec_driver_sql(
                "SELECT state, count(*) FROM item GROUP BY state")}
        figures.update(s=round(wall, 2), items=items, threads=threads, latency_s=latency,
                       timed_out=time.time() >= deadline, load=round(os.getloadavg()[0], 2))
        return figures
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
        redis.terminate()
        redis.wait(timeout=10)


def _step_figures(engine: Any) -> dict[str, Any]:
    """Per item, each interval between two commits that holds model calls: the gap from the first
    commit to the interval's first call, and the model's seconds against the interval's length."""
    with engine.connect() as conn:
        events = conn.exec_driver_sql("SELECT item_id, at FROM item_event ORDER BY item_id, version").all()
        calls = conn.exec_driver_sql("SELECT item_id, created_at, latency_s, finished_at FROM model_call WHERE "
                                     "item_id IS NOT NULL AND status <> 'cached' ORDER BY item_id, created_at").all()
    by_item: dict[int, list[tuple[float, float, float]]] = {}
    for item_id, at, latency, finished in calls:
        by_item.setdefault(int(item_id), []).append((float(at), float(latency), float(finished or at)))
    gaps: list[float] = []
    tails: list[float] = []  # the step's last call's end → its commit
    model_s = interval_s = 0.0
    previous: tuple[int, float] | None = None
    for item_id, at in events:
        if previous is not None and previous[0] == item_id:
            inside = [(c, lat, end) for c, lat, end in by_item.get(int(item_id), []) if previous[1] < c <= at]
            if inside:
                gaps.append(inside[0][0] - previous[1])
                tails.append(at - inside[-1][2])
                model_s += sum(lat for _, lat, _ in inside)
                interval_s += at - previous[1]
        previous = (item_id, float(at))
    if not gaps:
        return {"steps": 0}
    gaps.sort()
    return {"steps": len(gaps), "gap_ms_median": round(1000 * statistics.median(gaps), 1),
            "gap_ms_p90": round(1000 * gaps[int(0.9 * (len(gaps) - 1))], 1),
            "gap_ms_mean": round(1000 * statistics.fmean(gaps), 1),
            "tail_ms_median": round(1000 * statistics.median(tails), 1),
            "overhead_pct": round(100 * (1 - model_s / interval_s), 2) if interval_s else None}


def _busy(engine: Any, threads: int, items: int) -> dict[str, Any]:
    """How busy the worker's threads kept the model while every thread had an item to work on: model
    seconds / (threads x that window), the window ending when fewer items than threads were left. With
    more items than threads, a consumer that sleeps while messages wait shows here as idle threads."""
    try:
        from playlisteval.store.states import TERMINAL
    except ModuleNotFoundError:  # the baseline's playlisteval/state.py
        from playlisteval.state import TERMINAL  # type: ignore[import-not-found,no-redef]

    done = tuple(st.value for st in TERMINAL)
    with engine.connect() as conn:
        start = conn.exec_driver_sql("SELECT min(created_at) FROM model_call WHERE item_id IS NOT NULL").scalar()
        ends = [float(t) for (t,) in conn.exec_driver_sql(
            "SELECT at FROM item_event WHERE to_state IN (" + ", ".join(f"'{d}'" for d in done) + ") ORDER BY at")]
        if start is None or len(ends) <= items - threads:
            return {}
        end = ends[items - threads] if items > threads else ends[0]
        rows = conn.exec_driver_sql("SELECT created_at, finished_at, latency_s FROM model_call WHERE item_id IS NOT "
                                    "NULL AND status <> 'cached' AND finished_at IS NOT NULL").all()
    model = 0.0
    for created, finished, latency in rows:  # each call's model seconds, clipped to the window
        inside = max(0.0, min(float(finished), end) - max(float(created), float(start)))
        span = float(finished) - float(created)
        model += float(latency) * (inside / span if span > 0 else 0.0)
    window = end - float(start)
    return {"busy_pct": round(100 * model / (threads * window), 1), "busy_window_s": round(window, 1)}


# -- the parent: one child per figure and tree -----------------------------------------------------------
def _baseline_tree(rev: str) -> Path:
    tree = OUT / f"steps-baseline-{rev}"
    if not (tree / "playlisteval").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", rev, "playlisteval"], cwd=ROOT, capture_output=True, check=True)
        tar = tree / "src.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as t:
            t.extractall(tree)
        tar.unlink()
    return tree


_POLL_HOOK = """import os
if os.environ.get("PE_BENCH_POLL_MS"):  # bench/steps_speed.py: the worker's poll bound set for one run
    import playlisteval.actors.workers as workers
    workers.POLL_MS = int(os.environ["PE_BENCH_POLL_MS"])
"""


def _run_child(tree: Path, args: list[str], timeout_s: float, poll_ms: int | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if poll_ms is not None:  # the worker process picks the bound up through a sitecustomize of its own
        hook = OUT / "steps-poll-hook"
        hook.mkdir(parents=True, exist_ok=True)
        (hook / "sitecustomize.py").write_text(_POLL_HOOK)
        env.update(PYTHONPATH=f"{tree}{os.pathsep}{hook}", PE_BENCH_POLL_MS=str(poll_ms))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "child", *args], env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:  # a child that printed no figure says why (its stderr's last lines)
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        return {"error": f"rc {done.returncode}, no figure printed: {tail or 'nothing on stderr'}"}
    try:
        return dict(json.loads(lines[-1]))
    except ValueError:
        return {"error": f"rc 0, the last line is not a figure: {lines[-1][:200]}"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "child":
        return _child(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m bench steps", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=60, help="items of the in-process build")
    ap.add_argument("--ledger-rows", type=int, default=100_000, help="earlier ledger rows of the second run")
    ap.add_argument("--budget", type=float, default=1000.0, help="build budget: every paid call is checked")
    ap.add_argument("--redis-items", type=int, default=8)
    ap.add_argument("--redis-threads", type=int, default=8)
    ap.add_argument("--latency", type=float, default=1.0, help="the sim's latency in the Redis runs (s)")
    ap.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--skip-redis", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT / "steps.json")
    args = ap.parse_args(argv)
    work = OUT / "steps-work"
    shutil.rmtree(work, ignore_errors=True)
    trees = {"new": ROOT}
    if not args.no_baseline:
        trees["old"] = _baseline_tree(args.baseline)
    results: dict[str, Any] = {"baseline": None if args.no_baseline else args.baseline, "cores": os.cpu_count()}
    runs = [("inproc", ["inproc", "{dir}", str(args.seeds), "0", str(args.budget)]),
            ("inproc_ledger", ["inproc", "{dir}", str(args.seeds), str(args.ledger_rows), str(args.budget)]),
            # one thread: what the default threads cost a zero-latency loop under the GIL (switches, lock waits)
            ("inproc_1thread", ["inproc", "{dir}", str(args.seeds), "0", str(args.budget), "1"])]
    if not args.skip_redis:
        runs.append(("redis", ["redis", "{dir}", str(args.redis_items), str(args.redis_threads), str(args.latency)]))
        # more items than threads: messages wait in Redis while threads finish their calls
        # two items on two threads: the queue is empty most of the time, the consumer's back-off grows
        runs.append(("redis_few", ["redis", "{dir}", "2", "2", str(args.latency)]))
        few = max(1, args.redis_threads // 2)
        runs.append(("redis_saturated", ["redis", "{dir}", str(4 * few), str(few), str(args.latency)]))
    for name, template in runs:
        for tree_name, tree in trees.items():
            folder = work / f"{name}-{tree_name}"
            child_args = [a.replace("{dir}", str(folder)) for a in template]
            figure = _run_child(tree, child_args, timeout_s=900)
            results.setdefault(name, {})[tree_name] = figure
            print(f"{name:14s} {tree_name}: {json.dumps(figure)}", flush=True)
            if figure.get("write_held_ms_per_transition"):
                print(f"{name:14s} {tree_name}: {ceilings(figure)}", flush=True)
        if name == "redis_few":  # this tree with dramatiq's default poll bound (1 s): what POLL_MS buys
            figure = _run_child(ROOT, [a.replace("{dir}", str(work / f"{name}-poll1000")) for a in template],
                                timeout_s=900, poll_ms=1000)
            results[name]["new_poll_1000ms"] = figure
            print(f"{name:14s} new, poll 1000 ms: {json.dumps(figure)}", flush=True)
        if "old" in results[name]:
            new, old = results[name]["new"], results[name]["old"]
            if name.startswith("inproc") and new.get("per_s") and old.get("per_s"):
                results[name]["ratio"] = round(new["per_s"] / old["per_s"], 2)
                # the baseline's sim sends some malformed checker replies, whose faults back off for seconds
                # (the replay repeats them): its wall time is then mostly sleep, and CPU a transition is the
                # comparison that holds
                results[name]["cpu_ratio"] = round(old["cpu_ms_per_transition"] / new["cpu_ms_per_transition"], 2)
                print(f"{name:14s} transitions/s new/old = {results[name]['ratio']}x, CPU a transition old/new = "
                      f"{results[name]['cpu_ratio']}x (old busy {old['cpu_pct_of_wall']:.0f} % of its wall; load "
                      f"{new['load']} / {old['load']})", flush=True)
            if name.startswith("redis") and new.get("gap_ms_median") and old.get("gap_ms_median"):
                results[name]["gap_ratio"] = round(old["gap_ms_median"] / new["gap_ms_median"], 1)
    results["goals"] = goals(results)
    print("goals (issues 13 and 26; at the default sizes: a short run is mostly start-up):")
    for goal, (seen, met) in results["goals"].items():
        print(f"  {goal:<66} {seen:>12}  {'met' if met else 'NOT met'}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"saved {args.out}")
    return 0


PER_S_MIN, GAP_MS_MAX, OVERHEAD_PCT_MAX = 100.0, 50.0, 2.0  # issue 13's goals for the step loop
PER_S_GOAL = 200.0  # issue 26's: in one process on a quiet machine


def ceilings(figure: dict[str, Any]) -> str:
    """What bounds an in-process run: the process's CPU (the GIL lets one thread run Python at a time, so
    about one core: 1000 / CPU ms a transition) and SQLite's one write lock (1000 / ms it was held a
    transition). Threads raise neither; a figure near one of them is at that limit."""
    core = 1000 / figure["cpu_ms_per_transition"]
    lock = 1000 / figure["write_held_ms_per_transition"]
    return (f"{figure['per_s']:.1f}/s against ceilings of one core {core:.0f}/s (CPU {figure['cpu_pct_of_wall']:.0f} % "
            f"of wall) and the write lock {lock:.0f}/s (held {figure['write_held_pct_of_wall']:.0f} % of wall, "
            f"{figure['write_transactions']} write transactions)")


def goals(results: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each goal this run measured, with what it saw and whether it holds (this tree's figures)."""
    out: dict[str, tuple[str, bool]] = {}
    inproc = results.get("inproc", {}).get("new", {})
    if inproc.get("per_s"):
        out[f"transitions/s, one process, zero latency >= {PER_S_MIN:g}"] = (
            f"{inproc['per_s']:.1f}/s", inproc["per_s"] >= PER_S_MIN)
    for name, how in (("inproc", "default threads"), ("inproc_1thread", "one thread")):
        run = results.get(name, {}).get("new", {})
        if run.get("per_s"):
            out[f"transitions/s, one process, {how} >= {PER_S_GOAL:g} (issue 26)"] = (
                f"{run['per_s']:.1f}/s", run["per_s"] >= PER_S_GOAL)
    redis = results.get("redis", {}).get("new", {})
    if redis.get("gap_ms_median") is not None:
        out[f"Redis step-to-step gap, median <= {GAP_MS_MAX:g} ms"] = (
            f"{redis['gap_ms_median']:.1f} ms", redis["gap_ms_median"] <= GAP_MS_MAX)
    if redis.get("overhead_pct") is not None:
        out[f"overhead at {redis.get('latency_s', 1.0):g} s latency, Redis workers <= {OVERHEAD_PCT_MAX:g} %"] = (
            f"{redis['overhead_pct']:.2f} %", redis["overhead_pct"] <= OVERHEAD_PCT_MAX)
    return out


def _child(argv: list[str]) -> int:
    kind, folder = argv[0], Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    from playlisteval import logs

    # as `playlisteval build` sets it at its default verbosity: warnings only (a step's info line is -v);
    # unset, structlog prints every level, and a line per step was ~7 % of the loop's CPU here
    logs.configure(0)
    if kind == "inproc":
        out = child_inproc(folder, int(argv[2]), int(argv[3]), float(argv[4]), int(argv[5]) if len(argv) > 5 else 0)
    else:
        out = child_redis(folder, int(argv[2]), int(argv[3]), float(argv[4]), timeout_s=600)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
