"""Issue 42, item 1: a server per model. ``[endpoints]`` maps a model as written to its OpenAI-compatible
server; every role, judge and weak judge using that model goes there with its own name, and
`models check` asks each server which models it serves.

Two real HTTP servers on 127.0.0.1 (tests/provider_fakes.py) speak the OpenAI wire; the calls go through
the real CLI and the real openai SDK. The provider's default server (``[providers] vllm_base_url``) is a
closed port: a request that went there would fail.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.commands import exitcodes
from playlisteval.config import load_settings, write_project
from playlisteval.errors import ConfigError
from playlisteval.models.registry import Registry
from playlisteval.select.sampling import select_benchmark
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project, share_media
from tests.provider_fakes import CHAT, MODELS, Canned, FakeAPI, fake_api

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01,
    providers__vllm_base_url="http://127.0.0.1:9/v1", providers__check_timeout_s=2, **QUIET_SIM)
KEY = "vllm-endpoints-key-0001"


def _copy_store(src: Path, dst: Path) -> None:
    with sqlite3.connect(src / "playlisteval.db") as a, sqlite3.connect(dst / "playlisteval.db") as b:
        a.backup(b)
    share_media(src, dst)


def _with_endpoints(root: Path, endpoints: dict[str, str]) -> None:
    """The project's [endpoints] table (the template's, filled in)."""
    path = root / "playlisteval.toml"
    lines = "".join(f"{json.dumps(spec)} = {json.dumps(url)}\n" for spec, url in endpoints.items())
    text = path.read_text()
    assert text.count("\n[endpoints]\n") == 1
    path.write_text(text.replace("\n[endpoints]\n", "\n[endpoints]\n" + lines))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions, not selected yet."""
    root = tmp_path_factory.mktemp("built")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    return root


