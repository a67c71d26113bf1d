"""The base of every store table (store/tables.py re-exports it with every table)."""

from __future__ import annotations

import time

from sqlmodel import SQLModel
from sqlmodel.main import SQLModelConfig


def now() -> float:
    return time.time()


class StoreTable(SQLModel):
    """Every table's base. pydantic builds a model's validator when the class is made, unless told to wait
    for its first use: for 44 tables that the store writes and reads through SQLAlchemy (rarely validated)
    that was ~90 ms of every command's start-up (issue 26: `status` at 100k items was start-up bound)."""

    model_config = SQLModelConfig(defer_build=True)
