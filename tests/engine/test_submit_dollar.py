"""``$(DOLLAR)`` is HTCondor's way to write a literal ``$``: codegen uses it for arguments holding ``$(``."""

from __future__ import annotations

from pathlib import Path

from sheaf.classad import ClassAd
from sheaf.codegen import quote_arguments
from sheaf.engine import Launch
from sheaf.engine._dollar import expand_launch
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


def test_dollar_dollar_in_new_syntax_arguments_reads_doubled_quotes_as_quotes(tmp_path: Path) -> None:
    # the schedd expands the Arguments attribute, where the submit file's "" is ": the expression
    # ifThenElse(.., ""Never"", ..) holds the string "Never"; a value with a quote splits back intact
    sub = tmp_path / "job.sub"
    sub.write_text('executable = /bin/echo\nnotification = never\narguments = "N = '
                   '$$([ifThenElse(JobNotification==0,""Never"",""Other"")]) $$([""a\\""b""])"\nqueue\n')
    job = render(parse_submit(str(sub)), "node", 0, 1, str(tmp_path), {})
    launch = Launch("n#0", "n", 0, job.argv, {}, str(tmp_path), job.stdout, job.stderr, job.ad)
    expanded, reason = expand_launch(launch, ClassAd())
    assert reason is None and expanded.argv[1:] == ("N", "=", "Never", 'a"b')