@pytest.fixture(scope="module")
def selected(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same store with a benchmark drawn by the sim weak judges."""
    root = tmp_path_factory.mktemp("selected")
    project(root, **OVERRIDES)
    _copy_store(built, root)
    out = select_benchmark(project(root, **OVERRIDES))
    assert out.created and out.pairs >= 6
    return root


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeAPI, FakeAPI]]:
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    with fake_api() as one, fake_api() as two:
        one.content = two.content = "Model A cites the scene.\n\n[[A]]"
        yield one, two


def _fresh(source: Path, tmp_path: Path, servers: tuple[FakeAPI, FakeAPI]) -> Path:
    root = tmp_path / "proj"
    write_project(root)
    one, two = servers
    _with_endpoints(root, {"vllm/model-a": f"{one.url}/v1", "vllm/model-b": f"{two.url}/v1"})
    _copy_store(source, root)
    return root


def cli(root: Path, *args: str, **extra: object) -> Result:
    return CliRunner().invoke(main, ["--project", str(root), *args], env=env_for(**OVERRIDES, **extra),
                              catch_exceptions=False)


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def served(*names: str) -> Canned:
    return Canned(body={"object": "list", "data": [{"id": n, "object": "model", "created": 1, "owned_by": "vllm"}
                                                   for n in names]})


def _models_asked(api: FakeAPI) -> list[str]:
    return [s.json["model"] for s in api.requests(CHAT)]


# -- the calls -------------------------------------------------------------------------------------------


def test_each_judge_sends_every_request_to_its_own_server_with_its_own_name(
        selected: Path, tmp_path: Path, servers: tuple[FakeAPI, FakeAPI]) -> None:
    one, two = servers
    root = _fresh(selected, tmp_path, servers)
    first = cli(root, "eval", "judge", "--judge", "vllm/model-a", "--json")
    assert first.exit_code == exitcodes.DONE, first.output
    [a] = json_lines(first)
    assert a["judge"] == "vllm/model-a" and a["errors"] == 0 and a["judged"] == a["pairs"] >= 6
    asked_one = _models_asked(one)
    assert len(asked_one) == a["pairs"] and set(asked_one) == {"model-a"} and not two.seen
    second = cli(root, "eval", "judge", "--judge", "vllm/model-b", "--json")
    assert second.exit_code == exitcodes.DONE, second.output
    [b] = json_lines(second)
    assert b["judge"] == "vllm/model-b" and b["errors"] == 0 and b["judged"] == b["pairs"] == a["pairs"]
    assert _models_asked(one) == asked_one  # nothing more went to the first server
    assert len(_models_asked(two)) == b["pairs"] and set(_models_asked(two)) == {"model-b"}
    every = one.seen + two.seen
    assert {s.path for s in every} == {"/v1/chat/completions"}
    assert all(s.headers.get("authorization") == f"Bearer {KEY}" for s in every)  # the key from the environment


def test_the_weak_judges_of_the_gate_go_to_their_own_servers(
        built: Path, tmp_path: Path, servers: tuple[FakeAPI, FakeAPI]) -> None:
    one, two = servers
    root = _fresh(built, tmp_path, servers)
    weak = {"models__F_first": "vllm/model-a", "models__F_second": "vllm/model-b"}
    result = cli(root, "select", "--json", **weak)
    assert result.exit_code in (exitcodes.DONE, exitcodes.INCOMPLETE), result.output
    asked_one, asked_two = _models_asked(one), _models_asked(two)
    assert asked_one and set(asked_one) == {"model-a"}
    assert asked_two and set(asked_two) == {"model-b"}


def test_an_unlisted_model_keeps_the_providers_default_server(tmp_path: Path,
                                                              servers: tuple[FakeAPI, FakeAPI]) -> None:
    one, _ = servers
    write_project(tmp_path)
    _with_endpoints(tmp_path, {"vllm/model-a": f"{one.url}/v1"})
    settings = load_settings(tmp_path, environ=env_for(providers__vllm_base_url="http://127.0.0.1:9/v1"))
    provider: Any = Registry(settings).get("vllm")
    assert provider.server("model-a") == f"{one.url}/v1" and provider.server("other") == "http://127.0.0.1:9/v1"
    assert str(provider.client("model-a").base_url).rstrip("/") == f"{one.url}/v1"
    assert str(provider.client("other").base_url).rstrip("/") == "http://127.0.0.1:9/v1"
    assert provider.client("model-a") is provider.client("model-a")  # one client per server, kept alive


def test_a_call_to_a_server_that_is_down_names_the_server(tmp_path: Path) -> None:
    from playlisteval.errors import TransientModelError
    from playlisteval.models.request import ModelRequest, TextPart

    write_project(tmp_path)
    _with_endpoints(tmp_path, {"vllm/model-a": "http://127.0.0.1:9/v1"})
    provider: Any = Registry(load_settings(tmp_path, environ={})).get("vllm")
    with pytest.raises(TransientModelError, match=r"vllm/model-a at http://127.0.0.1:9/v1: connection error"):
        provider.complete("model-a", ModelRequest(role="G", parts=[TextPart(text="hi")]), None, 2.0)


# -- the settings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "message"), [
    ('"vllm/model-a" = "gpu1:8000/v1"', "is not a server URL"),
    ('"vllm/model-a" = "ftp://gpu1/v1"', "is not a server URL"),
    ('"gemini/gemini-3-flash-preview" = "http://gpu1:8000/v1"', "provider one of openai, qwen, vllm"),
    ('"model-a" = "http://gpu1:8000/v1"', "'provider/model'"),
])
def test_a_bad_endpoint_is_a_config_error_naming_its_key(tmp_path: Path, entry: str, message: str) -> None:
    write_project(tmp_path)
    path = tmp_path / "playlisteval.toml"
    path.write_text(path.read_text().replace("\n[endpoints]\n", f"\n[endpoints]\n{entry}\n"))
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    text = str(caught.value)
    assert "[endpoints]" in text and message in text and entry.split(" = ")[0].strip('"') in text


def test_the_template_has_an_empty_endpoint_table(tmp_path: Path) -> None:
    write_project(tmp_path)
    assert load_settings(tmp_path, environ={}).endpoints == {}


# -- models check ----------------------------------------------------------------------------------------


def test_models_check_asks_each_server_what_it_serves(tmp_path: Path, servers: tuple[FakeAPI, FakeAPI]) -> None:
    one, two = servers
    write_project(tmp_path)
    _with_endpoints(tmp_path, {"vllm/model-a": f"{one.url}/v1", "vllm/model-b": f"{two.url}/v1"})
    one.queue(MODELS, served("model-a"))
    two.queue(MODELS, served("model-a"))  # the second server serves another name
    result = cli(tmp_path, "models", "check", "--json")
    assert result.exit_code == 1, result.output
    rows = {r["endpoint"]: r for r in json_lines(result) if "endpoint" in r and "role" not in r}
    assert rows["vllm/model-a"]["usable"] and rows["vllm/model-a"]["served"] == ["model-a"]
    assert not rows["vllm/model-b"]["usable"] and rows["vllm/model-b"]["reachable"] is True
    assert "not 'model-b'" in rows["vllm/model-b"]["problem"] and "serves model-a" in rows["vllm/model-b"]["problem"]
    assert [s.path for s in one.requests(MODELS)] == ["/v1/models"] and not one.requests(CHAT)
    assert [s.path for s in two.requests(MODELS)] == ["/v1/models"] and not two.requests(CHAT)
    # the table says it in a line of its own
    one.queue(MODELS, served("model-a"))
    two.queue(MODELS, served("other", "model-c"))
    table = cli(tmp_path, "models", "check")
    assert table.exit_code == 1
    assert f"[endpoints] vllm/model-b at {two.url}/v1: serves other, model-c, not 'model-b'" in table.output
    assert f"[endpoints] vllm/model-a at {one.url}/v1: serves model-a" in table.output
    # all served: the check passes (the roles are the offline sim defaults)
    one.queue(MODELS, served("model-a"))
    two.queue(MODELS, served("model-b"))
    assert cli(tmp_path, "models", "check").exit_code == 0
    assert KEY not in table.output and KEY not in result.output


def test_models_check_says_when_a_server_cannot_be_reached(tmp_path: Path) -> None:
    write_project(tmp_path)
    _with_endpoints(tmp_path, {"vllm/model-a": "http://127.0.0.1:9/v1"})
    result = cli(tmp_path, "models", "check")
    assert result.exit_code == 1
    assert "[endpoints] vllm/model-a at http://127.0.0.1:9/v1: cannot reach the server" in result.output
    assert "connection error" in result.output
    offline = cli(tmp_path, "models", "check", "--no-network", "--json", models__F_first="vllm/model-a")
    assert offline.exit_code == 0
    [role] = [r for r in json_lines(offline) if r.get("role") == "F_first"]
    assert role["endpoint"] == "http://127.0.0.1:9/v1"  # the model's own server, not the provider's
