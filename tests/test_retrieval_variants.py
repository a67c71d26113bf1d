"""Retriever ablations side by side (issue 20, deliverable 8): named variants (another embedder, input modality,
frames per chunk, width) stored beside the default vectors, scored by `eval retrieve --variant`, and the
report's Table 2 / Fig. 5 right / Fig. 8 / Table 4 analogues; frame variants without the visual embedder's
weights fail closed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import text

from playlisteval.analytics import retriever_ablation
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.runner import Analytics
from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval.retrieval import percentile, run_retrieval
from playlisteval.index import footprint, modality, variants
from playlisteval.index.embedders import HashingEmbedder, embed_chunks, get_embedder
from playlisteval.index.rows import ChunkInput
from playlisteval.index.vectors import VectorIndex
from playlisteval.store import open_store
from tests.helpers import QUIET_SIM, built_synthetic_project, env_for

OVERRIDES: dict[str, object] = dict(index__embedder="hash", index__ocr="none", index__segment_min_s=60,
                                    index__segment_max_s=90, **QUIET_SIM)


def test_a_recipe_names_its_vectors_and_the_default_keeps_the_plain_name() -> None:
    assert modality.make_recipe("minilm", "transcript").name == "minilm~transcript"
    assert modality.make_recipe("minilm", "text").name == "minilm"  # the default recipe: the default vectors
    assert modality.make_recipe("minilm", "ocr", dims=128).name == "minilm:128~ocr"
    assert modality.make_recipe("qwen3-vl-embedding", "frames", 8).name == "qwen3-vl-embedding~frames~f8"
    assert modality.parse("qwen3-vl-embedding~frames~f8") == modality.Recipe("qwen3-vl-embedding", "frames", 8)
    assert modality.describe("minilm:64") == {"retriever": "minilm", "modality": "text", "frames_per_chunk": None,
                                              "dims": 64}


@pytest.mark.parametrize(("name", "says"), [
    ("minilm~frames", "reads text only"),
    ("hash~frames+transcript", "reads text only"),
    ("hash~transcript~f8", "reads no frames"),
    ("hash~sound", "unknown modality"),
    ("qwen3-vl-embedding~frames~f8", "vl_model"),  # the weights are absent: an error, never text instead
])
def test_a_variant_that_cannot_run_fails_closed(name: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        get_embedder(name)


def test_each_modality_reads_only_its_part_of_the_chunk() -> None:
    chunk = ChunkInput("the narrator talks about harbours", ["OPEN DAILY", "gate 4"])
    base = HashingEmbedder()
    transcript = get_embedder("hash~transcript").embed_chunks([chunk])  # type: ignore[attr-defined]
    ocr = get_embedder("hash~ocr").embed_chunks([chunk])  # type: ignore[attr-defined]
    both = embed_chunks(get_embedder("hash"), [chunk])
    assert np.allclose(transcript[0], base.embed_texts([chunk.transcript])[0])
    assert np.allclose(ocr, embed_chunks(base, [ChunkInput("", chunk.ocr_lines)]))
    assert not np.allclose(transcript, ocr) and not np.allclose(transcript, both) and not np.allclose(ocr, both)
    # queries are embedded as the base embedder does: one query space for every modality
    assert np.allclose(get_embedder("hash~ocr").embed_texts(["gate"]), base.embed_texts(["gate"]))


def test_percentiles_of_timed_queries() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([float(i) for i in range(1, 101)], 95) == pytest.approx(95.05)


def test_the_saved_hnsw_file_is_counted(tmp_path: Path) -> None:
    """The footprint finds the HNSW file search.py's VectorIndex saves (same key, same parameters)."""
    matrix = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    index = VectorIndex(matrix, exact_max=10, cache_dir=tmp_path)
    assert not index.exact
    [saved] = list(tmp_path.glob("hnsw-*.bin"))
    from playlisteval.index.vectors import matrix_key

    assert saved.name == f"hnsw-{matrix_key(index.matrix, *footprint.HNSW_PARAMS)}.bin"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return built_synthetic_project(tmp_path_factory.mktemp("variants"), **OVERRIDES)


def _cli(settings: Settings, *args: str) -> Any:
    from playlisteval.cli import main

    return CliRunner(env=env_for(**OVERRIDES)).invoke(main, ["--project", str(settings.root), *args],
                                                      catch_exceptions=False)


