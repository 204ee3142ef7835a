"""The ``.in`` writer's unquoted fast path gives exactly ``shlex.join`` (or the same refusal)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheaf.formats._seqexec_in import SeqexecTask, _command_line

_PIECES = st.sampled_from(["a", "b/c", "-x", "=", "x y", "", "'", "\u00e9", "\x1f", "@%+", ",.:", "$", "\t",
                           "\n"])
_ARG = st.lists(_PIECES, max_size=3).map("".join) | st.text(max_size=6)


@given(st.lists(_ARG, min_size=1, max_size=5))
def test_command_line_is_shlex_join(argv: list[str]) -> None:
    task = SeqexecTask(tuple(argv), None, None, None, 0)
    if any(c in arg for arg in argv for c in "\n\r\0"):
        with pytest.raises(ValueError):
            _command_line(task)
    else:
        assert _command_line(task) == shlex.join(argv)


def test_plain_arguments_are_not_quoted() -> None:
    assert _command_line(SeqexecTask(("/bin/keg", "-o", "f.a=1", "x,y:z"), None, None, None, 0)) == \
        "/bin/keg -o f.a=1 x,y:z"
