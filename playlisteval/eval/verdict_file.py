"""Reading a file of verdicts a judge gave elsewhere (issue 40 item 9): one line per benchmark pair.

JSON Lines (one object a line) or CSV with a header; the fields, by name, in either:

- ``pair_id`` (required): the pair as `export` names it in ``data/test.jsonl`` (a content key such as
  ``"3f2a…-54"``), or the store's pair number (`eval attribute` and `show` print those);
- ``verdict`` (required): ``"A"``, ``"B"``, or null / empty for no verdict (it scores 0.5, as here);
- ``outcome`` (optional, only beside no verdict): ``no_verdict`` (default), ``refusal`` or ``tie``;
- ``raw`` (optional): the judge's reply as text;
- ``input_tokens``, ``output_tokens`` (optional): whole numbers ≥ 0 the judge reported;
- ``a_is_better`` / ``label`` (optional): when a line carries them (an exported row with a verdict added),
  they must agree with the benchmark's sides, so a file judged the other way round is caught.

Any other field is ignored, so an exported row with ``verdict`` added is a valid line. Blank lines are
skipped. Every problem is named by its line; all of them are collected before anything is written.
Standard library only.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playlisteval.errors import PlaylistEvalError

OUTCOMES_WITHOUT_VERDICT = ("no_verdict", "refusal", "tie")  # eval/verdicts.py's names
SHOWN_PROBLEMS = 20  # a file wrong on every line is summarised, not printed whole


class VerdictFileError(PlaylistEvalError):
    """A verdicts file that cannot be imported as it is: each problem names its line."""

    def __init__(self, source: str, problems: list[tuple[int, str]]) -> None:
        self.problems = problems
        shown = [f"  line {n}: {why}" if n else f"  {why}" for n, why in problems[:SHOWN_PROBLEMS]]
        more = len(problems) - SHOWN_PROBLEMS
        if more > 0:
            shown.append(f"  … and {more} more")
        head = f"{source}: {len(problems)} problem(s), nothing imported" if problems else f"{source}: nothing imported"
        super().__init__("\n".join([head, *shown]))


@dataclass(frozen=True)
class VerdictLine:
    line: int  # 1-based line of the file (a CSV row: the line it ends on)
    pair: str | int  # a content key (str) or the store's pair number (int)
    verdict: str | None
    outcome: str  # verdict / no_verdict / refusal / tie
    raw: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    a_is_better: bool | None = None  # what the line says, to be checked against the benchmark


@dataclass(frozen=True)
class VerdictFile:
    name: str
    sha256: str
    lines: list[VerdictLine]


class _Problem(Exception):
    """One line's problem (collected, not raised past ``read``)."""


