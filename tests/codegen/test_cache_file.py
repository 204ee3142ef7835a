"""The cache file (Pegasus's ``<workflow>.cache``): where the plan's jobs write their outputs, as a text
replica catalog that sheaf's own reader takes back."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sheaf.codegen._subworkflow_node import cache_lines, cache_text
from sheaf.formats import read_replica_catalog

NAMES = st.text(st.sampled_from('ab.-_/"\\ é'), min_size=1, max_size=6).filter(lambda s: s.strip() == s)
DIRECTORIES = st.sampled_from(["/scratch/a", "/scratch/a/", "/sp ace/\"q\"", "/back\\slash", ""])


@given(st.dictionaries(NAMES, DIRECTORIES, min_size=1, max_size=8))
def test_the_streamed_cache_file_is_the_catalog_of_each_output_path(directories: dict[str, str]) -> None:
    paths = {lfn: os.path.join(directory, lfn) for lfn, directory in directories.items()}
    text = "".join(cache_lines(directories))
    assert text == cache_text(paths)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "wf.cache").write_text(text, encoding="utf-8")
        catalog = read_replica_catalog(Path(tmp) / "wf.cache")
    for lfn, path in paths.items():
        assert [(pfn.pfn, pfn.site) for pfn in catalog.lookup(lfn)] == [("file://" + path, "local")]
