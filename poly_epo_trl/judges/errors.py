"""What can go wrong when asking a judge, sorted by what to do about it."""

from __future__ import annotations


class JudgeError(Exception):
    """A group could not be judged (after retries, or for a reason retrying cannot fix)."""


class RetryableError(JudgeError):
    """Worth another try: a timeout, a 5xx, a dropped connection. ``retry_after``: the server's wait, if it said."""

    kind = "server_errors"

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(RetryableError):
    kind = "rate_limited"


class JudgeTimeout(RetryableError):
    kind = "timeouts"


class InvalidAnswer(RetryableError):
    """The judge replied, but not with one integer id per completion."""

    kind = "invalid_answers"


class FatalJudgeError(JudgeError):
    """Retrying will not help: bad credentials, a malformed request, a model that does not exist."""


class CircuitOpen(JudgeError):
    """The judge failed repeatedly and is being left alone for a while."""
