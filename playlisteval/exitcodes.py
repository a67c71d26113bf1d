"""The exit codes of every `playlisteval` command, so a script can tell what happened."""

DONE = 0  # everything asked for was done
ERROR = 1  # an error stopped the command (a message says which)
USAGE = 2  # bad command-line usage (click's own code)
INCOMPLETE = 3  # the command finished, but with failed items or errors left to retry
PAUSED = 4  # paused by the budget: raise it and run again to go on
