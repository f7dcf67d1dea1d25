"""What every judge that calls a service needs of HTTP: URLs checked and printed without credentials, secrets kept
out of messages, the server's retry-after read."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_VERSION_SEGMENT = re.compile(r"^v\d+[a-z0-9]*$")


def redact(text: str, secrets: list[str | None]) -> str:
    """``text`` with every secret replaced, for messages that may reach logs."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def redact_url(url: str) -> str:
    """``url`` without credentials: a user:password@ becomes ***@ and query values become ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{item.split('=', 1)[0]}=***" for item in parts.query.split("&") if item)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def refuse_credentials(url: str, where: str) -> None:
    """ValueError when ``url`` carries a user:password@ or a query string: URLs are printed, logged and saved with
    every checkpoint, so keys come from the environment only."""
    parts = urlsplit(url)
    if "@" in parts.netloc or parts.query:
        raise ValueError(
            f"{where} {redact_url(url)!r} carries credentials (user:password@ or ?key=): URLs are printed, logged and "
            "saved with every checkpoint. Remove them and export the key instead: judge_api_key_env names the "
            "variable (default OPENAI_API_KEY)."
        )


def check_url(url: str, where: str) -> None:
    """ValueError when ``url`` is not an http(s) URL, or carries credentials (``refuse_credentials``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{where} {redact_url(url)!r} is not an http(s) URL like http://127.0.0.1:8000/v1.")
    refuse_credentials(url, where)


def split_base_url(spec: str) -> tuple[str, str]:
    """``<base_url>/<model>`` split after the last version segment of the path (``v1``, ``v1beta``; a following
    ``openai`` segment stays with the base URL), so base URLs with a path prefix and model ids with ``/`` both
    work: ``http://host/api/v1/Qwen/Qwen3-4B`` -> (``http://host/api/v1``, ``Qwen/Qwen3-4B``)."""
    parts = urlsplit(spec)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{redact_url(spec)!r} is not an http(s) URL: use 'openai:http://host:port/v1/<model>'.")
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    versions = [i for i, segment in enumerate(segments[:-1]) if _VERSION_SEGMENT.match(segment)]
    if not versions:
        raise ValueError(
            f"cannot tell where the base URL ends and the model begins in {redact_url(spec)!r} (no /v1-like "
            "segment): set judge_base_url and judge_model separately, with judge: openai."
        )
    cut = versions[-1] + 1
    if segments[cut] == "openai" and cut + 1 < len(segments):
        cut += 1
    base = urlunsplit((parts.scheme, parts.netloc, "/" + "/".join(segments[:cut]), "", ""))
    return base, "/".join(segments[cut:])
