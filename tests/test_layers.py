"""Packages layered without cycles (issue 10, deliverable 5): the package-level import graph of playlisteval
has no cycle.

A node is a subpackage (``playlisteval.eval``) or a top-level module (``playlisteval.state``). An edge is an
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
    """playlisteval.eval.judge → "eval"; playlisteval.state → "state"; anything else → None."""
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
    assert {"models", "prompts", "gates", "stages", "eval", "select", "actors", "store"} <= set(graph)
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
