"""The step loop's hot statements, run on the driver's own cursor inside a SQLAlchemy transaction (issue 26).

A transition runs ~45 statements. Through ``Connection.execute`` each pays SQLAlchemy's per-statement path
(cache key, execution context, events, a result object): measured here ~27 µs a statement against ~9 µs
for the same statement through sqlite3. A ``Direct`` statement is compiled once per engine's dialect (and set of
parameter names) into the driver's SQL and parameter order, and run on the DB-API connection that the
SQLAlchemy connection holds: the same transaction, so it mixes with Core and ORM statements there.

What SQLAlchemy does on the way for such a statement is done here too:
- the bind and result processors of its types (JSON, …), found by SQLAlchemy's compiler;
- the redaction of error texts the engine's ``do_execute`` hook does (store/redacted.py);
- a driver error raised as SQLAlchemy raises it (``OperationalError``, …, with a lost connection
  invalidated), so the callers' infrastructure checks see what they saw before.

What it cannot do is refused when compiled (``ValueError``): expanding IN lists, literal binds, and inserts
leaving out a column whose default is computed in Python. Cursor events (``before_cursor_execute``) do not
see these statements; SQLite's trace callback does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.sql import ClauseElement

from playlisteval.logs.redaction import redact_any, secret_values
from playlisteval.store.redacted import carries_error_text

if TYPE_CHECKING:  # the ORM loads with the first ORM transaction, not with this module (store/engine.py)
    from sqlalchemy.orm import Session

Row = tuple[Any, ...]
T = TypeVar("T")


@dataclass
class _Compiled:
    dialect: Dialect
    sql: str
    construct: Callable[[Mapping[str, Any]], dict[str, Any]]  # the statement's own values merged in, checked
    order: tuple[str, ...] | None  # the parameters' names in order (a positional driver), else None
    binds: Mapping[str, Callable[[Any], Any]]  # name -> its type's bind processor, where it has one
    types: tuple[tuple[str, Any], ...]  # the returned columns SQLAlchemy knows of: (name, type)
    redact: bool  # it writes a column that may hold an error text
    results: tuple[Callable[[Any], Any] | None, ...] | None = None  # their result processors, from a first run


class Direct:
    """One Core statement (select, insert, update, delete; RETURNING allowed), run with ``rows`` / ``count``."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[tuple[int, frozenset[str]], _Compiled] = {}

    def _for(self, dialect: Dialect, names: frozenset[str]) -> _Compiled:
        # per dialect *instance*, not per dialect name: a type's processors may read the engine's own state
        # (store/media_paths.py: the project folder paths are resolved against), so a second store opened in
        # the process must not run the first one's. The entry holds its dialect, so the id stays its own.
        key = (id(dialect), names)
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = _compile(self.statement, dialect, names)
        return found

    def _run(self, on: Connection | Session, params: Mapping[str, Any]) -> tuple[Any, _Compiled]:
        conn = on if isinstance(on, Connection) else on.connection()  # a session: its connection, in its transaction
        compiled = self._for(conn.dialect, frozenset(params))
        values = compiled.construct(params)
        for name, process in compiled.binds.items():
            values[name] = process(values[name])
        bound: Sequence[Any] | Mapping[str, Any] = (
            values if compiled.order is None else tuple(values[name] for name in compiled.order))
        if compiled.redact:
            bound = redact_any(bound, secret_values())
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(compiled.sql, bound)
        except Exception as exc:
            cursor.close()
            # SQLAlchemy's own handling: its exception classes, a lost connection invalidated, handle_error
            conn._handle_dbapi_exception(exc, compiled.sql, bound, cursor, None)
        return cursor, compiled

    def rows(self, conn: Connection | Session, params: Mapping[str, Any]) -> list[Row]:
        """The rows it returns (a select, or RETURNING), each a tuple in the statement's column order; ``conn`` a
        connection, or a session (its connection, inside its transaction)."""
        cursor, compiled = self._run(conn, params)
        try:
            rows = cursor.fetchall()
            processors = compiled.results
            if processors is None:  # some processors depend on the driver's type code (PostgreSQL's numerics)
                processors = compiled.results = _result_processors(compiled, cursor.description)
        finally:
            cursor.close()
        if not any(processors):
            return [tuple(row) for row in rows]
        return [tuple(value if p is None else p(value) for p, value in zip(processors, row, strict=True))
                for row in rows]

    def first(self, conn: Connection | Session, params: Mapping[str, Any]) -> Row | None:
        rows = self.rows(conn, params)
        return rows[0] if rows else None

    def count(self, conn: Connection | Session, params: Mapping[str, Any]) -> int:
        """Run a statement that returns nothing; the rows it touched."""
        cursor, _ = self._run(conn, params)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()


def _result_processors(compiled: _Compiled, description: Any) -> tuple[Callable[[Any], Any] | None, ...]:
    """Each returned column's result processor. A compiled select or RETURNING knows every column, in order;
    a ``text()`` statement only those given to ``.columns(name=type)``, matched by name (the rest as the
    driver gives them)."""
    columns = [(column[0], column[1]) for column in description or ()]
    if len(compiled.types) == len(columns):
        kinds = [kind for _, kind in compiled.types]
    else:
        by_name = dict(compiled.types)
        kinds = [by_name.get(name) for name, _ in columns]
    return tuple(None if kind is None else kind._cached_result_processor(compiled.dialect, code)
                 for kind, (_, code) in zip(kinds, columns, strict=True))


