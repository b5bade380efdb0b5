"""Times as the storage layer reads and writes them: ISO-8601 text, aware datetimes
(naive ones are UTC), and the naive UTC datetimes of TIMESTAMP columns (ADK)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from agentctl.errors import UsageError


def iso(value: Any) -> str:
    """A time as text: a datetime as ISO-8601 (as it is: a naive one stays naive),
    NULL as "", anything else as its text."""
    if isinstance(value, datetime):
        return value.isoformat()
    return "" if value is None else str(value)


def iso_utc(value: Any) -> str:
    """A stored time as ISO-8601 text with its offset: SQLite's `CURRENT_TIMESTAMP` text
    ("YYYY-MM-DD HH:MM:SS", UTC) gets its "T" and "+00:00"; a datetime (Postgres) is
    formatted (naive ones are UTC); NULL as ""; anything else as its text."""
    if isinstance(value, datetime):
        return iso(value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc))
    text = iso(value)
    if (
        len(text) >= 19
        and text[10] == " "
        and text[4] == "-"
        and "+" not in text[19:]
        and not text.endswith("Z")
    ):
        return text[:10] + "T" + text[11:] + "+00:00"
    return text


def to_datetime(value: Any, what: str = "created_at") -> datetime:
    """An aware datetime from an ISO-8601 string ("Z" = UTC) or a datetime (naive = UTC);
    UsageError naming `what` for anything else."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise UsageError(f"{what} {value!r} is not an ISO-8601 timestamp") from None
    else:
        raise UsageError(f"{what} {value!r} is not a timestamp")
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)


def naive_utc(value: Any, what: str = "timestamp") -> datetime:
    """A stored time (text, a datetime; naive = UTC) as a naive UTC datetime, the value
    of a TIMESTAMP WITHOUT TIME ZONE column."""
    return to_datetime(value, what).astimezone(timezone.utc).replace(tzinfo=None)
