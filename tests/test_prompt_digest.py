"""A prompt's digest is computed once per compiled template (issue 13) and never goes stale: it is the
sha256 of the very source the text was rendered from, and follows an edit of a user's template file."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from playlisteval.prompts.render import render, template_source


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_digest_is_that_of_the_source_rendered(tmp_path: Path) -> None:
    text, digest = render("feedback.j2", None, gate="C1", unusable=False)
    assert digest == _sha(template_source("feedback.j2"))
    assert render("feedback.j2", None, gate="C1", unusable=False) == (text, digest)  # cached: the same


def test_an_edited_template_gets_a_new_text_and_digest(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    path = folder / "mine.j2"
    path.write_text("first {{ x }}\n")
    assert render("mine.j2", folder, x=1) == ("first 1\n", _sha("first {{ x }}\n"))
    path.write_text("second version {{ x }}\n")
    stat = path.stat()  # a later mtime, whatever the file system's clock resolution
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert render("mine.j2", folder, x=2) == ("second version 2\n", _sha("second version {{ x }}\n"))
