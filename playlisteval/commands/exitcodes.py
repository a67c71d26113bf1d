"""The exit codes of every `playlisteval` command, so a script can tell what happened."""

DONE = 0  # everything asked for was done
ERROR = 1  # an error stopped the command (a message says which)
USAGE = 2  # bad command-line usage (click's own code)
INCOMPLETE = 3  # the command finished, but with failed items or errors left to retry, or found nothing to do
#                (an empty folder or manifest at `add`)
PAUSED = 4  # paused by the budget: raise it and run again to go on
BUSY = 5  # another process holds the work (a second `build` while the first works on its items)
FLAGGED = 6  # finished, but a result is not a measurement: `eval judge` made a run whose replies are mostly
#              without a verdict ([analytics] max_no_verdict_share; issue 40) — its accuracy would read ~50 %
CANCELLED = 7  # stopped by `playlisteval cancel` from any process: what was committed is kept; running the
#               work again (`resume`, `index`, `select`, `eval judge`) clears the cancellation and finishes it
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT): what was committed is kept; the message says what to run
