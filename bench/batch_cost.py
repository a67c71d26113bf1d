"""P5 (issue 15): what batch APIs, the response cache and context caching save, in $ per accepted question
and $ per judged pair, on one synthetic collection priced with the paper's price table.

One collection is synthesised and indexed once; then three copies of its store each run the whole job —
build, `select` (difficulty gate), one judge run — under one regime:

- **baseline**: everything online, the response cache off (every repeated request paid again);
- **online**: the project as it runs by default (response cache on, uploads reused);
- **batch**: every build role in [batch] roles (the build runs in rounds around batches), `select --batch`
  and `eval judge --batch` — all through the batch lifecycle (the sim's batch API, at the batch price;
  a malformed or unusable batched reply is repaired online, at the online price, as the runner would).

Every role is played by `sim` — SIMULATED — under a model name of its own, so that each role carries the
price of the paper's model for it (``PAPER``, with the prices of the project's config template); the
sim reports token counts shaped like Gemini's. Content must not depend on the regime: the benchmark
checks that the accepted questions, the drawn pairs and the judge's verdicts are identical in all three.

    .venv/bin/python -m bench batch [--videos 3] [--minutes 3] [--out build/bench/batch_cost.json]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: bench/batch_cost.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.config import Settings, load_settings, write_project
from playlisteval.store import forget_engines, open_store

#: role → the paper's model for it (its price is the config template's)
PAPER = {"B": "gemini/gemini-3-flash-preview", "C2_transcript_answer": "gemini/gemini-3-flash-preview",
         "C2_transcript_verify": "openai/gpt-5.4-mini", "C2_parametric_answer_a": "gemini/gemini-3-flash-preview",
         "C2_parametric_verify_a": "openai/gpt-5.4", "C2_parametric_answer_b": "openai/gpt-5.4-mini",
         "C2_parametric_verify_b": "gemini/gemini-3.1-pro-preview", "C3": "qwen/qwen3.7-plus",
         "D1": "gemini/gemini-3-flash-preview", "D3_first": "gemini/gemini-3.1-pro-preview",
         "D3_second": "openai/gpt-5.4", "D4": "qwen/qwen3.7-plus", "F_first": "gemini/gemini-3-flash-preview",
         "F_second": "openai/gpt-5.4-mini", "G": "gemini/gemini-3-flash-preview"}
REGIMES = ("baseline", "online", "batch")
JUDGE_ROLE = "G"


def _env() -> dict[str, str]:
    """Every role a sim model of its own name; small segments so a 3-minute video makes seeds."""
    env = {f"PLAYLISTEVAL_MODELS__{role}": f'"sim/{role.lower()}"' for role in PAPER}
    env.update({"PLAYLISTEVAL_INDEX__EMBEDDER": '"hash"', "PLAYLISTEVAL_INDEX__OCR": '"none"',
                "PLAYLISTEVAL_INDEX__SEGMENT_MIN_S": "60", "PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90",
                "PLAYLISTEVAL_EVAL__FRAMES": "16", "PLAYLISTEVAL_SELECT__QUESTIONS_PER_DOMAIN": "0",
                "PLAYLISTEVAL_SELECT__PAIRS_PER_DOMAIN": "30", "PLAYLISTEVAL_BATCH__POLL_S": "0.01",
                "PLAYLISTEVAL_BATCH__POLL_MAX_S": "0.05"})
    return env


def _settings(root: Path) -> Settings:
    settings = load_settings(root, environ=_env())
    # the paper's price for each role, on the sim model that plays it
    settings.prices.update({f"sim/{role.lower()}": settings.prices[spec] for role, spec in PAPER.items()})
    return settings


def prepare(root: Path, videos: int, minutes: float) -> Path:
    """The synthetic collection, added and indexed once: the store every regime starts from."""
    from playlisteval.actors.indexing import index_collection
    from playlisteval.index.collection import add_paths
    from playlisteval.world.synth.make import make_collection

    base = root / "base"
    write_project(base, force=True)
    settings = _settings(base)
    make_collection(root / "videos", domains=2, playlists=1, videos=videos, minutes=minutes, seed=0)
    engine = open_store(settings)
    for domain in sorted(p for p in (root / "videos").iterdir() if p.is_dir()):
        add_paths(engine, domain.name, sorted(domain.iterdir()))
    index_collection(settings, engine)
    forget_engines()
    return base


def _copy(base: Path, dest: Path) -> Settings:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "playlisteval.toml").write_text((base / "playlisteval.toml").read_text())
    src, dst = sqlite3.connect(base / "playlisteval.db"), sqlite3.connect(dest / "playlisteval.db")
    src.backup(dst)
    src.close()
    dst.close()
    return _settings(dest)


def run_regime(base: Path, root: Path, regime: str) -> dict[str, Any]:
    from playlisteval.actors.batch_rounds import BUILD_ROLES
    from playlisteval.actors.build_run import build
    from playlisteval.commands.batches import run_maybe_batched
    from playlisteval.eval.judge import run_judge
    from playlisteval.eval.options import JudgeOptions
    from playlisteval.models.runner import Runner
    from playlisteval.select.sampling import select_benchmark

    settings = _copy(base, root / regime)
    saved = Runner._cached
    if regime == "baseline":  # no response cache: every request is paid for, repeated or not
        Runner._cached = lambda self, key, spec, request: None  # type: ignore[method-assign]
    batch = regime == "batch"
    if batch:
        settings.batch.roles = sorted(BUILD_ROLES)
    started = time.perf_counter()
    try:
        build(settings)
        gate, _ = run_maybe_batched(settings, ("F_first", "F_second"), batch,
                                    lambda runner: select_benchmark(settings, runner=runner))
        judge = settings.model_for(JUDGE_ROLE)
        options = JudgeOptions.from_settings(settings)
        summary, _ = run_maybe_batched(settings, (JUDGE_ROLE,), batch,
                                       lambda runner: run_judge(settings, judge, options, runner=runner))
    finally:
        Runner._cached = saved  # type: ignore[method-assign]
    out = measure(settings, summary.run_id)
    out.update(regime=regime, wall_s=round(time.perf_counter() - started, 1), gate_undecided=gate.gate.undecided)
    forget_engines()
    return out


def _one(con: sqlite3.Connection, sql: str, *args: Any) -> Any:
    return con.execute(sql, args).fetchone()[0]


def measure(settings: Settings, run_id: int) -> dict[str, Any]:
    con = sqlite3.connect(settings.root / "playlisteval.db")
    paid = "status IN ('ok', 'malformed', 'error')"
    build_usd = _one(con, f"SELECT COALESCE(SUM(usd), 0) FROM model_call WHERE purpose = 'build' AND {paid}")
    accepted = _one(con, "SELECT COUNT(*) FROM item WHERE state IN ('accepted', 'selected', 'too_easy')")
    judge_usd = _one(con, f"SELECT COALESCE(SUM(usd), 0) FROM model_call WHERE run_id = ? AND {paid}", run_id)
    pairs = _one(con, "SELECT COUNT(*) FROM judgment WHERE run_id = ?", run_id)
    gate_usd = _one(con, f"SELECT COALESCE(SUM(usd), 0) FROM model_call WHERE purpose = 'select' AND {paid}")
    gate_pairs = _one(con, "SELECT COUNT(*) FROM pair WHERE kept IS NOT NULL")
    content = {
        "accepted": con.execute("SELECT i.id, q.question, q.answer FROM item i JOIN qa q ON q.id = i.current_qa_id "
                                "WHERE i.state IN ('accepted', 'selected', 'too_easy') ORDER BY i.id").fetchall(),
        "drawn": con.execute("SELECT p.item_id, p.better_rating, p.worse_rating, bp.a_is_better FROM benchmark_pair "
                             "bp JOIN pair p ON p.id = bp.pair_id ORDER BY 1, 2, 3").fetchall(),
        "verdicts": con.execute("SELECT p.item_id, p.better_rating, p.worse_rating, j.verdict FROM judgment j "
                                "JOIN pair p ON p.id = j.pair_id WHERE j.run_id = ? ORDER BY 1, 2, 3",
                                (run_id,)).fetchall(),
    }
    batched = _one(con, "SELECT COUNT(*) FROM model_call WHERE batch_id > 0 AND status = 'ok'")
    con.close()
    return {"build_usd": build_usd, "accepted": accepted, "usd_per_accepted": build_usd / max(1, accepted),
            "judge_usd": judge_usd, "pairs_judged": pairs, "usd_per_pair": judge_usd / max(1, pairs),
            "gate_usd": gate_usd, "gate_pairs": gate_pairs, "usd_per_gated_pair": gate_usd / max(1, gate_pairs),
            "batched_calls": batched, "content": content}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=3, help="videos per domain (2 domains)")
    parser.add_argument("--minutes", type=float, default=3.0, help="minutes per video")
    parser.add_argument("--work", type=Path, default=Path("build/bench/batch_cost"), help="scratch folder")
    parser.add_argument("--out", type=Path, default=Path("build/bench/batch_cost.json"))
    args = parser.parse_args(argv)
    from playlisteval.logs import configure

    configure()  # warnings and errors only, as the CLI without -v: not a line per step of every build
    args.work.mkdir(parents=True, exist_ok=True)
    base = prepare(args.work, args.videos, args.minutes)
    results = {regime: run_regime(base, args.work, regime) for regime in REGIMES}
    first = results["baseline"]["content"]
    same = {regime: r["content"] == first for regime, r in results.items()}
    table = []
    for regime, r in results.items():
        row = {k: v for k, v in r.items() if k != "content"}
        for key in ("usd_per_accepted", "usd_per_pair", "usd_per_gated_pair"):
            base_value = results["baseline"][key]
            row[key.replace("usd_per", "ratio")] = r[key] / base_value if base_value else None
        row["same_content_as_baseline"] = same[regime]
        table.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"regimes": table, "simulated": True}, indent=2))
    print(f"{'regime':9} {'$/accepted q':>13} {'ratio':>6} {'$/judged pair':>14} {'ratio':>6} "
          f"{'$/gated pair':>13} {'ratio':>6}  same content")
    for row in table:
        print(f"{row['regime']:9} {row['usd_per_accepted']:13.5f} {row['ratio_accepted']:6.2f} "
              f"{row['usd_per_pair']:14.6f} {row['ratio_pair']:6.2f} {row['usd_per_gated_pair']:13.6f} "
              f"{row['ratio_gated_pair']:6.2f}  {row['same_content_as_baseline']}")
    print("SIMULATED: sim plays every role, priced as the paper's model for that role.")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
