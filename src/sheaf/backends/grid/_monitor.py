"""The matchmaker monitor for a real pool: ``condor_q -l`` output in, site ad files out.

    condor_q -l | python -m sheaf.backends.grid._monitor SITE_AD_DIR

The report's script: it scans the job queue's long listing (old ClassAd syntax, one ad per job,
separated by blank lines), counts for each site the queued jobs whose ``MATCH_SiteEnvironment`` names
it (``SheafSite=<site>``; ``_sites.site_of_environment``), and rewrites each
``SITE_AD_DIR/*.ad`` file (as ``sheaf advertise --site-config --write`` wrote them) with that
``CurMatches`` and an ``UpdateSequenceNumber`` higher than the file's.  ``grid/matchmaker-monitor.sh``
of a grid plan runs it and then ``condor_advertise UPDATE_STARTD_AD`` for every file, every interval.
Each file is replaced atomically (written beside, then renamed).  Bad input exits 2 with one message.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sheaf.backends.grid._collector import read_ads
from sheaf.backends.grid._sites import sequence_number, site_of_environment
from sheaf.classad import recount_matches
from sheaf.errors import InputError

__all__ = ["main", "monitor_files"]


def monitor_files(queue_text: str, directory: Path) -> dict[str, int]:
    """Rewrite the site ad files of ``directory`` from the queue listing; CurMatches per file."""
    jobs = read_ads(queue_text, "<condor_q -l>") if queue_text.strip() else []
    counts: dict[str, int] = {}
    for path in sorted(directory.glob("*.ad")):
        ads = read_ads(path.read_text(encoding="utf-8"), str(path))
        fresh = recount_matches(ads, jobs, key=site_of_environment)
        for ad in fresh:
            old = ad.eval("UpdateSequenceNumber") if "UpdateSequenceNumber" in ad else None
            ad["UpdateSequenceNumber"] = sequence_number(old if type(old) is int else None)
            counts[path.name] = int(ad.eval("CurMatches"))
        temporary = path.with_suffix(".ad.tmp")
        temporary.write_text("\n".join(ad.unparse_old() for ad in fresh), encoding="utf-8")
        os.replace(temporary, path)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: condor_q -l | python -m sheaf.backends.grid._monitor SITE_AD_DIR", file=sys.stderr)
        return 2
    try:
        counts = monitor_files(sys.stdin.read(), Path(args[0]))
    except (InputError, ValueError) as exc:
        print(f"sheaf: error: {exc}", file=sys.stderr)
        return 2
    for name, count in counts.items():
        print(f"{name}: CurMatches = {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
