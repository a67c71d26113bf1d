"""`playlisteval index --profile` (issue 26): the command's time by phase, from the phases the index
recorded as it worked; nested phases are counted once (a model loaded inside OCR is model load)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.config import write_project
from playlisteval.index import phases
from tests.index_helpers import make_video, write_srt


def test_a_nested_phase_is_taken_out_of_the_one_around_it() -> None:
    phases.reset()
    with phases.timed("OCR"):
        time.sleep(0.02)
        with phases.timed("model load"):
            time.sleep(0.05)
    seen = phases.snapshot()
    assert list(seen) == ["model load", "OCR"]  # in the printed order
    assert 0.05 <= seen["model load"][0] < 0.065
    assert 0.02 <= seen["OCR"][0] < 0.035  # not 0.07: the load inside it is not OCR
    phases.reset()
    assert phases.snapshot() == {}


def test_a_phase_counts_its_cpu_apart_from_its_waits_and_from_the_phases_inside_it() -> None:
    """`index --profile`'s CPU column (issue 43): on busy cores a phase's wall seconds include its waits."""
    from playlisteval.commands.index_profile import profile

    phases.reset()
    with phases.timed("OCR"):
        time.sleep(0.05)  # a wait: wall seconds, next to no CPU
        with phases.timed("model load"):
            start = time.thread_time()
            while time.thread_time() - start < 0.03:  # work: CPU seconds
                pass
    cpu, seen = phases.cpu_seconds(), phases.snapshot()
    assert cpu["model load"] >= 0.03 and cpu["OCR"] < 0.02  # the nested work is model load's, not OCR's
    assert seen["OCR"][0] >= 0.05 and seen["model load"][0] >= 0.03
    data = profile(1.0, None, 60.0)
    assert data["phases"]["model load"]["cpu_s"] >= 0.03
    assert data["cpu_s"] >= data["phases"]["model load"]["cpu_s"] + data["phases"]["OCR"]["cpu_s"]
    assert abs(data["other_cpu_s"] - max(0.0, data["cpu_s"] - sum(cpu.values()))) < 0.002  # both rounded to ms
    # a command started as `playlisteval`: its start-up has a CPU of its own, no longer counted as "other"
    started = profile(1.0, 0.5, 60.0, startup_cpu_s=0.25)
    assert list(started["phases"])[0] == "start-up" and started["phases"]["start-up"]["cpu_s"] == 0.25
    assert started["other_cpu_s"] <= max(0.0, data["other_cpu_s"] - 0.25) + 0.01
    phases.reset()
    assert phases.cpu_seconds() == {}


def test_index_profile_names_each_phase_the_video_went_through(tmp_path: Path) -> None:
    video = make_video(tmp_path / "videos" / "Lecture" / "talk.mp4", 40, audio="sine")
    write_srt(video.with_suffix(".srt"), [(0.0, 20.0, "the glacier retreats"), (20.0, 40.0, "moraines remain")])
    write_project(tmp_path)
    toml = tmp_path / "playlisteval.toml"
    # no OCR (seconds a frame): no frame is decoded either, the hash embedder reads text only
    toml.write_text(toml.read_text().replace('embedder = "minilm"', 'embedder = "hash"')
                    .replace('ocr = "rapidocr"', 'ocr = "none"'))
    runner = CliRunner()
    assert runner.invoke(main, ["--project", str(tmp_path), "add", "Science", str(video.parent)]).exit_code == 0
    result = runner.invoke(main, ["--project", str(tmp_path), "index", "--json", "--profile"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    prof = data["profile"]
    assert {"imports", "probe", "ASR", "embedding", "store"} <= set(prof["phases"])  # imports: and the store opened
    assert "start-up" not in prof["phases"]  # inside pytest's process its age is no start-up
    assert "OCR" not in prof["phases"] and "decode" not in prof["phases"]  # only what ran is shown
    assert all(row["s"] >= 0 and row["n"] >= 1 for row in prof["phases"].values())
    assert prof["phases"]["store"]["n"] == 1  # one transaction for the one video
    assert prof["video_s"] == 40.0 and prof["x_real_time"] > 0
    assert "index --profile" in result.stderr
