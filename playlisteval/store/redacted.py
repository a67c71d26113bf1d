"""Error texts redacted on their way into the store (issue 25): a key a provider quoted never lands in a row.

Every writer of an error text (the ledger's ``model_call.error``, ``item.error``, ``judge_error.error``, a
gate's reason and details, an index failure's reason, …) goes through the engine, so the engine is where the
redaction sits: a cursor hook rewrites the string parameters of each INSERT or UPDATE that names a column
carrying such text. Statements that cannot (the bulk copies of chunks, vectors, transcripts) are told apart
once per statement text and pass untouched, so the hook costs them a dictionary look-up.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from playlisteval.logs.redaction import redact_any, secret_values

#: columns whose text may quote what a provider, a proxy or a library said
_TEXT_COLUMN = re.compile(r"(?i)\b\w*(error|reason|detail|message|reply|note)s?\w*\b")
_WRITE = re.compile(r"(?is)^\s*(insert|update|upsert|replace)\b")


@lru_cache(maxsize=4096)
def carries_error_text(statement: str) -> bool:
    """Does this statement write a column that may hold an error text?"""
    return bool(_WRITE.match(statement)) and bool(_TEXT_COLUMN.search(statement))


def redact_writes(engine: Engine) -> None:
    """Hook the engine: the parameters of every statement that writes error texts are redacted first
    (the dialect's ``do_execute`` / ``do_executemany`` events: a statement without parameters never
    reaches them, and one that writes no error text is handed back to the dialect untouched)."""

    @event.listens_for(engine, "do_execute")
    def _execute(cursor: Any, statement: str, parameters: Any, _context: Any) -> bool | None:
        if not parameters or not carries_error_text(statement):
            return None  # the dialect runs it as usual
        cursor.execute(statement, redact_any(parameters, secret_values()))
        return True

    @event.listens_for(engine, "do_executemany")
    def _executemany(cursor: Any, statement: str, parameters: Any, _context: Any) -> bool | None:
        if not parameters or not carries_error_text(statement):
            return None
        cursor.executemany(statement, redact_any(list(parameters), secret_values()))
        return True
