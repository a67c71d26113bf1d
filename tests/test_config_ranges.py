"""Issue 14, config: every number is range-checked when the settings load, and the error names the key,
its value and where it came from — the file and line, or the environment variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

import annotated_types
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from playlisteval.cli import main
from playlisteval.config import Settings, load_settings, write_project
from playlisteval.config.source import key_lines
from playlisteval.errors import ConfigError

_BOUNDS = (annotated_types.Gt, annotated_types.Ge, annotated_types.Lt, annotated_types.Le)


def _numbers(annotation: Any) -> list[tuple[Any, list[Any]]]:
    """(number type, its constraints) for every int/float the annotation holds (tuples and dicts included)."""
    if annotation in (int, float):
        return [(annotation, [])]
    origin = get_origin(annotation)
    if origin is None:
        return []
    args = get_args(annotation)
    if str(origin).endswith("Annotated") or hasattr(annotation, "__metadata__"):
        found = _numbers(args[0])
        return [(t, [*c, *annotation.__metadata__]) for t, c in found]
    if origin is dict:
        return _numbers(args[1])
    return [n for arg in args for n in _numbers(arg)]


def _sections(model: type[BaseModel]) -> list[type[BaseModel]]:
    out = []
    for field in model.model_fields.values():
        for candidate in (field.annotation, *get_args(field.annotation)):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                out.append(candidate)
    return out


def test_every_number_of_every_section_has_a_range() -> None:
    unchecked = []
    for section in [Settings, *_sections(Settings)]:
        for name, field in section.model_fields.items():
            for _number, constraints in _numbers(field.annotation):
                bounds = [c for c in [*constraints, *field.metadata] if isinstance(c, _BOUNDS)]
                if not bounds and field.annotation is not bool:
                    unchecked.append(f"{section.__name__}.{name}")
    assert unchecked == []


def _project(tmp_path: Path, replace: tuple[str, str] | None = None, extra: str = "") -> Path:
    path = write_project(tmp_path)
    text = path.read_text()
    if replace:
        assert replace[0] in text
        text = text.replace(replace[0], replace[1], 1)
    path.write_text(text + extra)
    return path


def _line_of(path: Path, start: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(start))


def test_a_value_out_of_range_in_the_file_names_key_value_and_line(tmp_path: Path) -> None:
    path = _project(tmp_path, ("chunk_s = 30", "chunk_s = 0 "))
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "status"], env={"COLUMNS": "300"})
    assert result.exit_code == 1 and "Traceback" not in result.output
    line = _line_of(path, "chunk_s = 0")
    assert f"[index] chunk_s = 0 (playlisteval.toml line {line}): must be greater than 0" in result.output


def test_an_environment_value_is_blamed_on_the_variable_not_the_file(tmp_path: Path) -> None:
    _project(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={"PLAYLISTEVAL_SIM__REFUSAL": "1.5", "PLAYLISTEVAL_EVAL__MODALITY": "video"})
    message = str(caught.value)
    assert "[sim] refusal = 1.5 (environment variable PLAYLISTEVAL_SIM__REFUSAL=1.5): must be less than or equal " \
           "to 1" in message
    assert "[eval] modality = 'video' (environment variable PLAYLISTEVAL_EVAL__MODALITY=video): must be one of " \
           "'frames+transcript'" in message
    assert "line" not in message


def test_a_rule_between_two_keys_says_where_each_came_from(tmp_path: Path) -> None:
    path = _project(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={"PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90"})
    line = _line_of(path, "segment_min_s")
    assert str(caught.value).splitlines()[1].strip() == (
        "[index]: segment_min_s = 600.0 is more than segment_max_s = 90.0 (segment_min_s from playlisteval.toml "
        f"line {line}; segment_max_s from environment variable PLAYLISTEVAL_INDEX__SEGMENT_MAX_S=90)")
    # both set where the demo sets them: fine
    load_settings(tmp_path, environ={"PLAYLISTEVAL_INDEX__SEGMENT_MIN_S": "60",
                                     "PLAYLISTEVAL_INDEX__SEGMENT_MAX_S": "90"})


def test_unknown_keys_and_nested_tables(tmp_path: Path) -> None:
    path = _project(tmp_path, extra='\n[prices."gemini/x"]\ninptu = 1.0\noutput = -2\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={"PLAYLISTEVAL_INDEX__CHUNK_SZ": "3"})
    message = str(caught.value)
    assert "[index] chunk_sz (environment variable PLAYLISTEVAL_INDEX__CHUNK_SZ=3): unknown key; did you mean " \
           "chunk_s?" in message
    assert f'[prices] "gemini/x".inptu (playlisteval.toml line {_line_of(path, "inptu")}): unknown key; did you ' \
           "mean input?" in message
    assert f'[prices] "gemini/x".output = -2 (playlisteval.toml line {_line_of(path, "output = -2")})' in message


def test_key_lines_reads_headers_quoted_dotted_and_inline_keys() -> None:
    text = '# c\n[index]\nchunk_s = 30  # x\n"quoted key" = 1\n\n[prices]\n"gemini/a" = { input = 1 }\n' \
           '[prices."openai/b"]\noutput = 2\nsub.key = 3\narr = [\n  "a = b",\n]\n'
    lines = key_lines(text)
    assert lines[("index", "chunk_s")] == 3 and lines[("index", "quoted key")] == 4
    assert lines[("prices", "gemini/a")] == 7 and lines[("prices", "openai/b", "output")] == 9
    assert lines[("prices", "openai/b", "sub", "key")] == 10 and ("prices", "openai/b", "a = b") not in lines