def test_two_variants_in_one_store_both_scored_and_reported(built: Settings) -> None:
    engine = open_store(built)
    made = _cli(built, "index", "--variant", "spoken", "--modality", "transcript", "--json")
    assert made.exit_code == 0, made.output
    report = json.loads(made.stdout)["variant"]
    assert report["embedder"] == "hash~transcript" and report["embedded"] > 0 and not report["failed"]
    narrow = _cli(built, "index", "--variant", "w64", "--dims", "64", "--json")
    assert narrow.exit_code == 0, narrow.output
    with engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT embedder, count(*) FROM chunk_vector GROUP BY embedder")).all())
    assert stored["hash"] == stored["hash~transcript"] == stored["hash:64"] > 0  # side by side, all chunks

    base = run_retrieval(built, all_items=True)
    runs = {}
    for name in ("spoken", "w64"):
        out = _cli(built, "eval", "retrieve", "--all", "--variant", name, "--json")
        assert out.exit_code == 0, out.output
        runs[name] = json.loads(out.stdout)
    assert runs["spoken"]["embedder"] == "hash~transcript" and runs["spoken"]["modality"] == "transcript"
    assert runs["w64"]["dims"] == 64 and runs["w64"]["variant"] == "w64"
    for s in (*runs.values(), vars(base)):
        assert s["questions"] > 0 and s["errors"] == 0
        assert s["latency_p50_ms"] > 0 and s["latency_p95_ms"] >= s["latency_p50_ms"]
        assert s["index_bytes"] == s["chunks"] * s["dims"] * 4 > 0  # every vector counted from the store, no HNSW
    assert runs["spoken"]["hit_any_ci"]["n"] == runs["spoken"]["questions"]

    with Analytics(engine, built) as an:
        section = retriever_ablation.section(an, Bootstrap.of(built))
    tables = dict(section.tables)
    table2 = tables["Retriever × input (paper Table 2)"]
    assert [(r[0], r[1]) for r in table2.rows] == [("hash", "transcript"), ("hash", "text")]  # one per pair
    for row in table2.rows:  # Hit_both, Hit_any, nDCG: each with its interval
        assert all(re.fullmatch(r"\d+\.\d \[(\d+\.\d, \d+\.\d|—)\]( †)?", cell) for cell in row[-3:]), row
    fig8 = tables["Frames per chunk and embedding width (paper Fig. 8)"]
    assert [r[3] for r in fig8.rows] == ["512", "64"]
    table4 = tables["Index size and query latency (paper Table 4)"]
    assert table4.headers[:6] == ["Retriever (stored as)", "Dims", "Vectors", "Index size", "Query p50 ms",
                                  "Query p95 ms"]
    assert {r[0] for r in table4.rows} == {"hash", "hash~transcript", "hash:64"}
    for row in table4.rows:
        assert float(row[4]) > 0 and float(row[5]) > 0 and row[3].endswith("B")
    assert len(section.figures) == 2  # modality bars (Fig. 5 right) and the width line (Fig. 8)


def test_a_variant_name_keeps_its_recipe(built: Settings) -> None:
    engine = open_store(built)
    variants.define(engine, built, "ocr-only", modality="ocr")
    assert variants.define(engine, built, "ocr-only").embedder == "hash~ocr"  # a known name alone: as stored
    with pytest.raises(ConfigError, match="already hash~ocr"):
        variants.define(engine, built, "ocr-only", modality="transcript")
    with pytest.raises(ConfigError, match="is not defined"):
        variants.define(engine, built, "nothing-yet")
    with pytest.raises(ConfigError, match="unknown retriever variant 'nope'; known: .*ocr-only"):
        run_retrieval(built, all_items=True, variant="nope")


def test_a_frame_variant_without_weights_is_a_clear_error(built: Settings) -> None:
    out = _cli(built, "index", "--variant", "vision", "--embedder", "qwen3-vl-embedding", "--modality", "frames",
               "--frames-per-chunk", "8")
    assert out.exit_code == 1
    assert "vl_model" in out.output and "Traceback" not in out.output
    assert all(v.name != "vision" for v in variants.known(open_store(built)))  # nothing stored
    text_only = _cli(built, "index", "--variant", "eyes", "--modality", "frames")
    assert text_only.exit_code != 0 and "reads text only" in text_only.output
