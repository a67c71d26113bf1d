"""The met / NOT met lines every benchmark ends with: each goal, what the run saw, and whether it holds."""

from __future__ import annotations


def print_goals(title: str, goals: dict[str, tuple[str, bool]], width: int = 18) -> None:
    print(title)
    for goal, (seen, met) in goals.items():
        print(f"  {goal:<52} {seen:>{width}}  {'met' if met else 'NOT met'}", flush=True)
