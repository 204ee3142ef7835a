"""The transfer lists of the data jobs: what ``sheaf-transfer`` reads, written as JSON text directly.

A stage-in, stage-out or inter-site job runs ``sheaf-transfer`` with the options ``transfer_options``
builds over a list of entries (``transfer_entry``), one JSON object a line (``transfer_text``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from json.encoder import encode_basestring

from sheaf.planner._plan import ExecutableWorkflow
from sheaf.planner._replicas import Source

__all__ = ["json_str", "json_text", "transfer_entry", "transfer_options", "transfer_text"]

#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call (one call per entry)
json_text = json.JSONEncoder(ensure_ascii=False).encode


def transfer_options(exec_wf: ExecutableWorkflow, root: str, submit_dir: str) -> tuple[str, ...]:
    """``sheaf-transfer``'s options for a job delivering into ``root`` (the fixed interface)."""
    props = exec_wf.properties
    threads = props.get_int("pegasus.transfer.threads", 2, minimum=1) or 2
    integrity = (props.get_str("pegasus.integrity.checking") or "full").strip().lower()
    argv = ["--threads", str(threads)]
    if props.get_bool("pegasus.transfer.links", False):
        argv.append("--link")
    argv += ["--root", root, "--integrity", integrity]
    if (props.get_str("pegasus.mode") or "production").strip().lower() != "production":
        argv += ["--attempts", "1"]  # Pegasus's manual: every other mode makes one attempt a transfer
    if integrity != "none":
        argv += ["--meta-dir", os.path.join(submit_dir, "integrity")]
    return tuple(argv)


def transfer_entry(number: int, linkage: str, lfn: str, sources: Iterable[Source], dest_site: str,
                   dest_url: str, executable: bool = False, checksum: str | None = None, *,
                   integrity: bool = True) -> str:
    """One entry of a transfer list, as ``json_text`` writes the dict ``{"type": "transfer", "id":
    number, "linkage", "lfn", "executable", "src_urls": [{"site_label", "url"}...], "dest_urls": [...],
    ["checksum": {"sha256"}], ["integrity": false]}`` -- formatted here: a list of 10^5 jobs holds 10^5
    entries, and json's per-call set-up was most of their cost (the test checks both agree).
    ``integrity`` false: the file gets no integrity record (a checkpoint file, which its job changes)."""
    srcs = ", ".join([f'{{"site_label": {json_str(s.site)}, "url": {json_str(s.url)}}}' for s in sources])
    text = (f'{{"type": "transfer", "id": {number:d}, "linkage": {json_str(linkage)}, '
            f'"lfn": {json_str(lfn)}, "executable": {"true" if executable else "false"}, '
            f'"src_urls": [{srcs}], '
            f'"dest_urls": [{{"site_label": {json_str(dest_site)}, "url": {json_str(dest_url)}}}]')
    if checksum:
        text += f', "checksum": {{"sha256": {json_str(checksum)}}}'
    if not integrity:
        text += ', "integrity": false'
    return text + "}"


def json_str(value: object) -> str:
    """``json_text(value)``, for a ``str`` by json's own C string encoder alone."""
    return encode_basestring(value) if value.__class__ is str else json_text(value)


def transfer_text(entries: list[str]) -> str:
    """One entry a line: readable, and cheap to write (an ``indent`` would take json's Python encoder)."""
    return "[\n" + ",\n".join(entries) + "\n]\n"
