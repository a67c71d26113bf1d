"""Every error playlisteval raises on purpose derives from one root.

    PlaylistEvalError                 root: catch this to catch everything below
    ├── ConfigError                   bad or missing playlisteval.toml / environment value
    ├── ProjectNotFound               no playlisteval.toml in --project DIR or the working directory
    ├── StoreError                    the store cannot be opened or migrated
    ├── MediaError                    a video/audio file is missing, unreadable, corrupt or silent
    ├── StateError                    a transition the state machine does not allow
    ├── ModelError                    a model call failed
    │   ├── TransientModelError       429 / 5xx / timeout: retried with backoff (Retry-After honoured)
    │   ├── PermanentModelError       4xx, refusal to serve, bad request: the item fails with it kept
    │   ├── ProviderNotAvailable      the provider's SDK is not installed or its key is not set
    │   │   └── ProviderDown          the provider failed the same way N times in a row: the run stops
    │   ├── CheckerFault              a gate's model reply stayed unusable: no verdict, the step is retried
    │   └── BudgetExceeded            the next paid call would pass the build budget: the build pauses
    │       └── QuotaExhausted        the provider's quota or billing is used up: the build pauses too
    ├── StageError                    a stage could not produce its outputs (the item fails with it kept)
    └── InfrastructureError           Redis or the store failed (down, locked, full, read-only): never an
                                      item failure; the step is given back and retried

Gates never raise for a bad candidate: they return a verdict (DESIGN principle 5). They raise
CheckerFault when their own model gave no usable reply: that is no evidence about the candidate.
"""

from __future__ import annotations


class PlaylistEvalError(Exception):
    """Root of every deliberate playlisteval error."""


class ConfigError(PlaylistEvalError):
    pass


class ProjectNotFound(ConfigError):
    pass


class StoreError(PlaylistEvalError):
    pass


class MediaError(PlaylistEvalError):
    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class StateError(PlaylistEvalError):
    pass


class ModelError(PlaylistEvalError):
    pass


class TransientModelError(ModelError):
    """Worth retrying later; ``retry_after`` is the server's hint in seconds, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentModelError(ModelError):
    pass


class ProviderNotAvailable(ModelError):
    pass


class ProviderDown(ProviderNotAvailable):
    """A provider refused the connection, or the key, the same way ``[runner] stop_after_same_failures``
    times in a row (models/failstreak.py): every later call would fail alike, so the run stops early
    with one message instead of trying each item ``max_attempts`` times in silence."""


class CheckerFault(ModelError):
    """A gate's model (verifier, answerer, ranker) replied with nothing usable, even after the runner's
    repair retries. The candidate is neither passed nor rejected and the generator gets no feedback: the
    step records the fault and is tried again later; after a few faults in a row the item fails (and
    `retry-failed` resumes it). ``unusable_call_ids`` are the ledger rows of the unusable replies (their
    cached answers are dropped so that a retry asks again); ``call_ids`` every call the gate made."""

    def __init__(self, gate: str, role: str, reason: str, *, call_ids: list[int] | None = None,
                 unusable_call_ids: list[int] | None = None, reply: str = "") -> None:
        super().__init__(f"{gate}: {role} reply unusable: {reason}")
        self.gate, self.role, self.reason, self.reply = gate, role, reason, reply
        self.call_ids = list(call_ids or [])
        self.unusable_call_ids = list(unusable_call_ids or [])
        self.phase: int | None = None  # set by the stage that ran the gate
        self.attempt: int | None = None


class BudgetExceeded(ModelError):
    def __init__(self, spent: float, estimate: float, budget: float) -> None:
        super().__init__(
            f"budget reached: spent {spent:.4f} USD, next call ~{estimate:.4f} USD, budget {budget:.4f} USD"
        )
        self.spent, self.estimate, self.budget = spent, estimate, budget


class QuotaExhausted(BudgetExceeded):
    """The provider says the account's quota or credit is used up: retrying cannot help, pausing can."""

    def __init__(self, message: str) -> None:
        ModelError.__init__(self, message)
        self.spent, self.estimate, self.budget = 0.0, 0.0, 0.0


class StageError(PlaylistEvalError):
    pass


class Cancelled(PlaylistEvalError):
    """The work was cancelled by `playlisteval cancel` (actors/cancel.py): what was committed is kept, the
    message says what resumes it; the command exits with ``exitcodes.CANCELLED``."""


class InfrastructureError(PlaylistEvalError):
    """Redis or the store failed under a step: the work is given back and tried again, never failed."""


def as_infrastructure(exc: BaseException) -> InfrastructureError | None:
    """``exc`` as an InfrastructureError when Redis or the store caused it (a lost connection, a locked,
    full or read-only store), else None: such an error says nothing about the item being worked on."""
    if isinstance(exc, InfrastructureError):
        return exc
    from redis.exceptions import RedisError
    from sqlalchemy.exc import DBAPIError, OperationalError

    if isinstance(exc, RedisError):
        return InfrastructureError(f"Redis: {type(exc).__name__}: {exc}")
    if isinstance(exc, DBAPIError):
        # PostgreSQL's SQLSTATE: connection (08), read-only (25006), the session ended for its silence inside a
        # transaction (25P03: [store] idle_in_transaction_s), serialization / deadlock (40), out of resources
        # (53), shut down (57)
        state = str(getattr(exc.orig, "sqlstate", "") or "")
        if (isinstance(exc, OperationalError) or exc.connection_invalidated or state in ("25006", "25P03")
                or state[:2] in ("08", "40", "53", "57")):
            return InfrastructureError(f"store: {str(exc.orig or exc).splitlines()[0]}")
    return None


def outage_of(exc: BaseException) -> str | None:
    """What ``exc`` says is down, for logs/outage.py: ``"broker"`` (Redis: the queues and the shared rate
    limits), ``"store"``, or None when it is no infrastructure error (a bug, a bad item: logged as such).
    The cause chain is searched, so a wrapped error (an InfrastructureError raised from the driver's)
    names the part that failed."""
    from dramatiq.errors import BrokerConnectionError
    from redis.exceptions import RedisError

    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes is short; a cycle must not hang
        if seen is None:
            break
        if isinstance(seen, (RedisError, BrokerConnectionError)):
            return "broker"
        if not isinstance(seen, InfrastructureError) and as_infrastructure(seen) is not None:
            return "store"
        seen = seen.__cause__
    if isinstance(exc, InfrastructureError):  # raised with no cause: its text says which ("Redis: …")
        return "broker" if "redis" in str(exc).lower() else "store"
    return None
