"""``sheaf classad``: evaluate ClassAd expressions and try ads against each other.

    sheaf classad eval EXPR [--my AD] [--target AD]     prints the value in ClassAd syntax
    sheaf classad match JOB_AD RESOURCE_AD...           says which resources match, and their rank

An AD is an inline new-syntax ad (text starting with ``[``) or a file; a file whose text starts with
``[`` is new syntax, any other file is old syntax (one ``Name = expr`` per line, as condor_status -l
and the USCMS site ad write it).  Evaluation uses HTCondor's compat semantics, as its daemons do.

A syntax error is bad input: one message naming the file (or the argument), the line and column, the
text with a caret under the spot, exit code 2, no traceback.  ``match`` exits 0 whether or not
anything matched: the table is the answer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import click

from sheaf import classad
from sheaf.errors import FormatError

__all__ = ["command"]

_T = TypeVar("_T")


@click.group(name="classad")
def command() -> None:
    """Evaluate ClassAd expressions and match ads (HTCondor's language)."""


class _ExprCommand(click.Command):
    """Lets EXPR start with ``-`` (``-CurMatches/MaxMatches``): a leading-dash word that is not one of
    the command's options is moved behind ``--``, so click reads it as the argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        params = [param for param in self.get_params(ctx) if isinstance(param, click.Option)]
        options = {name for param in params for name in param.opts}
        valued = {name for param in params if not param.is_flag for name in param.opts}
        for index, word in enumerate(args):
            if word == "--":
                break
            is_value = index > 0 and args[index - 1] in valued
            if word.startswith("-") and not is_value and word.split("=", 1)[0] not in options:
                args = [*args[:index], *args[index + 1:], "--", word]
                break
        return super().parse_args(ctx, args)


@command.command(name="eval", cls=_ExprCommand)
@click.argument("expr")
@click.option("--my", "my_ad", metavar="AD", help="The ad MY refers to: a file or an inline [ ... ] ad.")
@click.option("--target", "target_ad", metavar="AD", help="The ad TARGET refers to (file or inline).")
def eval_command(expr: str, my_ad: str | None, target_ad: str | None) -> None:
    """Evaluate EXPR and print its value in ClassAd syntax."""
    tree = _parsed("EXPR", expr, classad.parse)
    my = _load_ad("--my", my_ad) if my_ad is not None else None
    target = _load_ad("--target", target_ad) if target_ad is not None else None
    click.echo(_value_text(classad.evaluate(tree, my=my, target=target)))


@dataclass(frozen=True, slots=True)
class _Row:
    resource: str
    matches: bool
    rank: float
    why: str


@command.command(name="match")
@click.argument("job_ad", metavar="JOB_AD")
@click.argument("resource_ads", metavar="RESOURCE_AD...", nargs=-1, required=True)
def match_command(job_ad: str, resource_ads: tuple[str, ...]) -> None:
    """Say, for each RESOURCE_AD, whether it matches JOB_AD and the job's rank of it."""
    job = _load_ad("JOB_AD", job_ad)
    rows = [_row(job, argument, _load_ad("RESOURCE_AD", argument)) for argument in resource_ads]
    if _on_terminal():
        _print_table(rows)
    else:
        for row in rows:
            click.echo(f"{row.resource}\t{'match' if row.matches else 'no match'}\t{row.rank:g}\t{row.why}")


def _on_terminal() -> bool:
    return sys.stdout.isatty()


def _row(job: classad.ClassAd, argument: str, resource: classad.ClassAd) -> _Row:
    name = resource.eval("Name")
    label = name if isinstance(name, str) else argument
    job_wants = classad.half_match(job, resource)
    resource_wants = classad.half_match(resource, job)
    why = {(True, True): "", (False, True): "job Requirements not met",
           (True, False): "resource Requirements not met"}.get((job_wants, resource_wants),
                                                              "neither side's Requirements met")
    return _Row(label, job_wants and resource_wants, classad.rank(job, resource), why)


def _print_table(rows: list[_Row]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("resource", "match", "rank", "why not")
    for row in rows:  # a label may be an inline ad, "[ ... ]": escape it, it is not markup
        matched = "[green]yes[/]" if row.matches else "[red]no[/]"
        table.add_row(escape(row.resource), matched, f"{row.rank:g}", row.why)
    Console().print(table)


def _load_ad(what: str, argument: str) -> classad.ClassAd:
    """An inline ``[ ... ]`` ad, or a file in new or old syntax."""
    if argument.lstrip().startswith("["):
        return _parsed(what, argument, classad.ClassAd.parse)
    path = Path(argument)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {argument}: {exc}", param_hint=what) from None
    parse = classad.ClassAd.parse if text.lstrip().startswith("[") else classad.ClassAd.parse_old
    return _parsed(argument, text, parse)


def _parsed(where: str, text: str, parse: Callable[[str], _T]) -> _T:
    try:
        return parse(text)
    except classad.ClassAdSyntaxError as exc:
        raise _format_error(where, exc) from None


def _format_error(where: str, exc: classad.ClassAdSyntaxError) -> FormatError:
    """The language's error as sheaf's bad-input error: where, line, column, and the caret."""
    line, at = classad.excerpt(exc.source, exc.pos)
    caret = f"  {line}\n  {' ' * at}^"
    return FormatError(exc.reason, rule="ClassAd syntax", path=where, line=exc.line, column=exc.column,
                       detail=caret)


def _value_text(value: object) -> str:
    """A value in ClassAd syntax (through an ad, which turns any Python value into an expression)."""
    holder = classad.ClassAd()
    holder["value"] = value
    return holder.lookup("value").unparse()
