"""Pegasus's text replica catalog (``File`` format) and its detection beside YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import formats
from sheaf.errors import FormatError


def test_text_replica_catalog(tmp_path: Path) -> None:
    path = tmp_path / "rc.txt"
    path.write_text(
        "# file-based replica catalog\n"
        "f.a file:///data/f.a site=\"local\"\n"
        "f.a gsiftp://remote/f.a site=\"remote\"\n"
        "\"f b\" \"file:///data/f b\" site=\"local\" checksum.type=\"sha256\" checksum.value=\"ab\""
        " owner=me\n"
        "f\\.c[0-9]+ file:///data/[0] site=\"local\" regex=\"true\"\n"
        "q http://host/get?a=b pool=web\n")
    rc = formats.read_replica_catalog(path)
    assert [(p.pfn, p.site) for p in rc.lookup("f.a")] == [("file:///data/f.a", "local"),
                                                           ("gsiftp://remote/f.a", "remote")]
    spaced = rc.replicas[1]
    assert spaced.lfn == "f b" and spaced.checksum == {"type": "sha256", "value": "ab"}
    assert spaced.metadata == {"owner": "me"}
    assert rc.lookup("f.c12")[0].pfn == "file:///data/f.c12"
    assert rc.lookup("q")[0].site == "web"


@pytest.mark.parametrize(("line", "column"), [("only-an-lfn", 1), ("a b c", 1), ('a b "unterminated', 1)])
def test_bad_lines(tmp_path: Path, line: str, column: int) -> None:
    path = tmp_path / "rc.txt"
    path.write_text(f"# header\n{line}\n")
    with pytest.raises(FormatError) as info:
        formats.read_replica_catalog(path)
    assert info.value.line == 2 and info.value.path == str(path)


def test_yaml_replica_catalog_is_not_mistaken_for_text(tmp_path: Path) -> None:
    path = tmp_path / "replicas.yml"
    path.write_text("pegasus: '5.0'\nreplicas:\n- lfn: f.a\n  pfns:\n  - {site: local, pfn: /d/f.a}\n"
                    "- {lfn: f.b, pfn: /d/f.b, site: local}\n")
    rc = formats.read_replica_catalog(path)
    assert [r.lfn for r in rc] == ["f.a", "f.b"] and rc.lookup("f.b")[0].pfn == "/d/f.b"
