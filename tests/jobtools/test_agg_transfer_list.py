"""The transfer list parser (``load_transfer_list``): what the planner writes is read back exactly,
anything else is one ``InputError`` naming the entry and key -- never another exception -- and file
URLs name the paths they spell (``%xx`` decoded, ``?`` and ``#`` literal)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import examples
from sheaf.errors import FormatError, InputError, ValidationError
from sheaf.jobtools._transfer_schemes import local_path
from sheaf.jobtools.transfer import Endpoint, Transfer, load_transfer_list, parse_transfer_list

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1,
               max_size=10)
SCHEMES = ["file:///", "http://h/", "https://h/", "webdav://h/", "scp://u@h/", "sftp://h:22/",
           "s3://u@s/b/", "gsiftp://h/", "symlink:///"]
URL = st.builds(lambda scheme, name: scheme + name, st.sampled_from(SCHEMES), TEXT)
ENDPOINT = st.builds(Endpoint, url=URL, site_label=TEXT, priority=st.none() | st.integers(-5, 100))
TRANSFER = st.builds(Transfer, lfn=TEXT, sources=st.lists(ENDPOINT, min_size=1, max_size=3).map(tuple),
                     dest=ENDPOINT, id=st.integers(0, 10**6) | TEXT,
                     linkage=st.sampled_from(["input", "output", "inter"]), executable=st.booleans(),
                     sha256=st.none() | st.text("0123456789abcdef", min_size=64, max_size=64))


def _json(item: Transfer) -> dict[str, Any]:
    def endpoint(e: Endpoint) -> dict[str, Any]:
        priority = {} if e.priority is None else {"priority": e.priority}
        return {"site_label": e.site_label, "url": e.url, **priority}

    return {"type": "transfer", "id": item.id, "linkage": item.linkage, "lfn": item.lfn,
            "executable": item.executable, "src_urls": [endpoint(e) for e in item.sources],
            "dest_urls": [endpoint(item.dest)],
            **({"checksum": {"sha256": item.sha256}} if item.sha256 else {})}


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(TRANSFER, max_size=5, unique_by=lambda t: t.dest.url))
def test_a_written_list_reads_back(transfers: list[Transfer]) -> None:
    assert parse_transfer_list(json.dumps([_json(t) for t in transfers])) == transfers


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                       max_leaves=12)
KEYS = ["type", "id", "linkage", "lfn", "executable", "src_urls", "dest_urls", "checksum"]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_any_json_is_a_list_or_one_input_error(data: st.DataObject) -> None:
    base = _json(data.draw(TRANSFER))
    for key in data.draw(st.lists(st.sampled_from(KEYS), max_size=3)):
        base[key] = data.draw(JSONISH)
    text = json.dumps(data.draw(st.sampled_from([[base], base, [base, base]])))
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(text)))
        text = text[:cut]
    try:
        parse_transfer_list(text, "l.json")
    except InputError as exc:
        assert str(exc).startswith("l.json")


@pytest.mark.parametrize(("url", "path"), [
    ("file:///a/b%20c", "/a/b c"), ("file://localhost/x?y#z", "/x?y#z"), ("file:/abs", "/abs"),
    ("file:rel/f.a", "/job/rel/f.a"), ("file://otherhost/x", None), ("http://h/x", None),
    ("file:////double", "//double"),
])
def test_file_urls_name_their_paths(url: str, path: str | None) -> None:
    assert local_path(url, "/job") == path


@pytest.mark.parametrize(("content", "error", "words"), [
    ("[1]", ValidationError, "transfer 1 is not an object"),
    ('[{"lfn": "a", "src_urls": [{"url": "foo://x"}], "dest_urls": [{"url": "file:///a"}]}]',
     ValidationError, "unknown scheme foo://"),
    ('[{"lfn": "a", "src_urls": [{"url": "file:///x"}], "dest_urls": []}]', ValidationError, "dest_urls"),
    (('[{"lfn": "a", "src_urls": [{"url": "file:///x"}], "dest_urls": [{"url": "file:///a"}],'
      ' "checksum": {"sha256": "abc"}}]'), ValidationError, "64 hex digits"),
    (('[{"lfn": "a", "src_urls": [{"url": "file:///x"}], "dest_urls": [{"url": "file:///a"}]},'
      ' {"lfn": "b", "src_urls": [{"url": "file:///y"}], "dest_urls": [{"url": "file:///a"}]}]'),
     ValidationError, "transfers 1 and 2 write one destination"),
    (('[{"lfn": "a", "src_urls": [{"url": "file:///x"}], "dest_urls": [{"url": "file:///a"}],'
      ' "integrity": "no"}]'), ValidationError, "integrity"),
    ('[{"lfn": "a",\n "src_urls": ]', FormatError, "l.json:2:14: not JSON"),
    ("[" * 100_000, FormatError, "l.json"),
])
def test_bad_lists_name_the_entry_and_key(tmp_path: Path, content: str, error: type[InputError],
                                          words: str) -> None:
    path = tmp_path / "l.json"
    path.write_text(content)
    with pytest.raises(error) as caught:
        load_transfer_list(str(path))
    assert words in str(caught.value).replace(str(tmp_path) + "/", "")
