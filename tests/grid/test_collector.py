"""The collector behind ``sheaf advertise``/``sheaf ads``: UPDATE_STARTD_AD semantics, durability."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.backends.grid import Collector, read_ads
from sheaf.errors import FormatError

SHEAF = [str(Path(sys.executable).parent / "sheaf")]

SITE = (Path(__file__).parent / "data" / "uw-hep.ad").read_text()  # the report's site ad


def _site(name: str, seq: int | None, cur: int = 0) -> str:
    number = f"UpdateSequenceNumber = {seq}\n" if seq is not None else ""
    return f'Name = "{name}"\n{number}CurMatches = {cur}\nMaxMatches = 2\n'


def test_the_reports_site_ad_is_stored_and_read_back(tmp_path: Path) -> None:
    with Collector(tmp_path / "c.sqlite") as collector:
        [update] = collector.advertise(read_ads(SITE))
        assert update.accepted
        [ad] = collector.ads()
    assert ad.eval("MOP_SITE") == "uw-hep"
    assert ad.eval("MaxMatches") == 2
    assert ad.eval("Requirements", target="[WANT_USCMS_MATCHMAKER = true]") is True


def test_an_older_or_equal_sequence_number_is_ignored(tmp_path: Path) -> None:
    with Collector(tmp_path / "c.sqlite") as collector:
        collector.advertise(read_ads(_site("a", 10, cur=1)))
        older, equal = collector.advertise(read_ads(_site("a", 9, cur=5) + "\n" + _site("a", 10, cur=6)))
        newer, = collector.advertise(read_ads(_site("a", 11, cur=2)))
        assert not older.accepted and "not higher" in (older.reason or "")
        assert not equal.accepted
        assert newer.accepted
        [ad] = collector.ads()
    assert ad.eval("CurMatches") == 2


def test_old_file_with_several_ads_and_new_syntax(tmp_path: Path) -> None:
    old = read_ads(_site("a", 1) + "\n" + _site("b", 1))
    new = read_ads('[Name = "c";\n MaxMatches = 3]\n[Name = "d"; MaxMatches = 1]')
    assert [ad.eval("Name") for ad in old + new] == ["a", "b", "c", "d"]


def test_bad_ad_text_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as info:
        read_ads(_site("a", 1) + "\nName = \"b\"\nMaxMatches = (1 +\n", "site.ad")
    assert info.value.location.path == "site.ad"
    assert info.value.location.line is not None and info.value.location.line >= 6


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=12))
def test_stored_sequence_is_the_running_maximum(tmp_path_factory: pytest.TempPathFactory,
                                                 numbers: list[int]) -> None:
    path = tmp_path_factory.mktemp("c") / "c.sqlite"
    with Collector(path) as collector:
        for number in numbers:
            collector.advertise(read_ads(_site("s", number, cur=number)))
        assert collector.sequence("s") == max(numbers)
        assert collector.ads()[0].eval("CurMatches") == max(numbers)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SHEAF_STATE_DIR": str(tmp_path / "state")}


def test_cli_advertise_and_ads(tmp_path: Path) -> None:
    (tmp_path / "site.ad").write_text(SITE)
    env = _env(tmp_path)
    run = subprocess.run([*SHEAF, "advertise", "UPDATE_STARTD_AD", "site.ad"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)
    assert "updated uw-hep-USCMS-Site" in run.stdout
    again = subprocess.run([*SHEAF, "advertise", "site.ad"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, check=True)
    assert "ignored uw-hep-USCMS-Site" in again.stderr
    assert (tmp_path / "state" / "collector.sqlite").exists()
    listing = subprocess.run([*SHEAF, "ads"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             check=True)
    assert "uw-hep-USCMS-Site" in listing.stdout and "0/2" in listing.stdout
    long = subprocess.run([*SHEAF, "ads", "-l", "--constraint", 'MOP_SITE == "uw-hep"'], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=True)
    assert 'MOP_SITE = "uw-hep"' in long.stdout
    none = subprocess.run([*SHEAF, "ads", "--constraint", "MaxMatches > 5"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    assert none.stdout == ""


def test_cli_collector_file_from_a_property_and_bad_input(tmp_path: Path) -> None:
    (tmp_path / "site.ad").write_text(SITE)
    (tmp_path / "bad.ad").write_text('Name = "x"\nMaxMatches = (\n')
    env = _env(tmp_path)
    prop = f"sheaf.collector.file={tmp_path / 'mine.sqlite'}"
    subprocess.run([*SHEAF, "advertise", "-D", prop, "site.ad"], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    assert (tmp_path / "mine.sqlite").exists() and not (tmp_path / "state").exists()
    bad = subprocess.run([*SHEAF, "advertise", "bad.ad"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2 and "bad.ad:2" in bad.stderr and "Traceback" not in bad.stderr
    usage = subprocess.run([*SHEAF, "advertise", "NOPE", "site.ad"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
