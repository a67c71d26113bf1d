"""Packages layered without cycles (issue 10, deliverable 5): the package-level import graph of playlisteval
has no cycle.

A node is a subpackage (``playlisteval.eval``) or a top-level module (``playlisteval.store.states``). An edge is an
import written at module level, including those under ``if TYPE_CHECKING:`` (a type is a dependency too).
Imports inside functions are not counted: they are how the CLI, the engine and the report reach code above
them lazily, at run time, by design.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "playlisteval"


def node_of(module: str) -> str | None:
    """playlisteval.eval.judge → "eval"; playlisteval.store.states → "state"; anything else → None."""
    parts = module.split(".")
    if parts[0] != "playlisteval" or len(parts) < 2:
        return None
    name = parts[1]
    return name if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file() else None


def module_imports(tree: ast.Module) -> list[str]:
    """Modules imported at module level (TYPE_CHECKING blocks and try/except included, functions not)."""
    out: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                out.extend(alias.name for alias in stmt.names)
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                out.append(stmt.module)
                out.extend(f"{stmt.module}.{alias.name}" for alias in stmt.names)
            elif isinstance(stmt, ast.If):
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                visit(stmt.body)
                for handler in stmt.handlers:
                    visit(handler.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)
            elif isinstance(stmt, ast.With):
                visit(stmt.body)

    visit(tree.body)
    return out


def every_import(tree: ast.Module) -> list[str]:
    """Modules imported anywhere in the file, inside functions too."""
    out: list[str] = []
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            out.extend(alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            out.append(stmt.module)
            out.extend(f"{stmt.module}.{alias.name}" for alias in stmt.names)
    return out


def import_graph(imports: Callable[[ast.Module], list[str]] = module_imports) -> dict[str, dict[str, set[str]]]:
    """node → imported node → the files that import it."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        source = node_of(".".join(rel.with_suffix("").parts))
        if source is None:
            continue
        edges = graph.setdefault(source, {})
        for module in imports(ast.parse(path.read_text(), filename=str(path))):
            target = node_of(module)
            if target is not None and target != source:
                edges.setdefault(target, set()).add(str(rel))
    return graph


