"""``sheaf ads [-l] [--constraint EXPR]``: list what the collector holds (``condor_status`` for it).

Without ``-l`` one line per ad: Name, MyType, CurMatches/MaxMatches when present; with ``-l`` every
attribute in the old syntax ``condor_status -l`` prints, ads separated by a blank line.
"""

from __future__ import annotations

import click

from sheaf.classad import ClassAd
from sheaf.cli._advertise import collector_options, open_collector

__all__ = ["command"]


@click.command("ads")
@click.option("-l", "--long", "long_form", is_flag=True, help="Print whole ads (old ClassAd syntax).")
@click.option("--constraint", metavar="EXPR", help="Only ads for which EXPR is true.")
@collector_options
def command(long_form: bool, constraint: str | None, conf: str | None, defines: tuple[str, ...]) -> None:
    """List the ads the collector holds."""
    with open_collector(conf, defines) as collector:
        ads = collector.ads(constraint)
    for ad in ads:
        click.echo(ad.unparse_old() if long_form else _line(ad), nl=not long_form)
        if long_form:
            click.echo()


def _line(ad: ClassAd) -> str:
    def text(name: str) -> str:
        return str(ad.eval(name)) if name in ad else "-"

    return f"{text('Name'):<32} {text('MyType'):<10} {text('CurMatches')}/{text('MaxMatches')}"
