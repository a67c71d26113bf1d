"""google-genai's errors as the runner's (issue 9): transient (retried, with the server's delay), permanent,
or a quota that retrying within minutes cannot help (the run pauses instead)."""

from __future__ import annotations

import importlib
from typing import Any

from google.genai import errors as genai_errors

from playlisteval.errors import ModelError, PermanentModelError, QuotaExhausted, TransientModelError
from playlisteval.models.providers.wire import parse_duration, parse_retry_after


def _http_module() -> Any:
    """The HTTP library the installed google-genai uses (httpx2 in 3.x, httpx before)."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("google-genai needs httpx2 or httpx")


http = _http_module()  # the module whose exceptions a call can raise


def map_error(exc: Exception, where: str) -> ModelError:
    """A google-genai / transport exception as the runner's transient / permanent / quota error."""
    if isinstance(exc, http.TimeoutException):
        return TransientModelError(f"{where}: timed out")
    if isinstance(exc, http.TransportError):
        return TransientModelError(f"{where}: connection error: {type(exc).__name__}")
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        text = f"{where}: HTTP {code} {exc.status or ''}: {str(exc.message or '')[:300]}"
        retry_after = _retry_delay(exc)
        if code == 429 and _quota_exhausted(exc):
            return QuotaExhausted(text)
        if code in (408, 429, 499) or code >= 500:
            return TransientModelError(text, retry_after=retry_after)
        return PermanentModelError(text)
    if isinstance(exc, ValueError):  # a body cut off mid-JSON
        return TransientModelError(f"{where}: unreadable response: {str(exc)[:200]}")
    return PermanentModelError(f"{where}: {type(exc).__name__}: {str(exc)[:300]}")


def _error_details(exc: genai_errors.APIError) -> list[dict[str, Any]]:
    body = exc.details if isinstance(exc.details, dict) else {}
    error = body.get("error", body)
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details or [] if isinstance(d, dict)]


def _retry_delay(exc: genai_errors.APIError) -> float | None:
    """RetryInfo.retryDelay from the error body, else the Retry-After header."""
    for detail in _error_details(exc):
        if str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = parse_duration(detail.get("retryDelay"))
            if delay is not None:
                return delay
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return parse_retry_after(dict(headers) if headers is not None else None)


def _quota_exhausted(exc: genai_errors.APIError) -> bool:
    """A daily quota or a billing limit: retrying within minutes cannot help (DESIGN: pause instead)."""
    for detail in _error_details(exc):
        for violation in detail.get("violations") or []:
            quota = f"{violation.get('quotaId', '')} {violation.get('quotaMetric', '')}"
            if "PerDay" in quota or "billing" in quota.lower():
                return True
    return "billing" in str(exc.message or "").lower()