def _compile(statement: ClauseElement, dialect: Dialect, names: frozenset[str]) -> _Compiled:
    compiled: Any = statement.compile(dialect=dialect, column_keys=sorted(names))
    if compiled.literal_execute_params or compiled.post_compile_params:
        raise ValueError(f"a direct statement cannot expand or inline parameters: {compiled.string}")
    if getattr(compiled, "insert_prefetch", None) or getattr(compiled, "update_prefetch", None):
        left = [c.name for c in (compiled.insert_prefetch or compiled.update_prefetch)]
        raise ValueError(f"a direct statement must be given the columns with Python-side defaults: {left}")
    binds = {}
    for name, process in compiled._bind_processors.items():
        if isinstance(process, tuple):
            raise ValueError(f"a direct statement cannot bind a tuple: {name}")
        if process is not None:
            binds[name] = process
    escaped = compiled.escaped_bind_names
    if escaped:  # a bind name the driver cannot take as written: SQLAlchemy renames it; keep this simple
        raise ValueError(f"a direct statement's parameter names must need no escaping: {sorted(escaped)}")

    # what SQLAlchemy's construct_params does for such a statement, without its general cases (a fifth of a
    # direct statement's cost): the values written into the statement, the caller's over them, none missing
    fixed: dict[str, Any] = {}
    required: set[str] = set()
    for parameter, name in compiled.bind_names.items():
        if parameter.callable is not None:
            raise ValueError(f"a direct statement cannot bind a value computed at execution: {name}")
        if parameter.required:
            required.add(name)
        else:
            fixed[name] = parameter.value
    names = frozenset(fixed) | required

    def construct(params: Mapping[str, Any]) -> dict[str, Any]:
        missing = required.difference(params)
        if missing:
            raise InvalidRequestError(f"A value is required for bind parameter {sorted(missing)[0]!r}")
        given = {**fixed, **params}
        return given if compiled.positional else {name: given[name] for name in names}

    return _Compiled(dialect=dialect, sql=compiled.string, construct=construct,
                     order=tuple(compiled.positiontup) if compiled.positional else None, binds=binds,
                     types=tuple((column[0], column[3]) for column in compiled._result_columns),
                     redact=carries_error_text(compiled.string))


class Inserts:
    """What a stage's writer does in its commit (store/items.py), without the ORM's unit of work: ``add`` rows
    (objects of the store's table classes) and ``flush`` them, each one INSERT … RETURNING its key on the
    driver's cursor, in the order added, the key set on the object. As the ORM's flush: a column left None
    whose type does not store None (``should_evaluate_none``) is left out, so its default applies; a column
    whose default is computed in Python must be set (it is, by the table class's own field defaults)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._pending: list[Any] = []

    def add(self, row: Any) -> None:
        self._pending.append(row)

    def add_all(self, rows: Sequence[Any]) -> None:
        self._pending.extend(rows)

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for row in pending:
            insert_row, key, columns = _insert_of(type(row))
            values: dict[str, Any] = {}
            for name, stores_none in columns:
                value = getattr(row, name)
                if value is not None or stores_none:
                    values[name] = value
            returned = insert_row.first(self.conn, values)
            if key is not None and returned is not None:
                setattr(row, key, returned[0])


_INSERTS: dict[type, tuple[Direct, str | None, tuple[tuple[str, bool], ...]]] = {}


def _insert_of(kind: type) -> tuple[Direct, str | None, tuple[tuple[str, bool], ...]]:
    """A table class's insert (RETURNING its single-column key), the key's name, and (column, stores None)."""
    found = _INSERTS.get(kind)
    if found is None:
        from sqlalchemy import insert, inspect

        mapper: Any = inspect(kind)
        table = mapper.local_table
        for attribute in mapper.column_attrs:  # the fields read by name below are the columns' own names
            if attribute.key != attribute.columns[0].name:
                raise ValueError(f"{kind.__name__}.{attribute.key} is stored as {attribute.columns[0].name}")
        primary = list(table.primary_key.columns)
        key = primary[0].name if len(primary) == 1 else None
        statement = insert(table).returning(primary[0]) if key else insert(table)
        columns = tuple((c.name, bool(c.type.should_evaluate_none) or (c.primary_key and key is None))
                        for c in table.columns)
        found = _INSERTS[kind] = (Direct(statement), key, columns)
    return found


_GETS: dict[type, tuple[Direct, tuple[str, ...]]] = {}


def get(conn: Connection, kind: type[T], key: Any) -> T | None:
    """The row of a table class by its single-column primary key, as an unattached object built without
    validation (``model_construct``: what the store holds was validated when written), or None. For reads
    only: it belongs to no session, so nothing set on it is stored."""
    found = _GETS.get(kind)
    if found is None:
        from sqlalchemy import bindparam, inspect, select
        from sqlalchemy.orm import configure_mappers

        configure_mappers()  # else, in a process that has not used the ORM yet, its attributes cannot be read
        table = inspect(kind).local_table
        (primary,) = table.primary_key.columns
        names = tuple(c.name for c in table.columns)
        found = _GETS[kind] = (Direct(select(*table.columns).where(primary == bindparam("key"))), names)
    statement, names = found
    row = statement.first(conn, {"key": key})
    if row is None:
        return None
    made: T = kind.model_construct(**dict(zip(names, row, strict=True)))  # type: ignore[attr-defined]
    return made
