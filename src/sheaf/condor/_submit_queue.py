"""Queue statements of the submit language: ``queue [N] [vars in|from|matching ...]``.

``in`` takes a comma/space separated list (inline, or ``in (`` ... ``)`` over several lines),
``from`` a file or an inline ``(`` ... ``)`` list of lines whose fields fill the variables,
``matching [files|dirs]`` glob patterns; everything after the queue statement is ignored, as
condor_submit does.  A second queue statement would make DAGMan's node a second cluster and is
refused.  Reading a statement (:func:`parse_queue`) touches no file: the rows of ``from FILE`` (which
a PRE script may write) and the names ``matching`` finds are read when the node is expanded
(:func:`queue_items`).  A statement that uses macros (``queue code from $(filename)``, ``queue $(N)``)
is read once they are expanded, as condor_submit expands the whole statement before it parses it: the
node's expansion hands the expanded lines to :func:`parse_queue` again.
"""

from __future__ import annotations

__all__ = ["QUEUE_RE", "parse_queue", "queue_items"]

import glob
import os
import re
from collections.abc import Sequence

from sheaf._text import logical_lines, read_text
from sheaf.condor._submit_records import Queue, submit_error

QUEUE_RE = re.compile(r"queue(?:\s+|$)", re.IGNORECASE)
_MODE_RE = re.compile(r"(in|from|matching)\b", re.IGNORECASE)
_BLANKS_RE = re.compile(r"\s+")


def parse_queue(lines: Sequence[tuple[int, str]], index: int, path: str) -> tuple[Queue, int]:
    number, line = lines[index]
    rest = line[5:].strip()
    for later_number, later in lines[index + 1:]:
        if QUEUE_RE.match(later) and not rest.rstrip().endswith("("):
            raise submit_error(path, later_number, "a second queue statement",
                               "one queue statement per node's submit description (one cluster per node)",
                               later)
    if not rest:
        return Queue(line=number), index
    if "$(" in rest:  # read once the node's macros are known
        return Queue(line=number, raw=tuple(lines[index:])), index
    match = re.fullmatch(r"[0-9]+", rest)
    if match is not None:
        return Queue(_count(path, number, rest), line=number), index
    found = _split_arguments(rest)
    if found is None:
        raise submit_error(path, number, "not a queue statement", "queue [N] [vars in|from|matching items]",
                           line)
    first, middle, mode, tail = found
    if first and first.isdigit():
        count_text, names_text = first, middle
    else:
        count_text, names_text = None, " ".join(p for p in (first, middle) if p)
    count = _count(path, number, count_text) if count_text else 1
    names = tuple(n for n in re.split(r"[\s,]+", names_text or "") if n) or ("Item",)
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise submit_error(path, number, "not a queue variable name",
                               "queue [N] var[,var...] in|from ...", name)
    kind, part, tail = _qualifiers(path, number, mode, tail)
    items, from_file = _queue_items(lines, index, path, mode, tail)
    if kind:
        items = (kind, *items)
    if mode == "matching" and names != ("Item",) and len(names) != 1:
        raise submit_error(path, number, "queue matching takes one variable",
                           "queue [N] [var] matching patterns", line)
    return Queue(count, names, mode, items, from_file, number, part=part), index  # type: ignore[arg-type]


_SLICE = re.compile(r"\[(-?\d+)?(?::(-?\d+)?(?::(-?\d+)?)?)?\]")


def _qualifiers(path: str, number: int, mode: str, tail: str
                ) -> tuple[str, tuple[int | None, int | None, int | None] | None, str]:
    """The words between the mode and the items, as condor_submit reads them: ``files``, ``dirs`` or
    ``any`` after ``matching`` only, and a slice ``[start:end:step]`` after any mode; (the kind of name
    ``matching`` takes, the slice, the rest).  ``table`` (after ``from``) is refused by name."""
    kind, part = "", None
    while tail and not tail.startswith("("):
        if tail.startswith("["):
            match = _SLICE.match(tail)
            if match is None:
                raise submit_error(path, number, "bad queue slice", "[start:end:step] of integers",
                                   tail.split("]", 1)[0] + "]")
            start, end, step = (int(g) if g is not None else None for g in match.groups())
            part = (start, end, step)
            tail = tail[match.end():].lstrip()
            continue
        word_match = re.match(r"([^\s(]+)\s*", tail)
        assert word_match is not None  # tail is stripped and starts with neither "(" nor "["
        word, rest = word_match.group(1), tail[word_match.end():]
        low = word.lower()
        if low in ("files", "dirs", "any", "table"):
            if (low == "table") != (mode == "from") or (low != "table" and mode != "matching"):
                raise submit_error(path, number, "queue keyword conflict",
                                   "files, dirs and any follow matching; table follows from", word)
            if low == "table":
                raise submit_error(path, number, "queue ... from table is not supported",
                                   "queue vars from file (one item per line)", word)
            kind = "" if low == "any" else low
            tail = rest.lstrip()
            continue
        break
    return kind, part, tail


