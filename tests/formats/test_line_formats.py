"""The line formats that carry argv (seqexec ``.in``, PMC DAG, ``srun --multi-prog``, shell words):
every writer's output read back by its reader gives the same argv for arbitrary text, what a format
cannot carry is refused by the writer, and the readers are linear in the line's length."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf._shellwords import join_words, split_words
from sheaf.formats._multiprog import MAX_WORDS, parse_multiprog, write_multiprog
from sheaf.formats._pmcdag import PmcTask, parse_pmc_dag, write_pmc_dag
from sheaf.formats._seqexec_in import SeqexecTask, parse_seqexec_input, write_seqexec_input

# The characters every grammar here treats specially, then anything else (no lone surrogates: the
# files are UTF-8).
SPECIAL = list(" \t\r\n\x0b\x0c\x1c\x1f\x85\u2028\xa0'\"\\$`#%*?;&|<>(){}~=-!EOF\0")
TEXT = st.text(st.one_of(st.sampled_from(SPECIAL), st.characters(blacklist_categories=("Cs",))), max_size=14)
LINE_SAFE = st.text(st.one_of(st.sampled_from([c for c in SPECIAL if c not in "\n\r\0"]),
                              st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\0")),
                    max_size=14)
FAST = settings(max_examples=200, deadline=None)


def _outcome(split: Callable[[str], list[str]], text: str) -> list[str] | str:
    try:
        return split(text)
    except ValueError as exc:
        return f"error: {exc}"


@FAST
@given(st.text(st.sampled_from(list(" \t\r\n'\"\\ab$#é\x0b")), max_size=20))
def test_split_words_is_shlex_split(text: str) -> None:
    assert _outcome(split_words, text) == _outcome(lambda t: shlex.split(t, comments=False, posix=True), text)


@FAST
@given(st.lists(TEXT, max_size=6))
def test_shell_words_round_trip(argv: list[str]) -> None:
    assert split_words(join_words(argv)) == argv


@FAST
@given(st.lists(st.lists(TEXT, min_size=1, max_size=5), min_size=1, max_size=4))
def test_seqexec_round_trip_or_refusal(argvs: list[list[str]]) -> None:
    tasks = [SeqexecTask(tuple(argv), n, "ns::tr:1.0", f"ID{n}") for n, argv in enumerate(argvs, start=1)]
    if any(c in arg for argv in argvs for arg in argv for c in "\n\r\0"):
        with pytest.raises(ValueError):
            write_seqexec_input(tasks)
        return
    back = parse_seqexec_input(write_seqexec_input(tasks))
    assert [(t.argv, t.number, t.transformation, t.job_id) for t in back] == [
        (t.argv, t.number, t.transformation, t.job_id) for t in tasks]


@FAST
@given(st.lists(st.lists(TEXT, min_size=1, max_size=5), min_size=1, max_size=4))
def test_pmc_round_trip_or_refusal(argvs: list[list[str]]) -> None:
    tasks = [PmcTask(f"t{n}", tuple(argv), pegasus_id=f"t{n}", transformation="tr", dax_id=f"t{n}")
             for n, argv in enumerate(argvs)]
    unwritable = any(c in arg for argv in argvs for arg in argv for c in "\n\r\0")
    if unwritable or any(argv[0].startswith("-") for argv in argvs):
        with pytest.raises(ValueError):
            write_pmc_dag(tasks, [])
        return
    dag = parse_pmc_dag(write_pmc_dag(tasks, [("t0", f"t{len(tasks) - 1}")] if len(tasks) > 1 else []))
    assert [t.argv for t in dag.tasks.values()] == [t.argv for t in tasks]


@FAST
@given(st.lists(st.lists(TEXT, min_size=1, max_size=5), min_size=1, max_size=4))
def test_multiprog_round_trip_or_refusal(argvs: list[list[str]]) -> None:
    if any(c in arg for argv in argvs for arg in argv for c in "\n\0"):
        with pytest.raises(ValueError):
            write_multiprog(argvs)
        return
    conf = write_multiprog(argvs)
    assert [parse_multiprog(conf, rank) for rank in range(len(argvs))] == argvs
    assert not any(line.endswith("\\") for line in conf.split("\n"))  # no line continues


@FAST
@given(LINE_SAFE)
def test_multiprog_keeps_percent_and_quotes_literal(word: str) -> None:
    assert parse_multiprog(write_multiprog([["./x", word, "%t", "'"]]), 0) == ["./x", word, "%t", "'"]


def test_multiprog_refuses_more_words_than_srun_keeps() -> None:
    write_multiprog([["x"] * MAX_WORDS])
    with pytest.raises(ValueError, match="127"):
        write_multiprog([["x"] * (MAX_WORDS + 1)])


# -- linear time ------------------------------------------------------------------------------------

MB = 1_000_000
# shlex.split built a token one character at a time: ~6 s on one 1 MB word, ~20 s on some lines.
SHAPES = {"one word": "a" * MB, "quoted": "'" + "a b" * (MB // 3) + "'", "escapes": "\\x" * (MB // 2),
          "double quoted": '"' + 'a\\"' * (MB // 3) + '"', "words": "ab " * (MB // 3)}


def _baseline(text: str) -> float:
    """A linear pass over the text in Python (one generator step per character)."""
    start = time.perf_counter()
    sum(1 for c in text if c == " ")
    return time.perf_counter() - start


def _timed(parse: Callable[[], object]) -> float:
    start = time.perf_counter()
    parse()
    return time.perf_counter() - start


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("reader", ["words", "seqexec", "pmc"])
def test_a_1mb_line_is_read_in_linear_time(reader: str, shape: str) -> None:
    line = SHAPES[shape]
    parse: Callable[[], object] = {
        "words": lambda: split_words(line),
        "seqexec": lambda: parse_seqexec_input(f"#@ 1 tr id\n/bin/echo {line}\n"),
        "pmc": lambda: parse_pmc_dag(f"TASK a /bin/echo {line}\n"),
    }[reader]
    took = _timed(parse)
    # generous: the worst shape takes ~20 baselines here (~0.25 s), the quadratic reader took 6-20 s
    assert took < 100 * _baseline(line) + 1.0, f"{reader} {shape}: {took:.2f} s"


def _logical_lines_reference(text: str) -> list[tuple[int, str]]:
    """HTCondor's line reading stated plainly, every line through the continuation logic (the rule
    ``logical_lines`` had before its fast path for a line of its own)."""
    out: list[tuple[int, str]] = []
    open_line: tuple[int, list[str]] | None = None  # (first line number, pieces) of a continued line
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#") or (open_line is None and not line):
            continue  # a comment, even inside a continuation; a blank line between lines
        first, pieces = open_line if open_line is not None else (number, [])
        continued = line.endswith("\\")
        pieces.append(line[:-1].rstrip() if continued else line)
        open_line = (first, pieces) if continued else None
        if not continued and " ".join(filter(None, pieces)):
            out.append((first, " ".join(filter(None, pieces))))
    if open_line is not None and " ".join(filter(None, open_line[1])):
        out.append((open_line[0], " ".join(filter(None, open_line[1]))))
    return out


_LINE_PIECES = st.sampled_from(["a", " ", "\t", "#", "\\", "\n", "\r\n", "\\\n", " \\ \n", "x y", "\u3000",
                                "\x0b"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE_PIECES, max_size=24).map("".join))
def test_logical_lines_read_as_before(text: str) -> None:
    from sheaf._text import logical_lines

    assert logical_lines(text) == _logical_lines_reference(text)
