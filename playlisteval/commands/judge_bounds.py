"""`eval judge --max-pairs N` (issue 42): its exit status and what it says about the pairs it left.

A bounded pass leaves its run ``incomplete`` (the pairs past the bound are not judged), as any partial run
is shown. The command did what it was asked, though, when the first N pairs are judged: then its exit
status is that of a finished run (0, or 6 when flagged), and it says how many pairs wait for a pass
without the bound.
"""

from __future__ import annotations

from typing import Any

from playlisteval.commands import exitcodes
from playlisteval.commands.support import err_console


def bounded_exit(engine: Any, summaries: list[Any], health: dict[int, Any], max_pairs: int, code: int) -> int:
    """``code`` (judge_exit's) for a pass bounded to ``max_pairs``: INCOMPLETE becomes DONE (or FLAGGED)
    when every run has its first N pairs judged, no error and no stop."""
    from playlisteval.eval.bounds import pending_within

    for s in summaries:
        left = max(0, s.pairs - max_pairs)
        if left and not s.errors:
            err_console.print(f"run {s.run_id} ({s.judge}): --max-pairs {max_pairs} judges the benchmark's first "
                              f"{max_pairs} pair(s) by content key; {left} more wait for `eval judge` without "
                              "--max-pairs (the same run goes on)", highlight=False, markup=False)
    if code != exitcodes.INCOMPLETE:
        return code
    if any(s.errors or s.stopped or pending_within(engine, s.run_id, max_pairs) for s in summaries):
        return code
    flagged = any((h := health.get(s.run_id)) is not None and h.no_verdict_flagged for s in summaries)
    return exitcodes.FLAGGED if flagged else exitcodes.DONE
