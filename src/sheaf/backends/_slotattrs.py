"""The attributes HTCondor's startd puts in every slot ad by default, beyond the resources.

A requirement written for a real pool (``TARGET.FileSystemDomain == "..."``, ``OpSysAndVer ==
"Debian12"``, ``Arch == "X86_64"``) must match the local pool as it would there, so its slots carry:

- ``FileSystemDomain`` and ``UidDomain``: the ``FILESYSTEM_DOMAIN``/``UID_DOMAIN`` configuration, by
  default the host's name (HTCondor's default is ``$(FULL_HOSTNAME)``; sheaf takes the name the
  host gives itself and asks no DNS, which can hang in a VM);
- ``OpSys = "LINUX"`` and the ``OpSys*`` family from ``/etc/os-release`` as HTCondor derives them:
  ``OpSysName``/``OpSysShortName`` (``Debian``, ``Ubuntu``, ``CentOS``, ``RedHat``, ``Rocky``,
  ``AlmaLinux``, ``Fedora``, ... else the ``ID`` capitalized), ``OpSysMajorVer`` (12),
  ``OpSysVer`` (1200), ``OpSysAndVer`` (``Debian12``), ``OpSysLongName`` (``PRETTY_NAME``),
  ``OpSysLegacy = "LINUX"``;
- ``Rank = 0.0``, HTCondor's default ``RANK`` (the machine prefers no job), so the negotiator's
  default best-fit pre-job rank applies; ``HasFileTransfer = true``; ``CondorPlatform``-style
  attributes are not faked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: os-release ``ID`` -> HTCondor's ``OpSysName``
_NAMES = {"debian": "Debian", "ubuntu": "Ubuntu", "centos": "CentOS", "rhel": "RedHat", "rocky": "Rocky",
          "almalinux": "AlmaLinux", "fedora": "Fedora", "opensuse-leap": "openSUSE", "sles": "SLES",
          "amzn": "AmazonLinux", "scientific": "SL"}
_LINE = re.compile(r'^([A-Z_]+)=(?:"(.*)"|\'(.*)\'|(.*))$')


def read_os_release(path: str = "/etc/os-release") -> dict[str, str]:
    """The ``KEY=value`` pairs of an os-release file (empty when it cannot be read)."""
    found: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _LINE.match(line.strip())
                if match:
                    found[match[1]] = next(v for v in match.groups()[1:] if v is not None)
    except OSError:
        pass
    return found


def os_attributes(release: Mapping[str, str]) -> dict[str, object]:
    """The ``OpSys*`` attributes of a Linux machine described by ``release`` (module docstring)."""
    ident = release.get("ID", "").lower()
    name = _NAMES.get(ident) or (ident.capitalize() if ident else "Linux")
    major_text = release.get("VERSION_ID", "").split(".", 1)[0]
    major = int(major_text) if major_text.isdigit() else 0
    return {"OpSys": "LINUX", "OpSysLegacy": "LINUX", "OpSysName": name, "OpSysShortName": name,
            "OpSysMajorVer": major, "OpSysVer": major * 100, "OpSysAndVer": f"{name}{major or ''}",
            "OpSysLongName": release.get("PRETTY_NAME", name)}


def default_attributes(config: Mapping[str, str], hostname: str,
                       release: Mapping[str, str]) -> dict[str, object]:
    """Every default attribute of a slot ad of this machine (module docstring)."""
    return {"FileSystemDomain": config.get("FILESYSTEM_DOMAIN") or hostname,
            "UidDomain": config.get("UID_DOMAIN") or hostname,
            **os_attributes(release), "Rank": 0.0, "HasFileTransfer": True}