def find_cycle(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """One cycle as [a, b, …, a], or [] when there is none (depth-first search, white/grey/black)."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if colour.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if colour.get(nxt, 0) == 0 and (found := visit(nxt)):
                return found
        stack.pop()
        colour[node] = 2
        return []

    for node in sorted(graph):
        if colour.get(node, 0) == 0 and (found := visit(node)):
            return found
    return []


def test_the_package_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert {"models", "prompts", "build", "world", "eval", "select", "actors", "store", "commands"} <= set(graph)
    cycle = find_cycle(graph)
    why = [f"{a} → {b} ({', '.join(sorted(graph[a][b]))})" for a, b in zip(cycle, cycle[1:], strict=False)]
    assert not cycle, "import cycle between packages:\n  " + "\n  ".join(why)


def test_no_cycle_even_counting_imports_inside_functions() -> None:
    """Late imports (inside functions) may reach a module above, but never close a loop: the engine gets the
    index's dispatcher by injection, the report gets the human study's section from the CLI."""
    graph = import_graph(every_import)
    cycle = find_cycle(graph)
    why = [f"{a} → {b} ({', '.join(sorted(graph[a][b]))})" for a, b in zip(cycle, cycle[1:], strict=False)]
    assert not cycle, "import cycle between packages (imports inside functions counted):\n  " + "\n  ".join(why)


def test_the_cycle_finder_finds_one() -> None:
    """The check itself can fail: a made-up graph with a cycle is caught, one without is not."""
    assert find_cycle({"a": {"b": {"x"}}, "b": {"c": {"y"}}, "c": {"a": {"z"}}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": {"x"}}, "b": {"c": {"y"}}, "c": {}}) == []


def test_shared_types_sit_below_the_packages_that_share_them() -> None:
    """The benchmark's pairs are below `eval` and `select`; citations below `prompts` and `gates`."""
    graph = import_graph()
    assert "select" not in graph["eval"] and "select" not in graph["benchmark"]
    assert "gates" not in graph["prompts"] and not graph.get("citations")


# ---- the allowed direction between packages (issue 23): a node may import only nodes of lower layers ----
#: layer of each top-level node, lowest first; a node imports only nodes in strictly lower layers (or itself).
LAYERS: dict[str, int] = {
    "errors": 0, "version": 0, "__init__": 0,
    "config": 1, "logs": 1,  # logging, and the one redaction of secrets (logs/redaction.py) every text passes
    "store": 2,  # the source of truth, with the item state table (store/states.py) its compare-and-set enforces
    "media": 3, "prompts": 3,  # decoding files; the roles' templates, response schemas and citation grammar
    "models": 4,  # the one runner, providers, batch APIs
    "index": 5, "benchmark": 5, "world": 5,  # the index; the benchmark's shared types; the offline world
    "build": 6,  # an item's life: stages and gates
    "actors": 7,  # the engine that runs every kind of work, and the build's drivers
    "eval": 8,
    "analytics": 9,
    "select": 10,
    "human": 11,
    "view": 12,  # `playlisteval view`: the web viewer over the store (issue 22)
    "commands": 13,
    "cli": 14,
}


def test_every_import_goes_down_the_layer_table() -> None:
    """Counting imports inside functions: no package imports a package of its own layer or above."""
    graph = import_graph(every_import)
    assert set(graph) <= set(LAYERS), f"nodes without a layer: {sorted(set(graph) - set(LAYERS))}"
    upward = [f"{a} (layer {LAYERS[a]}) → {b} (layer {LAYERS[b]}): {', '.join(sorted(files))}"
              for a, edges in sorted(graph.items()) for b, files in sorted(edges.items()) if LAYERS[b] >= LAYERS[a]]
    assert not upward, "imports against the layer table:\n  " + "\n  ".join(upward)


def test_the_layer_check_can_fail() -> None:
    graph = {"store": {"eval": {"playlisteval/store/x.py"}}}
    assert [a for a, edges in graph.items() for b in edges if LAYERS[b] >= LAYERS[a]] == ["store"]


def test_the_top_level_holds_only_packages_and_the_named_modules() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__", "cli", "errors", "version"], loose
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} >= {"config", "logs", "commands"}
    models = sorted(p.name for p in (PACKAGE / "models").glob("*.py"))
    assert not [m for m in models if m.startswith(("sim_", "batch_")) or m in ("sim.py", "batch.py")], models


def _module_graph() -> dict[str, set[str]]:
    """module → modules it imports (inside functions too); ``from pkg import mod`` is an edge to pkg.mod only."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for stmt in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(stmt, ast.Import):
                targets = [alias.name for alias in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                subs = [f"{stmt.module}.{alias.name}" for alias in stmt.names]
                targets = [s for s in subs if s in modules] or [stmt.module]
                if len(targets) < len(subs) and stmt.module in modules:
                    targets.append(stmt.module)
            for target in targets:
                parts = target.split(".")
                known = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules),
                             None)
                # a submodule reaching its own package's __init__ is how a package re-exports: not a circle
                if known and known != name and not name.startswith(known + "."):
                    edges.add(known)
        graph[name] = edges
    return graph


#: inside the engine, the actors declared at import (tasks.py) reach the App, the step and the job runner with
#: imports inside their bodies (the App module declares the actors): a circle kept within one package on purpose
LATE_BOUND = "playlisteval.actors."


def test_no_import_circle_between_modules() -> None:
    """The two circles issue 23 found (actors ↔ workers, index.embedders ↔ index.qwen_vl) and any other,
    but the engine's late-bound actors."""
    graph = {a: {b: {a} for b in edges if not (a.startswith(LATE_BOUND) and b.startswith(LATE_BOUND))}
             for a, edges in _module_graph().items()}
    cycle = find_cycle(graph)
    assert not cycle, "import circle between modules: " + " → ".join(cycle)
