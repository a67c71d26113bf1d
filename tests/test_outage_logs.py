"""logs/outage.py and actors/outage_logs.py (issue 44, deliverable 5) in-process: an outage's attempts fold into
one warning when it starts and one info line when a site gets through; dramatiq's lines about an outage's
errors are dropped (noted as attempts) unless -vv, its lines about other errors kept. The real outage, with
real servers and worker processes, is tests/test_outage_faults.py."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import psycopg
import pytest
import redis
from dramatiq.errors import ConnectionClosed
from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from playlisteval.actors.outage_logs import DramatiqOutageFilter
from playlisteval.errors import InfrastructureError, as_infrastructure, outage_of
from playlisteval.logs import handlers, outage

REFUSED = 'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused\n' \
          "\tIs the server running on that host and accepting TCP/IP connections?"


@pytest.fixture(autouse=True)
def _no_outage() -> Iterator[None]:
    outage.forget()
    yield
    outage.forget()


def store_error() -> OperationalError:
    return OperationalError("SELECT 1", {}, psycopg.OperationalError(REFUSED))


def test_an_outage_is_one_warning_then_one_line_when_it_ends(monkeypatch: pytest.MonkeyPatch,
                                                             request: pytest.FixtureRequest) -> None:
    monkeypatch.setattr(handlers, "_configured", logging.DEBUG)  # -vv: each attempt a debug line
    # as `-vv` sets it: an earlier CLI test in this process left structlog filtering below warnings
    from playlisteval.logs.lazy import configure

    configure(2)
    request.addfinalizer(lambda: configure(0))  # the CLI's default again for the tests after
    monkeypatch.setattr(handlers, "_configured", logging.DEBUG)
    with capture_logs() as logs:
        for _ in range(40):
            assert outage.failed("store", store_error(), where="lease heartbeat")
        assert outage.is_down("store") and not outage.is_down("broker")
        outage.reached("store", "broker")
        outage.reached("store")  # no outage left: nothing more is said
    warnings = [e["event"] for e in logs if e["log_level"] == "warning"]
    infos = [e["event"] for e in logs if e["log_level"] == "info"]
    assert warnings == ['store unreachable: connection failed: connection to server at "127.0.0.1", port 1 '
                        "failed: Connection refused; retrying"]
    assert len(infos) == 1 and infos[0].startswith("store reachable again after ") \
        and infos[0].endswith(" s, 40 attempts")
    assert sum(e["log_level"] == "debug" for e in logs) == 40  # each attempt, its traceback at -vv
    assert not outage.is_down()


def test_a_second_outage_is_warned_again() -> None:
    with capture_logs() as logs:  # at the default level: no debug line per attempt
        outage.failed("broker", redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379."), where="x")
        outage.reached("broker")
        outage.failed("broker", redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379."), where="x")
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == \
        ["broker unreachable: Error 111 connecting to 127.0.0.1:6379.; retrying"] * 2
    assert not any(e["log_level"] == "debug" for e in logs)


def test_what_is_down_is_named_through_the_cause_chain() -> None:
    wrapped = as_infrastructure(store_error())
    assert wrapped is not None
    wrapped.__cause__ = store_error()
    assert outage_of(store_error()) == outage_of(wrapped) == "store"
    assert outage_of(redis.TimeoutError("Timeout reading from socket")) == "broker"
    assert outage_of(ConnectionClosed(redis.ConnectionError("gone"))) == "broker"
    assert outage_of(InfrastructureError("Redis: ConnectionError: gone")) == "broker"
    assert outage_of(ValueError("a bug")) is None  # not an outage: logged the usual way
    assert not outage.failed(outage_of(ValueError("a bug")), ValueError("a bug"), where="x")
    assert outage.first_line(wrapped).startswith("connection failed:")


def _record(msg: str, *args: object, error: BaseException | None = None,
            name: str = "dramatiq.worker.WorkerThread") -> logging.LogRecord:
    exc_info = None
    if error is not None:
        try:
            raise error
        except BaseException:
            exc_info = sys.exc_info()
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, exc_info)


def test_dramatiqs_outage_lines_fold_into_the_warning_and_others_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = DramatiqOutageFilter()
    infra = as_infrastructure(store_error())
    assert infra is not None
    with capture_logs() as logs:
        for _ in range(5):
            assert not quiet.filter(_record("Failed to process message %s with unhandled exception.", "m",
                                            error=infra))
        assert not quiet.filter(_record("Consumer encountered a connection error: %s", ConnectionClosed(
            redis.ConnectionError("Connection refused")), name="dramatiq.worker.ConsumerThread(q)"))
        assert quiet.filter(_record("Failed to process message %s with unhandled exception.", "m",
                                    error=KeyError("a bug")))  # not an outage: dramatiq's traceback stays
        assert quiet.filter(_record("something else", name="redis.client"))
        monkeypatch.setattr(handlers, "_configured", logging.DEBUG)  # -vv: every attempt's traceback too
        assert quiet.filter(_record("Failed to process message %s with unhandled exception.", "m", error=infra))
    assert sorted(e["event"].split(":")[0] for e in logs if e["log_level"] == "warning") == \
        ["broker unreachable", "store unreachable"]
