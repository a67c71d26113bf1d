"""Input hygiene (issue 25, deliverable 6): user names are one printable line and are escaped in YAML and
Markdown; model text shown by `show` carries no terminal controls."""

from __future__ import annotations

import json

import pytest

from playlisteval.benchmark.names import check_name, markdown_text, yaml_scalar
from playlisteval.commands.terminal_text import plain, plain_all
from playlisteval.errors import ConfigError
from playlisteval.select.export import _card
from playlisteval.select.stats import BenchmarkStats


@pytest.mark.parametrize("name", ["main\nlicense: mit", "a\rb", "tab\there", "esc\x1b[31m", "nul\x00", "del\x7f",
                                  "c1\x85", "bidi\u202egnp.exe", "line\u2028sep"])
def test_a_name_with_a_control_character_is_refused_naming_it(name: str) -> None:
    with pytest.raises(ConfigError, match=r"benchmark name .* control character\(s\) U\+"):
        check_name("benchmark", name)


def test_ordinary_names_pass_and_empty_or_long_ones_do_not() -> None:
    assert check_name("benchmark", "  Judge bench v2 — été  ") == "Judge bench v2 — été"
    with pytest.raises(ConfigError, match="empty"):
        check_name("benchmark", "   ")
    with pytest.raises(ConfigError, match="at most"):
        check_name("benchmark", "x" * 500)


def test_the_card_header_holds_the_name_as_one_scalar_whatever_it_is() -> None:
    import yaml

    stats = BenchmarkStats(pairs=2, pairs_by_gap={1: 2}, pairs_by_domain={"Edu|cation *x*": 2})
    card = _card('evil"\nlicense: mit\n# <b>x</b>', stats, 2)
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["pretty_name"] == 'evil"\nlicense: mit\n# <b>x</b>' and "license" not in header
    body = card.split("---\n", 2)[2]
    assert "<b>" not in body and "\n# evil\" license: mit # \\<b\\>x\\</b\\>\n" in body
    assert "| Edu\\|cation \\*x\\* | 2 |" in body


def test_yaml_and_markdown_escapes() -> None:
    assert json.loads(yaml_scalar("a: b\nc")) == "a: b\nc"
    assert markdown_text("a *b* <i>|[x](y)") == "a \\*b\\* \\<i\\>\\|\\[x\\](y)"


def test_terminal_controls_are_taken_out_of_model_text() -> None:
    reply = "ok\x1b[2J\x1b]0;pwned\x07 done\r\nnext\tcol \u202eevil \x9b31m"
    assert plain(reply) == "ok[2J]0;pwned done\nnext\tcol evil 31m"
    assert plain_all({"calls": [{"reply": "\x1b[31mred", "n": 3}]}) == {"calls": [{"reply": "[31mred", "n": 3}]}