def _pair(value: Any) -> str | int:
    if isinstance(value, bool) or value is None:
        raise _Problem(f"pair_id must be an exported pair id or a pair number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip():
        text = value.strip()
        return int(text) if text.isdigit() else text
    raise _Problem(f"pair_id must be an exported pair id or a pair number, got {value!r}")


def _verdict(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip() in ("A", "B", ""):
        return value.strip() or None
    # strict, as the judge's own [[A]]/[[B]] parsing is: "a" or "Model A" is not read as a verdict
    raise _Problem(f'verdict must be "A", "B" or empty/null (no verdict), got {value!r}')


def _count(name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _Problem(f"{name} must be a whole number ≥ 0, got {value!r}")


def _side(obj: dict[str, Any]) -> bool | None:
    """What the line says the better answer is (a_is_better, or label A/B); None when it says nothing."""
    said: bool | None = None
    if obj.get("a_is_better") not in (None, ""):
        value = obj["a_is_better"]
        text = str(value).strip().lower()
        if isinstance(value, bool):
            said = value
        elif text in ("true", "false"):
            said = text == "true"
        else:
            raise _Problem(f"a_is_better must be true or false, got {value!r}")
    if obj.get("label") not in (None, ""):
        label = str(obj["label"]).strip()
        if label not in ("A", "B"):
            raise _Problem(f'label must be "A" or "B" (the better answer), got {obj["label"]!r}')
        if said is not None and said != (label == "A"):
            raise _Problem(f"a_is_better {said} and label {label} disagree")
        said = label == "A"
    return said


def check_line(obj: Any, line: int) -> VerdictLine:
    """One line's fields, checked; raises ``_Problem`` with the reason."""
    if not isinstance(obj, dict):
        raise _Problem(f"expected an object with pair_id and verdict, got {type(obj).__name__}")
    missing = [k for k in ("pair_id", "verdict") if k not in obj]
    if missing:
        raise _Problem(f"missing {', '.join(missing)} (verdict: \"A\", \"B\", or null/empty for none)")
    verdict = _verdict(obj["verdict"])
    outcome = str(obj.get("outcome") or "").strip() or ("verdict" if verdict else "no_verdict")
    if verdict is not None and outcome != "verdict":
        raise _Problem(f"outcome {outcome!r} beside verdict {verdict}: an outcome is given only with no verdict")
    if verdict is None and outcome not in OUTCOMES_WITHOUT_VERDICT:
        raise _Problem(f"outcome must be one of {', '.join(OUTCOMES_WITHOUT_VERDICT)} beside no verdict, "
                       f"got {outcome!r}")
    raw = obj.get("raw")
    if raw is not None and not isinstance(raw, str):
        raise _Problem(f"raw must be text, got {type(raw).__name__}")
    return VerdictLine(line=line, pair=_pair(obj["pair_id"]), verdict=verdict, outcome=outcome, raw=raw or "",
                       input_tokens=_count("input_tokens", obj.get("input_tokens")),
                       output_tokens=_count("output_tokens", obj.get("output_tokens")), a_is_better=_side(obj))


def _objects(text: str, kind: str) -> list[tuple[int, Any] | tuple[int, _Problem]]:
    """(line, parsed object) or (line, its problem), blank lines skipped."""
    out: list[tuple[int, Any] | tuple[int, _Problem]] = []
    if kind == "jsonl":
        for n, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                out.append((n, json.loads(raw)))
            except json.JSONDecodeError as exc:
                out.append((n, _Problem(f"not JSON ({exc.msg}, column {exc.colno})")))
        return out
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    if "pair_id" not in header or "verdict" not in header:
        return [(1, _Problem(f"the CSV header must name pair_id and verdict, got {', '.join(header) or 'nothing'}"))]
    for row in reader:
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        if None in row:  # more cells than the header names
            out.append((reader.line_num, _Problem(f"{len(header) + len(row[None])} cells, the header names "
                                                  f"{len(header)}")))
            continue
        out.append((reader.line_num, dict(row)))
    return out


def kind_of(path: Path, text: str) -> str:
    """jsonl or csv: by the suffix, else by the first character that is not blank."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    return "jsonl" if text.lstrip().startswith("{") else "csv"


def read(path: Path) -> VerdictFile:
    """Every line of ``path`` checked; a ``VerdictFileError`` naming each bad line when any is wrong."""
    found, problems = read_lines(path)
    if problems:
        raise VerdictFileError(str(path), problems)
    return found


def read_lines(path: Path) -> tuple[VerdictFile, list[tuple[int, str]]]:
    """The good lines of ``path`` and each bad line's problem (line, why), so a caller can add its own checks
    of the good ones and report every problem at once. A file that cannot be read, or holds no line at
    all, is an error at once."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8-sig")  # a BOM from a spreadsheet's CSV is not part of the first name
    except (OSError, UnicodeDecodeError) as exc:
        raise VerdictFileError(str(path), [(0, f"cannot read it: {exc}")]) from None
    lines: list[VerdictLine] = []
    problems: list[tuple[int, str]] = []
    for n, obj in _objects(text, kind_of(path, text)):
        if isinstance(obj, _Problem):
            problems.append((n, str(obj)))
            continue
        try:
            lines.append(check_line(obj, n))
        except _Problem as exc:
            problems.append((n, str(exc)))
    if not lines and not problems:
        raise VerdictFileError(str(path), [(0, "no verdicts in it")])
    return VerdictFile(name=path.name, sha256=hashlib.sha256(data).hexdigest(), lines=lines), problems
