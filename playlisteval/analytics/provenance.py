"""Provenance (issue 22): what every report, export and ``--json`` output says about where it came from.

A number someone cites must say which tool made it, from which store, for which version of which
benchmark, under which settings and with which models. One function builds that block for every
output, so they cannot drift apart:

- ``tool`` / ``version``: playlisteval's installed version (version.py);
- ``time``: a *stored* time — when the benchmark's live version was made or its newest judge run last
  changed, whichever is later — so the same store prints the same block twice (``leaderboard --json``
  is compared across shells); an HTML report or an export adds its own ``generated_at``;
- ``store``: the store URL with any password removed (store.redact);
- ``benchmark``, ``benchmark_version``, ``content_hash``: the version read (select/versions.py);
- ``settings_digest``: a hash of the settings the benchmark's results depend on as *stored* with it
  (its draw settings, seed and main-run protocol), never the reading shell's, with ``settings_source``
  saying so; with no benchmark, a hash of the effective configuration (``settings_source``
  "configuration");
- ``models``: role → the models that played it, from the ledger of calls (what was used, not what a
  shell configures now); for a benchmark, its weak judges (F_first, F_second) are those whose verdicts
  gated *it* (its own gate records, store/benchmark_gate.py), not every draw's in the store (issue 41).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, text
from sqlalchemy.engine import Engine, Row

from playlisteval.benchmark.names import markdown_text
from playlisteval.config import Settings
from playlisteval.store import benchmark_gate, counts, protocol, redact
from playlisteval.store.engine import read_core
from playlisteval.store.versions import summaries
from playlisteval.version import __version__

# SQL text with the JSON columns typed, not the ORM: `status --json` prints the provenance and loads no table
# class (issue 26); the columns are store/tables.py's Benchmark and JudgeRun
_BENCH = "SELECT id, name, seed, settings, created_at FROM benchmark WHERE "
_BENCH_BY_ID = text(_BENCH + "id = :key").columns(settings=JSON)
_BENCH_BY_NAME = text(_BENCH + "name = :key").columns(settings=JSON)
_RUN_TIMES = text("SELECT max(created_at), max(finished_at) FROM judge_run WHERE benchmark_id = :id")


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
                          .encode()).hexdigest()[:16]


def iso(stamp: float | None) -> str | None:
    """A Unix time as ISO 8601 UTC, to the second; None for none."""
    if not stamp:
        return None
    return datetime.fromtimestamp(float(stamp), UTC).replace(microsecond=0).isoformat()


def models_by_role(engine: Engine) -> dict[str, list[str]]:
    """Role → the distinct "provider/model" specs the ledger shows it called (sorted)."""
    with read_core(engine) as s:  # counted by triggers (store/counts.py): no GROUP BY over the ledger
        keys = counts.by_key(s, "role_model")
    out: dict[str, set[str]] = {}
    for role, provider, model in (key.split(" ", 2) for key in keys):
        spec = model if str(model).startswith(f"{provider}/") else f"{provider}/{model}"
        out.setdefault(str(role), set()).add(spec)
    return {role: sorted(specs) for role, specs in sorted(out.items())}


def _benchmark_row(engine: Engine, benchmark: Any) -> Row[Any] | None:
    if benchmark is None:
        return None
    if isinstance(benchmark, dict):
        benchmark = benchmark.get("id") or benchmark.get("name")
    by_id = isinstance(benchmark, int)
    with read_core(engine) as s:
        return s.execute(_BENCH_BY_ID if by_id else _BENCH_BY_NAME,
                         {"key": int(benchmark) if by_id else str(benchmark)}).first()


def provenance(engine: Engine, settings: Settings, benchmark: Any = None, *, version: int | None = None,
               generated: bool = False) -> dict[str, Any]:
    """The provenance block. ``benchmark``: a name, an id, a {id, name} row or None; ``version``: the version
    read when not the live one; ``generated``: add ``generated_at`` (now) for files written once."""
    bench = _benchmark_row(engine, benchmark)
    out: dict[str, Any] = {"tool": "playlisteval", "version": __version__, "time": None,
                           "store": redact(settings.store_url), "benchmark": None, "benchmark_version": None,
                           "content_hash": None, "settings_digest": "", "settings_source": "configuration",
                           "protocol_digest": None, "models": models_by_role(engine)}
    if generated:
        out["generated_at"] = iso(datetime.now(UTC).timestamp())
    if bench is None:
        out["settings_digest"] = _digest(settings.model_dump(mode="json"))
        return out
    bid = int(bench.id or 0)
    rows = summaries(engine, bid)
    with read_core(engine) as s:
        run_times = s.execute(_RUN_TIMES, {"id": bid}).first()
        gated = benchmark_gate.weak_judges(s, bid)
    if gated:  # none recorded (nothing drawn yet): the ledger's, as before — nothing better is known
        kept = {role: specs for role, specs in out["models"].items() if role not in benchmark_gate.ROLES}
        out["models"] = dict(sorted({**kept, **gated}.items()))
    chosen = next((r for r in rows if r.version == version), None) if version else (rows[-1] if rows else None)
    proto = protocol.stored(engine, bid)
    live = chosen is None or chosen is (rows[-1] if rows else None)
    stamps = [chosen.created_at if chosen else bench.created_at]
    if live and run_times:
        stamps += [float(t) for t in run_times if t]
    if chosen is not None and not live:  # a superseded version: when it was frozen
        stamps.append(float((chosen.snapshot or {}).get("frozen_at") or 0))
    out.update({
        "time": iso(max(stamps)), "benchmark": bench.name,
        "benchmark_version": chosen.version if chosen else None,
        "content_hash": chosen.content_hash if chosen else None,
        "settings_digest": _digest({"seed": bench.seed, "settings": bench.settings, "protocol": proto}),
        "settings_source": "benchmark", "protocol_digest": protocol.digest(proto) or None,
    })
    if chosen is not None and not live:  # the digests it was printed with while live: a redraw (`select
        # --redraw`) or `protocol set` since changed the benchmark's own settings, not this version's; and
        # its models (a redraw copied its own gate records, maybe by other weak judges)
        was = ((chosen.snapshot or {}).get("leaderboard") or {}).get("provenance") or {}
        out.update({k: was[k] for k in ("settings_digest", "protocol_digest", "models") if was.get(k)})
    return out


def labelled(prov: dict[str, Any]) -> list[tuple[str, str]]:
    """The block as (label, text) rows, in the order every rendering shows them (the dataset card's
    Markdown, the HTML report's table), so the two cannot say different things."""
    models = "; ".join(f"{role}: {', '.join(specs)}" for role, specs in prov.get("models", {}).items()) or "none"
    version = prov.get("benchmark_version")
    return [("Tool", f"{prov['tool']} {prov['version']}"),
            ("Benchmark", f"{prov.get('benchmark') or '—'}" + (f", version {version}" if version else "")),
            ("Content hash (sha256 of data/test.jsonl)", prov.get("content_hash") or "—"),
            ("Results as of", prov.get("time") or "—"), ("Generated", prov.get("generated_at") or "—"),
            ("Store", prov["store"]), (f"Settings digest ({prov['settings_source']})", prov["settings_digest"]),
            ("Main-run protocol digest", prov.get("protocol_digest") or "—"), ("Models by role", models)]


def card_lines(prov: dict[str, Any]) -> str:
    """The block as a Markdown section (the dataset card's). Same seed, same card on any store and at any time:
    the times and the store, which differ by machine and run, stay in provenance.json beside it."""
    local = {"Results as of", "Generated", "Store"}
    # the names in it (benchmark, judges and models by role) are the user's: one line each, markup shown as is
    body = "\n".join(f"| {k} | {markdown_text(str(v).replace('|', '/'))} |" for k, v in labelled(prov)
                     if k not in local)
    return f"## Provenance\n\n| | |\n|---|---|\n{body}\n"
