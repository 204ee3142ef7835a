"""``sheaf advertise [COMMAND] FILE``: publish ads to the collector, as ``condor_advertise`` does.

``COMMAND`` is ``UPDATE_STARTD_AD`` (the default; the USCMS report's) or ``INVALIDATE_STARTD_ADS``
(forget the ads named in FILE).  An update whose ``UpdateSequenceNumber`` is not higher than the
stored one is ignored and said so on stderr; that is not an error (exit 0), as for condor_advertise.
The collector is ``sheaf.collector.file`` (``-D``/``--conf``/``./pegasus.properties``), else the
state directory's (``sheaf.backends._collector``).  Bad ad text exits 2 naming the file and line.
"""

from __future__ import annotations

from pathlib import Path

import click

from sheaf.backends.grid import Collector, collector_path, read_ads
from sheaf.errors import UsageError
from sheaf.formats import read_properties

__all__ = ["collector_options", "command", "open_collector"]

_COMMANDS = ("UPDATE_STARTD_AD", "INVALIDATE_STARTD_ADS")


def collector_options(fn: click.decorators.FC) -> click.decorators.FC:
    """The ``--conf``/``-D`` options that name the collector's file."""
    fn = click.option("-D", "defines", multiple=True, metavar="KEY=VALUE",
                      help="Set a property, e.g. sheaf.collector.file=PATH.")(fn)
    return click.option("-c", "--conf", type=click.Path(dir_okay=False, exists=True),
                        help="Properties file (over ./pegasus.properties).")(fn)


def open_collector(conf: str | None, defines: tuple[str, ...]) -> Collector:
    properties: dict[str, str] = {}
    for layer in (Path("pegasus.properties"), conf):
        if layer is not None and Path(layer).is_file():
            properties.update(read_properties(layer))
    for define in defines:
        key, sep, value = define.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-D expects key=value, got {define!r}")
        properties[key.strip()] = value.strip()
    return Collector(collector_path(properties))


@click.command("advertise")
@click.argument("words", nargs=-1, required=True, metavar="[COMMAND] FILE")
@collector_options
def command(words: tuple[str, ...], conf: str | None, defines: tuple[str, ...]) -> None:
    """Publish the ads in FILE (condor_advertise's format) to the collector."""
    if len(words) > 2 or (len(words) == 2 and words[0] not in _COMMANDS):
        raise UsageError(f"usage: sheaf advertise [{'|'.join(_COMMANDS)}] FILE (got {' '.join(words)!r})")
    verb, path = (words[0], words[1]) if len(words) == 2 else (_COMMANDS[0], words[0])
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the ad file ({exc.strerror})") from None
    ads = read_ads(text, path)
    with open_collector(conf, defines) as collector:
        if verb == "INVALIDATE_STARTD_ADS":
            for ad in ads:
                name = ad.eval("Name") if "Name" in ad else None
                if isinstance(name, str) and collector.invalidate(name):
                    click.echo(f"invalidated {name}")
            return
        for update in collector.advertise(ads):
            if update.accepted:
                click.echo(f"updated {update.name}")
            else:
                click.echo(f"sheaf: ignored {update.name}: {update.reason}", err=True)
