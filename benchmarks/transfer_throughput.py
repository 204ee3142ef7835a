"""Transfer throughput: ``sheaf-transfer`` against ``cp`` and ``curl`` on the same files, in one run.

    .venv/bin/python benchmarks/transfer_throughput.py [--small 1000] [--small-bytes 4096]
                                                      [--big-mb 200] [--threads 2] [--rounds 1]

Cases (each one a fresh destination directory):

- ``file:// small``: ``--small`` files of ``--small-bytes`` random bytes, one transfer list, against
  one ``cp -t DEST FILE...`` process over the same files;
- ``file:// big``: one ``--big-mb`` MB file, against ``cp FILE DEST``;
- ``http:// small`` and ``http:// big``: the same files served by a threaded ``http.server`` on
  127.0.0.1 in this process, against one ``curl`` process fetching every URL (``-o`` per file,
  connections reused) -- the server is the same for both sides, so the ratio is the client's.

What is timed: each command as a subprocess, from start to exit (interpreter start-up and imports
included: a stage-in job pays them too).  Every copy is checked (sizes; sha256 of the big file).
The ratio is sheaf's time over the baseline's (lower is better); with ``--rounds`` > 1 the median
round is reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOOL = str(Path(sys.executable).parent / "sheaf-transfer")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        del format, args


def _make_inputs(base: Path, small: int, small_bytes: int, big_mb: float) -> tuple[list[Path], Path]:
    src = base / "src"
    (src / "small").mkdir(parents=True)
    files = []
    for n in range(small):
        path = src / "small" / f"f{n:05d}.dat"
        path.write_bytes(os.urandom(small_bytes))
        files.append(path)
    big = src / "big.dat"
    block = os.urandom(1 << 20)
    with open(big, "wb") as out:
        out.writelines(block for _ in range(int(big_mb * 1024 * 1024) // len(block)))
        out.write(block[: int(big_mb * 1024 * 1024) % len(block)])
    return files, big


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def _sheaf(base: Path, name: str, sources: list[str], dest: Path, threads: int) -> float:
    entries = [{"lfn": os.path.basename(url), "src_urls": [{"url": url}],
                "dest_urls": [{"url": f"file://{dest}/{os.path.basename(url)}"}]} for url in sources]
    listing = base / f"{name}.json"
    listing.write_text(json.dumps(entries))
    return _timed([TOOL, "--threads", str(threads), "--root", str(dest), str(listing)])


def _check(sources: list[Path], dest: Path, digest: bool) -> None:
    for src in sources:
        copy = dest / src.name
        if copy.stat().st_size != src.stat().st_size:
            raise SystemExit(f"{copy} has the wrong size")
        if digest and _sha(copy) != _sha(src):
            raise SystemExit(f"{copy} differs from {src}")


def _sha(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


Row = tuple[str, float, float]  # case, sheaf-transfer's seconds, the baseline's


def _round(base: Path, files: list[Path], big: Path, url: str, threads: int) -> list[Row]:
    rows = []
    cases = [("file:// small", files, [f"file://{p}" for p in files], "cp"),
             ("file:// big", [big], [f"file://{big}"], "cp"),
             ("http:// small", files, [f"{url}/small/{p.name}" for p in files], "curl"),
             ("http:// big", [big], [f"{url}/{big.name}"], "curl")]
    for number, (name, paths, urls, tool) in enumerate(cases):
        ours, theirs = base / f"ours{number}", base / f"theirs{number}"
        ours.mkdir()
        theirs.mkdir()
        took = _sheaf(base, f"list{number}", urls, ours, threads)
        if tool == "cp":
            baseline = _timed(["cp", "-t", str(theirs), *map(str, paths)])
        else:
            argv = ["curl", "-sSf"]
            for link, path in zip(urls, paths, strict=True):
                argv += ["-o", str(theirs / path.name), link]
            baseline = _timed(argv)
        _check(paths, ours, digest=len(paths) == 1)
        _check(paths, theirs, digest=False)
        shutil.rmtree(ours)
        shutil.rmtree(theirs)
        rows.append((name, took, baseline))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--small-bytes", type=int, default=4096)
    parser.add_argument("--big-mb", type=float, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    for needed in ("cp", "curl"):
        if shutil.which(needed) is None:
            raise SystemExit(f"{needed} is needed for the baseline")
    with tempfile.TemporaryDirectory(prefix="sheaf-transfer-bench-") as tmp:
        base = Path(tmp)
        files, big = _make_inputs(base, args.small, args.small_bytes, args.big_mb)
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(base / "src")))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            rounds = [_round(base, files, big, url, args.threads) for _ in range(args.rounds)]
        finally:
            server.shutdown()
            server.server_close()
    print(f"{args.small} small files of {args.small_bytes} B, one file of {args.big_mb:g} MB, "
          f"--threads {args.threads}, {args.rounds} round(s); load {os.getloadavg()[0]:.2f}")
    print(f"{'case':<16}{'sheaf-transfer s':>18}{'baseline':>10}{'s':>9}{'ratio':>8}")
    for index, (name, _, _) in enumerate(rounds[0]):
        ratios = [r[index][1] / r[index][2] for r in rounds]
        median = statistics.median(ratios)
        row = min((r[index] for r in rounds), key=lambda x: abs(x[1] / x[2] - median))
        baseline = "cp" if name.startswith("file") else "curl"
        print(f"{name:<16}{row[1]:>18.3f}{baseline:>10}{row[2]:>9.3f}{median:>8.2f}")


if __name__ == "__main__":
    main()
