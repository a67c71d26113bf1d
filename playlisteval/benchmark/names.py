"""Names a user gives (a benchmark, a domain) checked once and escaped wherever they are written (issue 25).

A name is one line of printable text: ``select --name`` once accepted a newline, and the dataset card wrote
the name raw into its YAML header, where the next line became a key of its own (``license: …``). So a
name with a control character (newline, tab, escape, NUL, DEL, the C1 range) is refused with a one-line
error naming it, and the writers escape what they are given anyway: a YAML double-quoted scalar, Markdown
with its markup characters and HTML's ``<&>`` escaped.
"""

from __future__ import annotations

import json
import re
import unicodedata

from playlisteval.errors import ConfigError

MAX_NAME = 200
# inline markup, table cells, HTML; an underscore inside a word (``F_first``) is no emphasis in CommonMark
_MARKDOWN = re.compile(r"([\\`*\[\]|<>&~]|(?<!\w)_|_(?!\w))")


def control_characters(text: str) -> list[str]:
    """The control and format characters in ``text`` (as ``U+000A``), in order of appearance."""
    return [f"U+{ord(c):04X}" for c in dict.fromkeys(text) if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]


def check_name(kind: str, name: str) -> str:
    """``name`` stripped of surrounding blanks, or ConfigError naming what is wrong with it."""
    bad = control_characters(name)
    if bad:
        raise ConfigError(f"{kind} name {name!r} holds control character(s) {', '.join(bad)}: give one line "
                          "of printable text")
    name = name.strip()
    if not name:
        raise ConfigError(f"{kind} name is empty")
    if len(name) > MAX_NAME:
        raise ConfigError(f"{kind} name is {len(name)} characters long; at most {MAX_NAME}")
    return name


def check_judge_name(name: str) -> str:
    """A judge's name (``--judge``, ``[eval] panel``, `eval import --judge`) checked as a benchmark's is (issue
    44): it reaches the leaderboard, the report and the dataset card, where a newline made a heading."""
    return check_name("judge", name)


def check_plain_name(kind: str, name: str) -> str:
    """``check_name``, and no path separator and not ``.``/``..``: for names that become folders or file names
    (a human study's export, a domain's folder), where ``a/b`` would be read as two."""
    name = check_name(kind, name)
    if "/" in name or "\\" in name:
        raise ConfigError(f"{kind} name {name!r} contains a path separator (/ or \\); use another character "
                          "(-, _, space)")
    if name in (".", ".."):
        raise ConfigError(f"{kind} name {name!r} is not a name")
    return name


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (JSON's string syntax is one): never a new key or line."""
    return json.dumps(text, ensure_ascii=False)


def markdown_text(text: str) -> str:
    """``text`` shown literally in Markdown (and in the HTML a renderer makes of it): one line, markup and
    HTML characters backslash-escaped."""
    one_line = " ".join(text.split())
    return _MARKDOWN.sub(r"\\\1", one_line)
