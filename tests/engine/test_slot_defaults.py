"""The attributes HTCondor's startd gives every slot by default, so that requirements written for a
real pool (``FileSystemDomain``, ``OpSysAndVer``, ...) match the local pool as they would there."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import classad
from sheaf.backends import Pool
from sheaf.backends._slotattrs import os_attributes, read_os_release
from sheaf.backends._slotlayout import Machine
from sheaf.classad import ClassAd

MACHINE = Machine(cpus=2, memory=4096, disk=1_000_000, swap=0, cpu_ids=(0, 1), hostname="node.example.org")


def _job(requirements: str) -> ClassAd:
    ad = ClassAd()
    ad["Requirements"] = classad.parse(requirements)
    return ad


def test_slot_ads_carry_htcondors_default_attributes() -> None:
    ad = Pool("", machine=MACHINE).slot_ads()[0]
    assert (ad["FileSystemDomain"], ad["UidDomain"], ad["Machine"]) == ("node.example.org",) * 3
    assert ad["Rank"] == 0.0 and isinstance(ad["Rank"], float)
    assert (ad["OpSys"], ad["Arch"], ad["OpSysLegacy"]) == ("LINUX", "X86_64", "LINUX")
    release = read_os_release()
    if release.get("ID") == "debian" and release.get("VERSION_ID") == "12":
        assert (ad["OpSysAndVer"], ad["OpSysMajorVer"], ad["OpSysVer"], ad["OpSysName"]) == (
            "Debian12", 12, 1200, "Debian")


@pytest.mark.parametrize("requirements", [
    'TARGET.FileSystemDomain == "node.example.org" && TARGET.UidDomain == "node.example.org"',
    'TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Machine == "node.example.org"',
    "TARGET.Rank == 0.0 && TARGET.HasFileTransfer",
])
def test_requirements_naming_default_attributes_match(requirements: str) -> None:
    assert Pool("", machine=MACHINE).claim(_job(requirements)) is not None


def test_configured_domains_win() -> None:
    pool = Pool("FILESYSTEM_DOMAIN = cluster.local\nUID_DOMAIN = users.local\n", machine=MACHINE)
    ad = pool.slot_ads()[0]
    assert (ad["FileSystemDomain"], ad["UidDomain"]) == ("cluster.local", "users.local")
    assert pool.claim(_job('TARGET.FileSystemDomain == "cluster.local"')) is not None
    assert pool.claim(_job('TARGET.FileSystemDomain == "node.example.org"')) is None


@pytest.mark.parametrize(("text", "expected"), [
    ('ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
     ("Debian", "Debian12", 12, 1200, "Debian GNU/Linux 12 (bookworm)")),
    ('ID="rocky"\nVERSION_ID="9.3"\n', ("Rocky", "Rocky9", 9, 900, "Rocky")),
    ("ID=ubuntu\nVERSION_ID='22.04'\n", ("Ubuntu", "Ubuntu22", 22, 2200, "Ubuntu")),
    ("", ("Linux", "Linux", 0, 0, "Linux")),
])
def test_opsys_family_from_os_release(tmp_path: Path, text: str, expected: tuple[object, ...]) -> None:
    path = tmp_path / "os-release"
    path.write_text(text)
    attrs = os_attributes(read_os_release(str(path)))
    assert (attrs["OpSysName"], attrs["OpSysAndVer"], attrs["OpSysMajorVer"], attrs["OpSysVer"],
            attrs["OpSysLongName"]) == expected
