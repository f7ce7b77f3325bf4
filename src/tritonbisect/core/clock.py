"""The time as every record of ours writes it: UTC, ISO 8601."""

from __future__ import annotations

from datetime import datetime, timezone


def now_iso(timespec: str = "seconds") -> str:
    """Now in UTC, e.g. 2026-11-26T14:25:34+00:00 (`timespec` as `datetime.isoformat`'s:
    journal records use "milliseconds", so that steps finishing in one second keep their order)."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec)
