"""Byte-level mutations of a valid input file, shared by the reader fuzz tests."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzing import BLANK_AND_COMMENT_RUNS

_TOKENS = [b":", b" ", b"\n", b"- ", b"{", b"}", b"[", b"]", b"'", b'"', b"&a", b"*a", b"!!binary", b"\t",
           b"\xff", b"\xc3", b"\x00", b"<", b">", b"&", b";", b"<!--", b"]]>", b"=", b",", b"\\", b"\\u",
           b"\\0", b"\\\n",
           b"tr ", b"site ", b"cont ", b"profile ", b'regex="true"', b"(", b"&amp;", b"&x;", b"\r\n", b"? ",
           b'<!DOCTYPE adag [<!ENTITY x SYSTEM "file:///etc/hostname">]>', b"\xef\xbb\xbf", b"9" * 50,
           *BLANK_AND_COMMENT_RUNS]


@st.composite
def byte_mutations(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["delete", "insert", "replace", "repeat", "indent"]))
        at = draw(st.integers(0, len(data)))
        if op == "delete":
            del data[at:at + draw(st.integers(1, 30))]
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(_TOKENS))
        elif op == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "repeat":
            end = min(len(data), at + draw(st.integers(1, 8)))
            data[at:end] = bytes(data[at:end]) * draw(st.sampled_from([2, 50, 5000]))
        else:
            line_start = data.rfind(b"\n", 0, at) + 1
            data[line_start:line_start] = b" " * draw(st.integers(1, 4))
    return bytes(data)
