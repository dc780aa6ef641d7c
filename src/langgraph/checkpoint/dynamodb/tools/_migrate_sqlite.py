"""Open a ``SqliteSaver`` database that somebody else wrote, for ``migrate``, without trusting its schema.

A SQLite file is code as much as data: its ``checkpoints`` or ``writes`` may
be a *view*, whose query runs on every read the saver makes (a 20 KB file
whose view generates metadata took a migration to 1.5 GB; a recursive one
never finished), a virtual table, or a table with generated columns, and the
functions in those run as the reader. :func:`guard_sqlite` refuses all of
them before anything is read, turns ``trusted_schema`` off (so no function
that is not innocuous runs from the schema), and installs a progress handler
that interrupts any one statement running longer than a budget.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final

from langgraph.checkpoint.dynamodb.tools._export_file import ExportError

__all__ = ["DEFAULT_STATEMENT_SECONDS", "SqliteSourceError", "guard_sqlite"]

#: The longest one statement on the source may run, by default (a thread's rows are read in a few).
DEFAULT_STATEMENT_SECONDS: Final = 60.0
#: SQLite virtual-machine steps between two looks at the clock (about a millisecond's work).
_STEPS: Final = 10_000
#: The tables ``SqliteSaver`` reads.
_TABLES: Final = ("checkpoints", "writes")


class SqliteSourceError(ExportError):
    """A SQLite source is not plain LangGraph tables (a view, a virtual table, generated columns), or a statement ran too long."""


def guard_sqlite(
    conn: sqlite3.Connection, *, max_statement_seconds: float = DEFAULT_STATEMENT_SECONDS
) -> None:
    """Check a source connection's schema and bound the time of each statement on it, before any read.

    Args:
        conn: the connection a ``SqliteSaver`` will read (open it read-only:
            ``file:PATH?mode=ro`` with ``uri=True``).
        max_statement_seconds: a statement still running after this long is
            interrupted (``sqlite3.OperationalError: interrupted``): the
            clock restarts whenever a statement starts.

    Raises:
        SqliteSourceError: ``checkpoints`` or ``writes`` is a view, a virtual
            table, or has generated columns; nothing was read from them.
    """
    conn.execute("PRAGMA trusted_schema = OFF")  # schema-borne functions must be innocuous
    rows = conn.execute(
        "SELECT name, type, sql FROM sqlite_master WHERE name IN (?, ?)",  # the catalogue: no view can stand in
        _TABLES,
    ).fetchall()
    for name, kind, sql in rows:
        if kind != "table" or str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            raise SqliteSourceError(
                f"the source's {name!r} is a {'virtual table' if kind == 'table' else kind}, not a table: a "
                "LangGraph SqliteSaver never makes one, and reading it would run its query; refused, nothing read"
            )
        # table_xinfo's ``hidden``: 2 and 3 are generated columns (computed on every read).
        generated = [r[1] for r in conn.execute(f'PRAGMA table_xinfo("{name}")') if r[6] in (2, 3)]
        if generated:
            raise SqliteSourceError(
                f"the source's {name!r} has generated columns {generated}: a LangGraph SqliteSaver never "
                "makes them, and reading them would run their expressions; refused, nothing read"
            )
    started = [time.monotonic()]

    def on_statement(_sql: str) -> None:
        started[0] = time.monotonic()

    def over_budget() -> int:
        return int(time.monotonic() - started[0] > max_statement_seconds)  # non-zero interrupts

    conn.set_trace_callback(on_statement)
    conn.set_progress_handler(over_budget, _STEPS)
