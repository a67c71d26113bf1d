"""Annotations released (issue 20 deliverable 9): the D1.1 causal record in full and the domains'
descriptions (paper Table 13) in data/annotations.jsonl and the dataset card; data/test.parquet as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import text

from playlisteval.prompts.schemas import DistractorGeneration
from playlisteval.select.annotations import _attributes
from playlisteval.store import open_store
from tests.judged_project import cli, copy_of, json_lines, make_selected

PARQUET_COLUMNS = ["pair_id", "question_id", "domain", "question", "keyword", "bloom_row", "bloom_column", "answer_a",
                   "answer_b", "label", "a_is_better", "chosen", "rejected", "chosen_rating", "rejected_rating", "gap",
                   "gold_answer", "segments", "weak_judges"]


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_selected(tmp_path_factory.mktemp("annot"))


def test_export_releases_the_full_causal_record_and_domain_descriptions(selected: Path, tmp_path: Path) -> None:
    settings = copy_of(selected, tmp_path / "p")
    engine = open_store(settings)
    with engine.connect() as c:
        domains = [d for (d,) in c.execute(text("SELECT name FROM domain ORDER BY name"))]
    cli(settings, "describe", domains[0], "Lectures | <i>static</i>  knowledge")
    assert json_lines(cli(settings, "describe", "--json")) == [
        {d: ("Lectures | <i>static</i> knowledge" if d == domains[0] else "") for d in domains}]
    assert "no domain named" in cli(settings, "describe", "Nowhere", "x", code=None).output
    cli(settings, "export", str(tmp_path / "a"))
    cli(settings, "export", str(tmp_path / "b"))
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "data/test.parquet").read_bytes() == (b / "data/test.parquet").read_bytes()
    assert pq.read_table(a / "data/test.parquet").column_names == PARQUET_COLUMNS  # no column added
    rows = [json.loads(line) for line in (a / "data/annotations.jsonl").read_text().splitlines()]
    pairs = [json.loads(line) for line in (a / "data/test.jsonl").read_text().splitlines()]
    assert sorted(r["question_id"] for r in rows) == sorted({p["question_id"] for p in pairs})
    for row in rows:
        assert row["domain_description"] == ("Lectures | <i>static</i> knowledge" if row["domain"] == domains[0]
                                             else "")
        weights = {c["attribute_name"]: c["importance_score"] for c in row["causal_attributes"]}
        assert len(weights) == 5 and sum(weights.values()) == pytest.approx(1.0)
        assert [w["rating"] for w in row["wrong_answers"]] == [4, 3, 2, 1]
        for wrong in row["wrong_answers"]:
            degraded = {d["attribute_name"] for d in wrong["attribute_degradations"]}
            assert wrong["degraded_weight"] == pytest.approx(sum(weights[n] for n in degraded))
            kept = {k["attribute_name"] for k in wrong["constant_attributes"]}
            assert kept == set(weights) - degraded  # every attribute is degraded or kept, never both
            assert all(k["stability_by_elements"] and k["stability_by_elements"][0]["impact"]
                       for k in wrong["constant_attributes"])
            assert wrong["upgraded_attributes"] == []
    card = (a / "README.md").read_text()
    assert "## Domains" in card and r"Lectures \| \<i\>static\</i\> knowledge" in card
    assert "data/annotations.jsonl" in card


def test_the_schema_asks_for_elements_and_old_name_only_records_stay_names() -> None:
    schema = DistractorGeneration.model_json_schema()
    kept = schema["$defs"]["AttributeKept"]["properties"]
    assert set(kept) == {"attribute_name", "stability_by_elements"}
    assert set(schema["$defs"]["AttributeUpgraded"]["properties"]) == {"attribute_name", "improvement_by_elements"}
    assert _attributes(["Signage text"], "stability_by_elements") == [{"attribute_name": "Signage text"}]
    full = [{"attribute_name": "Shape identity", "stability_by_elements": [{"element": "star", "impact": "same"}]}]
    assert _attributes(full, "stability_by_elements") == full
