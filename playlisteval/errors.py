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
    │   └── BudgetExceeded            the next paid call would pass the build budget: the build pauses
    │       └── QuotaExhausted        the provider's quota or billing is used up: the build pauses too
    └── StageError                    a stage could not produce its outputs (the item fails with it kept)

Gates never raise for a bad candidate: they return a verdict (DESIGN principle 5).
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
