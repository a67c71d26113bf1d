"""Benchmarks (not tests: they measure wall time).

    python -m bench [options]             indexing throughput on a synthetic and a 720p collection: media
                                          (keyframe-aware vs exact vs re-encode), offline index, evidence
                                          (bench/index_speed.py, bench/index_figures.py), the default
    python -m bench index [options]       the same
    python -m bench retrieval [options]   HNSW vs exact search: p50 latency, recall@64 (bench/retrieval_speed.py)
    python -m bench report [options]      the analytics report over 1M judgments vs pandas (bench/report_speed.py)
    python -m bench batch [options]       P5: $ per accepted question and per judged pair, online vs batch
                                          (bench/batch_cost.py)
    python -m bench speech [options]      ASR word error rate and speed per backend; a narrated 720p video
                                          indexed; spoken-sentence search; cold `search` (bench/speech.py)
    python -m bench steps [options]       the build's step loop: transitions/s with a zero-latency model; with
                                          Redis workers, step-to-step gap and overhead at 1 s model latency,
                                          against the commit before the lean loop (bench/steps_speed.py)
    python -m bench commands [options]    whole commands as processes (--help, status, funnel, show, leaderboard,
                                          report) on 100k items / 1M ledger rows against a 10-item store
                                          (bench/commands_speed.py)
    python -m bench pipeline [options]    the main job's commands as processes (add, index, build, status, show,
                                          select, eval judge, eval retrieve, search, leaderboard, report) on a
                                          720p30 H.264 collection, beside ffmpeg's decodes and the floor of
                                          reading the store (bench/pipeline_speed.py)
    python -m bench index-command [options]  the whole `index --profile` on 5 minutes of camera-like 720p30
                                          (2.7 Mbit/s, per-frame clock, captions) and on the lecture, each beside
                                          ffmpeg's keyframe-only and full decode of the same file
                                          (bench/index_command.py, bench/camera_media.py)
    python -m bench embed-batches [options]  MiniLM's CPU on the index's text mix, batches cut by token length
                                          vs fixed batches of 32, vectors equal (bench/embed_batches.py)
    python -m bench index-hours [options]  the whole `index` over 1, 2 and 10 hours of camera-like 720p30 video
                                          (30-minute files stream-copied from 5-minute parts): peak memory at
                                          each and its growth per hour, hours per wall hour, linearity, 100
                                          hours projected (bench/index_hours.py)
    python -m bench evidence [options]    cold 128-frame evidence for one pair (two different 10-minute camera-like
                                          720p30 files at 2.7 Mbit/s, no kept frames; the lecture as a second row):
                                          exact timestamps vs the keyframe rule, and its ratio to ffmpeg's
                                          keyframe-only decode of the same files, <= 3x (bench/evidence_cold.py)
    python -m bench science [options]     calibration of the report's statistics on SIMULATED studies of known
                                          truth: coverage of every interval, size and power of the tests (Holm
                                          over 17 judges), beside the naive methods (bench/science.py)

    python -m bench capacity [options]    `eval judge` over the demo against a local OpenAI-compatible server that
                                          takes 16 calls at once (2 s each, 429 above): calls/s as a share of its
                                          capacity, 429 share, beside the old fixed 4 threads (bench/capacity.py)

``python -m bench NAME --help`` lists each one's options.
"""
import sys
from importlib import import_module

MODULES = {"index": "bench.index_speed", "retrieval": "bench.retrieval_speed", "report": "bench.report_speed",
           "batch": "bench.batch_cost", "speech": "bench.speech", "steps": "bench.steps_speed",
           "commands": "bench.commands_speed", "pipeline": "bench.pipeline_speed",
           "index-command": "bench.index_command", "index-hours": "bench.index_hours",
           "evidence": "bench.evidence_cold", "science": "bench.science",
           "capacity": "bench.capacity", "embed-batches": "bench.embed_batches"}



def compile_bytecode() -> None:
    """The package's bytecode written before anything is timed, as installing a wheel writes it: where the
    environment sets PYTHONDONTWRITEBYTECODE (this machine's does), every timed process would otherwise compile
    the modules it imports from source, which no installed copy does (0.16 CPU-s of compiling in a profile of
    the cold report; its wall time moved by less than this host's noise, ~0.1 s)."""
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for folder in ("playlisteval", "bench"):
        compileall.compile_dir(str(root / folder), quiet=1)


args = sys.argv[1:]
name = args.pop(0) if args and args[0] in MODULES else "index"  # no name (or only options): the index benchmark
if "-h" not in args and "--help" not in args:
    compile_bytecode()
raise SystemExit(import_module(MODULES[name]).main(args))
