"""The report's sections computed side by side (issue 43: a cold report at 1M judgments in ~3 s).

Why threads help: a section is SQL (DuckDB, which releases the GIL while a query runs) and Python (the
intervals, the trust figures). At 1M judgments the trust figures and the failure attribution are ~2.5
CPU-s of Python, while the rate sections spend most of theirs in queries: on a second thread those
queries run while the first thread's Python does. The two never share a result: ``Analytics`` runs one
query at a time on its connection, execute and fetch together (runner.py).

Why the page cannot change: every section is a function of the analytics file (and, for the attribution's
evidence records, of the store) alone — each interval seeded by the project's seed, never by a generator
shared along the report — and the sections are put on the page in their own order whatever order they
finish in.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from playlisteval.analytics.tabular import Deferred, Section

#: what a section's maker gives: the section, or the section still being computed elsewhere (the trust
#: figures in a forked child, forked.py), finished once the threads are done: the thread goes on meanwhile
Made = Section | Deferred

THREADS = 2  # one thread's Python beside another's query: more would only queue on the GIL and the connection
#: the order the sections start in (the rest after, in the page's order): the trust figures first (the longest,
#: mostly Python; started last they would run alone at the end), beside them the rate sections, mostly DuckDB
#: queries that run without the GIL, and attribution, the other Python-heavy one, after those. Started
#: together, trust and attribution took turns on the GIL: the sections at 1M judgments took 2.25-2.38 s, in
#: this order 2.08-2.22 s with less CPU (5 runs each, alternating, on a quiet 2-core host).
START = ("trust", "scope", "leaderboard", "gap", "bias", "attribution")


def import_sections() -> None:
    """Load the sections' modules (and scipy.special and scipy.optimize under them, ~0.7 CPU-s together):
    given to Analytics as ``meanwhile``, this runs while DuckDB copies the store, on the core the copy leaves
    free. A report whose sections are kept (section_cache) copies nothing, so it never imports them (issue
    26: report with nothing changed <= 1 s). scipy.stats is not among them (analytics/distributions.py)."""
    import scipy.optimize  # noqa: F401 - the power analysis's root finder, else imported by the trust section

    from playlisteval.analytics import (  # noqa: F401 - imported for their side effect: loaded
        check_sections,
        rate_sections,
        retriever_ablation,
        trust_sections,
        verdict_health,
    )


def compute(makers: Sequence[tuple[str, Callable[[], Made]]],
            progress: Callable[[str, int, int], None] | None = None) -> list[Section]:
    """Each (name, maker)'s section, in the given order; started in START's order, then the others'. A maker
    may give a Deferred section (``Made``): finished, in the page's order, once the threads are done.
    ``progress(task, done, total)`` as each section of the page's order is ready; the first failure is
    raised once the sections already running have finished (no thread is left behind)."""
    rank = {name: k for k, name in enumerate(START)}
    order = sorted(range(len(makers)), key=lambda i: (rank.get(makers[i][0], len(START)), i))
    # what exists now (the loaded modules, the copied tables' metadata) is left out of the collector's full
    # passes while the sections make and drop their many small objects: at 1M judgments those passes went
    # from ~0.15 to 0.08–0.13 s; unfrozen after, so nothing frozen outlives the report (cycles among it included)
    gc.freeze()
    try:
        return _computed(makers, order, progress)
    finally:
        gc.unfreeze()


def _computed(makers: Sequence[tuple[str, Callable[[], Made]]], order: list[int],
              progress: Callable[[str, int, int], None] | None) -> list[Section]:
    sections: list[Section] = []
    started: dict[int, Future[Made]] = {}
    try:
        with ThreadPoolExecutor(THREADS, thread_name_prefix="report-section") as pool:
            started.update({i: pool.submit(makers[i][1]) for i in order})
            try:
                for done in range(len(makers)):
                    if progress:
                        progress("report sections", done, len(makers))
                    made = started[done].result()
                    sections.append(made if isinstance(made, Section) else made.finish())
            except BaseException:
                for future in started.values():  # not started yet: never started
                    future.cancel()
                raise
    except BaseException:  # the threads are done: what they started elsewhere (a forked child) is ended
        for future in started.values():
            given = None if future.cancelled() or future.exception() is not None else future.result()
            if isinstance(given, Deferred):  # finished already: its cancel does nothing
                given.cancel()
        raise
    if progress:
        progress("report sections", len(makers), len(makers))
    return sections
