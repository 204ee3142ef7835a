"""For a real pool: the matchmaker monitor over ``condor_q -l`` output, parse-checked by the bindings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.grid._recipe import prepare, sheaf

SITES = "sites:\n  uw: {max_queued: 100, slots: 2}\n  fnal: {max_queued: 150, slots: 2}\n"


def _job(cluster: int, site: str | None) -> str:
    match = f'MATCH_SiteEnvironment = "SheafSite={site};SiteBackend=local"\n' if site else ""
    return f'ClusterId = {cluster}\nProcId = 0\nJobStatus = 2\nWANT_USCMS_MATCHMAKER = true\n{match}'


def test_the_monitor_rewrites_site_ad_files_from_condor_q(tmp_path: Path) -> None:
    import classad2
    import htcondor2  # noqa: F401  (before classad2)

    run = prepare(tmp_path, SITES, tasks=3, size=50)
    sheaf(tmp_path, "advertise", "--site-config", "site-config.yml", "--group-size", "50", "--write", "ads")
    before = {p.name: classad2.parseOne(p.read_text()) for p in (tmp_path / "ads").glob("*.ad")}
    queue = "\n".join([_job(1, "uw"), _job(2, "uw"), _job(3, "fnal"), _job(4, None)])
    done = subprocess.run([sys.executable, "-m", "sheaf.backends.grid._monitor", str(tmp_path / "ads")],
                          input=queue, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    after = {p.name: classad2.parseOne(p.read_text()) for p in (tmp_path / "ads").glob("*.ad")}
    assert after["uw.ad"]["CurMatches"] == 2 and after["fnal.ad"]["CurMatches"] == 1
    assert after["uw.ad"]["MaxMatches"] == 2 and after["fnal.ad"]["MaxMatches"] == 3
    for name, ad in after.items():
        assert ad["UpdateSequenceNumber"] > before[name]["UpdateSequenceNumber"]
    script = run / "grid" / "matchmaker-monitor.sh"
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
    assert "condor_advertise UPDATE_STARTD_AD" in script.read_text()


def test_the_monitor_refuses_a_bad_listing(tmp_path: Path) -> None:
    (tmp_path / "ads").mkdir()
    (tmp_path / "ads" / "x.ad").write_text('Name = "x-Site"\nSiteEnvironment = "SheafSite=x"\n')
    done = subprocess.run([sys.executable, "-m", "sheaf.backends.grid._monitor", str(tmp_path / "ads")],
                          input="ClusterId = (\n", capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "condor_q -l" in done.stderr
