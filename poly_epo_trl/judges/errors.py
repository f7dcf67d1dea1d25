"""What can go wrong when asking a judge, sorted by what to do about it.

Two families, because they call for opposite responses:

- ``ServiceError``: the service did not answer (cannot connect, reset, 5xx, 429, no reply in time). Retried with
  backoff within the group's time budget, and counted by the circuit breaker.
- ``GroupError``: the service answered, but not usefully for this group (an invalid answer, a 4xx). The server is
  alive, so the breaker counts a success; the group is re-asked at most once, then falls back on its own.
"""

from __future__ import annotations


class JudgeError(Exception):
    """A group could not be judged."""


class ServiceError(JudgeError):
    """The service did not answer. ``retry_after``: the server's requested wait, if it gave one; ``overload``: the
    failure says the server has too much to do (timeouts, 429, 503), so the client should send less at once."""

    kind = "server_errors"
    overload = False

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConnectFailed(ServiceError):
    kind = "connect_errors"


class ServerError(ServiceError):
    """A 5xx, a reset connection, a body that is not the API's."""

    kind = "server_errors"

    def __init__(self, message: str, retry_after: float | None = None, overload: bool = False) -> None:
        super().__init__(message, retry_after)
        self.overload = overload


class RateLimited(ServiceError):
    kind = "rate_limited"
    overload = True


class JudgeTimeout(ServiceError):
    kind = "timeouts"
    overload = True


class GroupError(JudgeError):
    """The service answered, but this group has no usable verdict from it."""

    kind = "group_errors"


class InvalidAnswer(GroupError):
    """The judge replied, but not with one integer id per completion."""

    kind = "invalid_answers"


class RequestRejected(GroupError):
    """A 4xx other than 408/429: this request is wrong for this server (too long, bad field, unknown model)."""

    kind = "rejected"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class FatalJudgeError(JudgeError):
    """Nothing can be sent: a missing API key, an unusable configuration."""


class CircuitOpen(JudgeError):
    """The service kept failing and no probe got through before the group's retry budget ran out."""


class JudgeOutage(JudgeError):
    """The judge's service has not answered for longer than the trainer waits (``judge_max_outage_seconds``)."""


class JudgeFailing(JudgeError):
    """Too many groups fell back for too long (``judge_max_fallback_frac``): training would run on fallbacks."""
