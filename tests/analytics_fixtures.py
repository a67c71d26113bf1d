"""A small store whose analytics numbers are worked out by hand (the expectations live in the tests).

Two domains, three playlists (= build runs), five items; one benchmark of four pairs; seven judge runs
(main passes, a swapped pass, a 10 h scope, a later sweep, a second judge, oracle evidence); two
retrieval runs; a ledger of build, eval and index calls.

    pair  item  domain     ratings  gap  a_is_better
    p1    1     Education  5 ≻ 4    1    True
    p2    1     Education  4 ≻ 3    1    False
    p3    4     Drama      5 ≻ 4    1    True
    p4    4     Drama      3 ≻ 1    2    False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.eval import runkey
from playlisteval.eval.options import default_settings
from playlisteval.store import transaction
from playlisteval.store.tables import (
    QA,
    Answer,
    Benchmark,
    BenchmarkPair,
    BenchmarkQuestion,
    DistractorSet,
    Domain,
    GateResult,
    Item,
    JudgeRun,
    Judgment,
    ModelCall,
    Pair,
    Playlist,
    Ranking,
    RetrievalRun,
    Seed,
    Segment,
    Video,
)

# the options a run with the configured defaults records, per evidence mode (the fixture's projects
# use the template's [eval] and [index] defaults, which are Settings()'s)
DEFAULTS = default_settings(Settings())

# words per rating (5 = gold … 1) of each item's answers; the gold also carries a citation, not counted
WORDS = {1: {5: 10, 4: 12, 3: 8, 2: 9, 1: 11}, 4: {5: 20, 4: 18, 3: 22, 2: 20, 1: 19}}
QUESTION_WORDS = {1: 5, 4: 7}


@dataclass
class Fixture:
    items: dict[int, int] = field(default_factory=dict)  # fixture item number → item id
    pairs: dict[str, int] = field(default_factory=dict)  # "p1" … → pair id
    runs: dict[str, int] = field(default_factory=dict)  # run name → judge_run id
    retrieval_runs: dict[str, int] = field(default_factory=dict)
    benchmark_id: int = 0


def _text(n: int, word: str = "w") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


def build(engine: Engine, *, gold_text: str | None = None, question_text: str | None = None,
          judge_names: dict[str, str] | None = None) -> Fixture:
    """Fill the store. ``gold_text`` / ``question_text`` replace item 1's (to plant hostile text)."""
    names = {"alpha": "alpha", "beta": "beta", **(judge_names or {})}
    fx = Fixture()
    with transaction(engine) as s:
        def add(obj: Any) -> Any:
            s.add(obj)
            s.flush()
            return obj

        edu, drama = add(Domain(name="Education")), add(Domain(name="Drama"))
        playlists = {"P1": add(Playlist(domain_id=edu.id, name="P1")), "P2": add(Playlist(domain_id=edu.id, name="P2")),
                     "P3": add(Playlist(domain_id=drama.id, name="P3"))}
        # item number → (domain, playlist, state)
        plan = {1: (edu, "P1", "selected"), 2: (edu, "P1", "accepted"), 3: (edu, "P2", "too_easy"),
                4: (drama, "P3", "selected"), 5: (drama, "P3", "discarded")}
        for number, (domain, pl, state) in plan.items():
            video = add(Video(playlist_id=playlists[pl].id, path=f"/v/{number}.mp4", title=f"v{number}",
                              status="indexed"))
            segs = [add(Segment(video_id=video.id, idx=j, embedder="minilm", start=0.0, end=600.0, first_chunk=0,
                                last_chunk=19, vector=b"\0" * 16)) for j in range(2)]
            seed = add(Seed(domain_id=domain.id, segment1_id=segs[0].id, segment2_id=segs[1].id, similarity=0.5))
            item = add(Item(seed_id=seed.id, state=state))
            fx.items[number] = item.id
        add(Video(playlist_id=playlists["P3"].id, path="/v/skipped.mp4", title="skipped", status="skipped"))

        sets: dict[int, int] = {}
        for number in (1, 4):
            question = _text(QUESTION_WORDS[number], "q")
            if number == 1 and question_text is not None:
                question = question_text
            qa = add(QA(item_id=fx.items[number], attempt=1, question=question, answer="gold"))
            ds = add(DistractorSet(item_id=fx.items[number], qa_id=qa.id, attempt=1))
            sets[number] = ds.id
            item = s.get(Item, fx.items[number])
            item.current_qa_id, item.current_set_id = qa.id, ds.id
            s.add(item)
            for rating, words in WORDS[number].items():
                text = _text(words)
                if rating == 5:
                    text = text + " (clip1 @ 0:30 - 1:10)."
                    if number == 1 and gold_text is not None:
                        text = gold_text
                add(Answer(set_id=ds.id, rating=rating, text=text))

        pair_plan = {"p1": (1, 5, 4, True, True), "p2": (1, 4, 3, True, False), "p1x": (1, 5, 3, False, None),
                     "p3": (4, 5, 4, True, True), "p4": (4, 3, 1, True, False)}
        bench = add(Benchmark(name="bench-1", seed=7))
        fx.benchmark_id = bench.id
        # SPEC F3's first level: items 1, 2 and 4 sampled; item 2 then had no pair drawn
        for number, domain, kept, drawn in ((1, edu, 2, 2), (2, edu, 0, 0), (4, drama, 2, 2)):
            add(BenchmarkQuestion(benchmark_id=bench.id, item_id=fx.items[number], domain_id=domain.id,
                                  kept_pairs=kept, drawn_pairs=drawn))
        a_is_better: dict[str, bool] = {}
        for name, (number, better, worse, kept, a_better) in pair_plan.items():
            pair = add(Pair(item_id=fx.items[number], set_id=sets[number], better_rating=better, worse_rating=worse,
                            gap=better - worse, kept=kept))
            fx.pairs[name] = pair.id
            if a_better is not None:
                add(BenchmarkPair(benchmark_id=bench.id, pair_id=pair.id, a_is_better=a_better))
                a_is_better[name] = a_better

        # run name → (judge, evidence, scope, swapped, settings, {pair: verdict})
        run_plan: dict[str, tuple[str, str, str, bool, dict[str, Any] | None, dict[str, str | None]]] = {
            "alpha_retrieved": ("alpha", "retrieved", "domain", False, None,
                                {"p1": "A", "p2": "B", "p3": "B", "p4": None}),
            "alpha_uniform": ("alpha", "uniform", "domain", False, None, {"p1": "B", "p2": "B", "p3": "A", "p4": "A"}),
            "alpha_swapped": ("alpha", "retrieved", "domain", True, None, {"p1": "A", "p2": "A", "p3": "A", "p4": "A"}),
            "alpha_10h": ("alpha", "retrieved", "10h", False, None, {"p1": "A", "p2": "A", "p3": "A", "p4": "A"}),
            "alpha_sweep": ("alpha", "retrieved", "domain", False, {"thinking": "high"},
                            {"p1": "A", "p2": "B", "p3": "A", "p4": "B"}),
            "beta_retrieved": ("beta", "retrieved", "domain", False, None, {"p1": "A", "p3": "A"}),
            "alpha_oracle": ("alpha", "oracle", "oracle", False, None, {"p1": "A", "p2": "B", "p3": "A", "p4": "B"}),
        }
        for run_name, (judge, evidence, scope, swapped, settings, verdicts) in run_plan.items():
            # recorded as `eval judge` records them: the default options, with what the plan changes
            recorded = {**DEFAULTS[evidence], "scope": scope, "swap": swapped, **(settings or {})}
            run = add(JudgeRun(benchmark_id=bench.id, judge=names[judge], evidence=evidence, scope=scope,
                               swapped=swapped, settings=recorded, options_hash=runkey.options_hash(recorded)))
            fx.runs[run_name] = run.id
            for pair_name, verdict in verdicts.items():
                a_better = a_is_better[pair_name] != swapped  # swapping sides moves the better answer
                score = 0.5 if verdict is None else float((verdict == "A") == a_better)
                add(Judgment(run_id=run.id, pair_id=fx.pairs[pair_name], a_is_better=a_better, verdict=verdict,
                             score=score, raw=f"[[{verdict}]]" if verdict else "no idea"))

        for gate, verdict in (("C1", "pass"), ("C3", "reject"), ("C1", "reject")):
            add(GateResult(item_id=fx.items[2], phase=1, attempt=1, gate=gate, verdict=verdict, reason="r",
                           details={"big": "x" * 100}))

        r10 = add(RetrievalRun(embedder="minilm", k=10))
        r1 = add(RetrievalRun(embedder="minilm-k1", k=1))
        fx.retrieval_runs = {"k10": r10.id, "k1": r1.id}
        for number, rank1, rank2, n in ((1, 1, 3, 288), (2, 11, 2, 288), (4, 50, 60, 100)):
            add(Ranking(run_id=r10.id, item_id=fx.items[number], rank1=rank1, rank2=rank2, n_segments=n))
        add(Ranking(run_id=r1.id, item_id=fx.items[1], rank1=1, rank2=3, n_segments=288))

        def call(item: int | None, provider: str, model: str, role: str, usd: float, tin: int = 0, tout: int = 0,
                 purpose: str = "build", gpu: float = 0.0, run_id: int | None = None, status: str = "ok",
                 cache_hit: bool = False) -> None:
            add(ModelCall(request_hash=f"h{len(calls)}", role=role, provider=provider, model=model,
                          item_id=fx.items[item] if item else None, run_id=run_id, purpose=purpose, status=status,
                          cache_hit=cache_hit, input_tokens=tin, output_tokens=tout, gpu_seconds=gpu, usd=usd))
            calls.append(1)

        calls: list[int] = []
        call(1, "gemini", "flash", "B", 1.00, 1000, 200)
        call(1, "qwen", "plus", "C3", 0.50, 500, 100)
        call(1, "gemini", "flash", "B", 0.0, status="cached", cache_hit=True)
        call(2, "gemini", "flash", "B", 2.00, 1000, 300)
        call(3, "gemini", "flash", "B", 0.60, 100, 50)
        call(3, "vllm", "weak", "F_first", 2.00, gpu=1800)
        call(4, "gemini", "flash", "B", 1.00, 1000, 100)
        call(5, "gemini", "flash", "B", 0.40, 400, 0, status="error")
        call(None, "sim", "embed", "index", 0.10, purpose="index")
        call(None, "gemini", "flash", "G", 0.30, 300, 30, purpose="eval", run_id=fx.runs["alpha_retrieved"])
        call(None, "gemini", "flash", "G", 0.20, 200, 0, purpose="eval", run_id=fx.runs["alpha_uniform"])
        call(None, "vllm", "beta", "G", 4.00, gpu=3600, purpose="eval", run_id=fx.runs["beta_retrieved"])
        call(None, "openai", "gpt", "G", 0.05, 50, 0, purpose="eval", run_id=999)
    return fx
