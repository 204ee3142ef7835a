"""Durations as pegasus-statistics writes them: a module of its own, so that a command printing one
(``sheaf plan``'s automatic-clustering summary) does not load the statistics and status readers."""

from __future__ import annotations

__all__ = ["format_seconds"]


def format_seconds(duration: float | None) -> str:
    """pegasus-statistics' durations: the two largest components, "2 mins, 1 sec", "52.45 secs"."""
    if duration is None:
        return "-"
    sec = int(duration)
    parts: list[tuple[int, str]] = []
    for size, unit in ((31536000, "year"), (86400, "day"), (3600, "hr"), (60, "min")):
        count, sec = divmod(sec, size)
        if count or parts:
            parts.append((count, unit))
    if not parts:
        value = round(duration, 2)
        return f"{value} sec" if value == 1 else f"{value} secs"
    parts.append((sec, "sec"))
    return ", ".join(f"{n} {unit}" if n == 1 else f"{n} {unit}s" for n, unit in parts[:2])
