"""`playlisteval report`: every section rendered, model text escaped, figures inert, output deterministic."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from playlisteval.cli import main
from playlisteval.store import open_store
from tests import analytics_fixtures, stat_reference
from tests.helpers import project

PLANTED = "<script>alert('gold')</script>"


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.images: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "section" and found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "img" and found.get("src"):
            self.images.append(str(found["src"]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def make(tmp_path: Path) -> Path:
    settings = project(tmp_path)
    analytics_fixtures.build(
        open_store(settings),
        gold_text=f"The gold answer {PLANTED} seen on screen (clip1 @ 0:30 - 1:10).",
        question_text="Which <img src=x onerror=alert(1)> sign is shown?",
        judge_names={"beta": "[bold red]beta[/] <b>judge</b>"},
    )
    return tmp_path


def report(proj: Path, out: Path) -> str:
    result = CliRunner().invoke(main, ["--project", str(proj), "report", str(out)])
    assert result.exit_code == 0, result.output
    return result.output


def test_report_escapes_model_text_and_has_every_section(tmp_path: Path) -> None:
    proj = make(tmp_path / "p")
    out = tmp_path / "out" / "report.html"
    printed = report(proj, out)
    page = out.read_text()
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags  # the planted answer is text, not a tag
    assert parser.tags.count("img") == len(parser.images)
    assert all(src.startswith("data:image/svg+xml;base64,") for src in parser.images)
    text = "".join(parser.text)
    assert PLANTED in text  # shown to the reader as it was written
    assert "&lt;script&gt;alert(&#39;gold&#39;)&lt;/script&gt;" in page
    assert "Which <img src=x onerror=alert(1)> sign is shown?" in text
    assert "[bold red]beta[/] <b>judge</b>" in text
    # the gate funnel section comes with analytics/funnel.sql, which the build's side owns
    assert [i for i in parser.ids if i != "funnel"] == ["leaderboard", "gap", "scope", "attribution", "bias", "sweeps",
                                                        "shortcuts", "trust", "retrieval", "retriever_ablation",
                                                        "external", "stats", "cost", "check", "hardest"]
    if "funnel" in parser.ids:
        assert "C1" in text and "C3" in text
    # leaderboard, gap curve, scope curve, failure attribution, position bias, shortcut audit
    assert len(parser.images) == 6
    for src in parser.images:
        svg = base64.b64decode(src.split(",", 1)[1]).decode()
        assert "<script" not in svg
    # the terminal leaderboard shows judge names as text, not as rich markup
    assert "[bold red]beta[/]" in printed and "<b>judge</b>" in printed
    assert "62.5" in printed and "wrote" in printed


def test_report_numbers_match_the_views(tmp_path: Path) -> None:
    proj = make(tmp_path / "p")
    out = tmp_path / "r.html"
    report(proj, out)
    parser = Tags()
    parser.feed(out.read_text())
    text = " ".join(t.strip() for t in parser.text if t.strip())
    # leaderboard row: retrieved, uniform, Δ with their intervals, p (and Holm's, alone in its family),
    # pairs, no verdict, errors. Two questions (Education: p1 ✓ p2 ✓; Drama: p3 ✗ p4 ½); uniform is ½ on
    # every pair; Δ per question +1 (Education) and −½ (Drama) over 2 pairs each. The intervals are those of
    # tests/stat_reference.py, on t(1): never the zero-width [50, 50] the bootstrap printed for uniform.
    _, rl, rh = stat_reference.rate([1, 1, 0, 0.5], "EEDD")
    _, ul, uh = stat_reference.rate([0.5] * 4, "EEDD")
    _, dl, dh, dp = stat_reference.difference([1, 0, -0.5, 0], "EEDD")
    assert ul < 0.5 < uh
    assert (f"alpha 62.5 [{100 * rl:.1f}, {100 * rh:.1f}] 50.0 [{100 * ul:.1f}, {100 * uh:.1f}] "
            f"+12.5 [{100 * dl:+.1f}, {100 * dh:+.1f}] {dp:.3f} (Holm {dp:.3f}) 4 1 0") in text
    assert "Longer answer wins (%) 75.0" in text
    assert "Education 2 3 6.10 2.03 2.17 0.60 1.75 2.60" in text  # Table 19 row
    # the thinking=high sweep only in the sweep table, beside the main run (all four ✓ against 62.5 %)
    # with intervals (two questions): sweep − main per question 0 and +¾; 100 % is not [100, 100]
    _, sl, sh = stat_reference.rate([1, 1, 1, 1], "EEDD")
    _, dl, dh, dp = stat_reference.difference([0, 0, 1, 0.5], "EEDD")
    assert sl < 1 and sh == 1
    assert (f"5 alpha retrieved domain forward thinking=high 4 0 100.0 [{100 * sl:.1f}, 100.0] † 62.5 "
            f"[{100 * rl:.1f}, {100 * rh:.1f}] +37.5 [{100 * dl:+.1f}, {100 * dh:+.1f}] {dp:.3f} "
            f"(Holm {dp:.3f})") in text
    # beta judged 2 of its 4 pairs: every table that shows it says so (issue 9)
    assert text.count("(retrieved, domain): running: 2 of 4 pairs not judged") >= 4


def test_report_is_deterministic_and_works_on_an_empty_store(tmp_path: Path) -> None:
    proj = make(tmp_path / "p")
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    report(proj, first)
    report(proj, second)
    # byte for byte but the provenance's generation time (issue 22), the report's own "now"
    generated = re.compile(rb"(<th>Generated</th><td>)[^<]*")
    assert generated.sub(rb"\1", first.read_bytes()) == generated.sub(rb"\1", second.read_bytes())
    assert generated.search(first.read_bytes())
    empty = tmp_path / "empty"
    project(empty)
    out = tmp_path / "e.html"
    printed = report(empty, out)
    assert "no benchmark yet" in out.read_text() and "no judge" in printed


def test_leaderboard_command(tmp_path: Path) -> None:
    proj = make(tmp_path / "p")
    result = CliRunner().invoke(main, ["--project", str(proj), "leaderboard", "--benchmark", "bench-1"])
    assert result.exit_code == 0 and "alpha" in result.output
    missing = CliRunner().invoke(main, ["--project", str(proj), "leaderboard", "--benchmark", "nope"])
    assert missing.exit_code == 1 and "no benchmark named 'nope'" in missing.output
