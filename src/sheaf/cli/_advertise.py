"""``sheaf advertise [COMMAND] FILE``: publish ads to the collector, as ``condor_advertise`` does.

``sheaf advertise --site-config sites-config.yml [--sc sites.yml] [--group-size N]`` builds the site
ads (``sheaf.backends.grid``) and publishes them; with ``--write DIR`` it writes them as
``DIR/<site>.ad`` files for ``condor_advertise UPDATE_STARTD_AD`` instead (a real pool's collector).

``COMMAND`` is ``UPDATE_STARTD_AD`` (the default; the USCMS report's) or ``INVALIDATE_STARTD_ADS``
(forget the ads named in FILE).  An update whose ``UpdateSequenceNumber`` is not higher than the
stored one is ignored and said so on stderr; that is not an error (exit 0), as for condor_advertise.
The collector is ``sheaf.collector.file`` (``-D``/``--conf``/``./pegasus.properties``), else the
state directory's (``sheaf.backends.grid``).  Bad ad text exits 2 naming the file and line.
"""

from __future__ import annotations

from pathlib import Path

import click

from sheaf.backends.grid import Collector, collector_path, read_ads, read_site_config, site_ads
from sheaf.classad import ClassAd
from sheaf.errors import UsageError
from sheaf.formats import read_properties, read_site_catalog

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


def _site_ads(site_config: str, sc: str | None, group_size: int | None) -> list[ClassAd]:
    config = read_site_config(site_config)
    catalog = read_site_catalog(sc) if sc is not None else None
    return site_ads(config, group_size, catalog=catalog)


def _file_ads(words: tuple[str, ...]) -> tuple[str, list[ClassAd]]:
    if not words or len(words) > 2 or (len(words) == 2 and words[0] not in _COMMANDS):
        raise UsageError(f"usage: sheaf advertise [{'|'.join(_COMMANDS)}] FILE (got {' '.join(words)!r})")
    verb, path = (words[0], words[1]) if len(words) == 2 else (_COMMANDS[0], words[0])
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the ad file ({exc.strerror})") from None
    return verb, read_ads(text, path)


def _write(ads: list[ClassAd], directory: str) -> None:
    Path(directory).mkdir(parents=True, exist_ok=True)
    for ad in ads:
        path = Path(directory) / f"{ad.eval('MOP_SITE')}.ad"
        path.write_text(ad.unparse_old(), encoding="utf-8")
        click.echo(str(path))


@click.command("advertise")
@click.argument("words", nargs=-1, metavar="[COMMAND] FILE")
@click.option("--site-config", type=click.Path(dir_okay=False, exists=True),
              help="Build the site ads from this site configuration (YAML) instead of reading FILE.")
@click.option("--sc", type=click.Path(dir_okay=False, exists=True), help="Site catalog (gatekeepers).")
@click.option("--group-size", type=click.IntRange(min=1), help="Jobs per group DAG (MaxMatches divisor).")
@click.option("--write", "write_dir", type=click.Path(file_okay=False),
              help="Write the site ads as condor_advertise files into this directory; publish nothing.")
@collector_options
def command(words: tuple[str, ...], site_config: str | None, sc: str | None, group_size: int | None,
            write_dir: str | None, conf: str | None, defines: tuple[str, ...]) -> None:
    """Publish the ads in FILE (condor_advertise's format), or the site ads, to the collector."""
    if site_config is not None:
        if words:
            raise UsageError("sheaf advertise takes FILE or --site-config, not both")
        verb, ads = _COMMANDS[0], _site_ads(site_config, sc, group_size)
        if write_dir is not None:
            _write(ads, write_dir)
            return
    else:
        verb, ads = _file_ads(words)
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