def _split_arguments(rest: str) -> tuple[str | None, str | None, str, str] | None:
    """``rest`` (stripped, not empty) as ``(first word, words before the mode, mode, tail)``: the
    mode is the first ``in``/``from``/``matching`` after a blank past the first word, else one right
    after the first word, else the last one glued to its end (``Xin``), else one that opens ``rest``.
    Each candidate is tried once at a known place, so the work is linear in ``rest``."""
    gaps = [(found.start(), found.end()) for found in _BLANKS_RE.finditer(rest)]
    first_end, after_first = gaps[0] if gaps else (len(rest), len(rest))
    for start, end in gaps[1:]:
        mode = _MODE_RE.match(rest, end)
        if mode is not None:
            return rest[:first_end], rest[after_first:start], mode.group(1).lower(), rest[mode.end():].strip()
    places = [after_first, *range(first_end - 1, 0, -1)]
    for place in places:
        mode = _MODE_RE.match(rest, place)
        if mode is not None:
            return rest[:min(place, first_end)], None, mode.group(1).lower(), rest[mode.end():].strip()
    mode = _MODE_RE.match(rest)
    if mode is None:
        return None
    return None, None, mode.group(1).lower(), rest[mode.end():].strip()


def _count(path: str, number: int, text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,7}", text):
        raise submit_error(path, number, "queue count is not a small integer", "queue N: 0 <= N < 10**7",
                           text)
    return int(text)


def _queue_items(lines: Sequence[tuple[int, str]], index: int, path: str, mode: str,
                 tail: str) -> tuple[tuple[str, ...], str | None]:
    number = lines[index][0]
    if tail.startswith("("):
        body = tail[1:]
        if ")" in body:
            inline = [body[:body.rindex(")")]]
        else:  # a list over the following lines, up to a line that is ")"
            inline = [body] if body.strip() else []
            for _n, later in lines[index + 1:]:
                if later.strip() == ")":
                    break
                inline.append(later)
            else:
                raise submit_error(path, number, "unterminated queue item list", "queue ... ( items ... )",
                                   tail)
        if mode == "from":
            return tuple(item.strip() for item in inline if item.strip()), None
        return tuple(w for part in inline for w in re.split(r"[\s,]+", part) if w), None
    if mode == "from":
        if not tail:
            raise submit_error(path, number, "queue from needs a file or a list", "queue vars from file",
                               tail)
        return (), tail
    if mode == "matching":
        return tuple(tail.split()), None
    return tuple(w for w in re.split(r"[\s,]+", tail) if w), None


def queue_items(queue: Queue, directory: str) -> list[dict[str, str]]:
    """The item rows of a queue statement, each a dict of its variables (``[{}]`` without items).
    ``from FILE`` is read now (it may be written by a PRE script) relative to ``directory``."""
    if queue.mode == "":
        return [{}]
    if queue.mode == "matching":
        return [{queue.names[0]: name} for name in _matching(queue.items, directory)]
    rows = queue.items
    if queue.from_file is not None:
        path = queue.from_file if os.path.isabs(queue.from_file) else os.path.join(directory, queue.from_file)
        rows = tuple(line for _n, line in logical_lines(read_text(path, "queue item file")))
    if queue.mode == "in":
        return [{queue.names[0]: item} for item in rows]
    out = []
    for row in rows:  # the last variable takes the rest of the line (maxsplit 0 would split it all)
        parts = re.split(r"[\s,]+", row.strip(), maxsplit=len(queue.names) - 1) if len(queue.names) > 1 \
            else [row.strip()]
        fields = [f for f in parts if f != ""]
        out.append({name: fields[i] if i < len(fields) else "" for i, name in enumerate(queue.names)})
    return out


def _matching(words: Sequence[str], directory: str) -> list[str]:
    kind = words[0] if words and words[0] in ("files", "dirs") else ""
    found: list[str] = []
    for pattern in words[1:] if kind else words:
        for name in sorted(glob.glob(pattern, root_dir=directory)):
            full = os.path.join(directory, name)
            if (kind == "files" and not os.path.isfile(full)) or (kind == "dirs" and not os.path.isdir(full)):
                continue
            if name not in found:
                found.append(name)
    return found
