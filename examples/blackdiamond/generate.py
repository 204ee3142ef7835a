#!/usr/bin/env python3
"""The bundled blackdiamond example, written with the Pegasus 5 Python API.

    python generate.py                      # (re)writes workflow.yml beside this script (committed)
    python generate.py --catalogs DIR --scratch PATH
                                            # writes DIR/transformations.yml and DIR/sites.yml

The workflow is the seeds' black diamond made wider so that clustering shows: ``preprocess`` reads
``f.a`` and writes ``f.b0..f.b7``; eight ``findrange`` jobs each turn one ``f.bN`` into ``f.cN``;
``analyze`` reads them all and writes ``f.d``.  All transformations are ``diamond::*:4.0``.
Dependencies are the ones the files imply.

The catalogs name absolute paths (the ``keg`` executable of this checkout, the scratch directory of
a run), so they are written per run (``examples/demo.sh`` does) rather than committed.  The
transformation catalog gives ``findrange`` the pegasus profile ``clusters.size = 3``: horizontal
clustering makes clusters of 3, 3 and 2 tasks.  ``f.a`` comes from ``input/`` (``--input-dir``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from Pegasus.api import (
    Directory,
    File,
    FileServer,
    Job,
    Namespace,
    Operation,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)

HERE = Path(__file__).resolve().parent
WIDTH = 8


def workflow() -> Workflow:
    wf = Workflow("blackdiamond")
    fa = File("f.a")
    fb = [File(f"f.b{i}") for i in range(WIDTH)]
    fc = [File(f"f.c{i}") for i in range(WIDTH)]
    fd = File("f.d")
    wf.add_jobs(Job("preprocess", namespace="diamond", version="4.0")
                .add_args("-a", "preprocess", "-T", "0", "-i", fa, "-o", *fb)
                .add_inputs(fa).add_outputs(*fb))
    for b, c in zip(fb, fc):
        wf.add_jobs(Job("findrange", namespace="diamond", version="4.0")
                    .add_args("-a", "findrange", "-T", "0", "-i", b, "-o", c)
                    .add_inputs(b).add_outputs(c))
    wf.add_jobs(Job("analyze", namespace="diamond", version="4.0")
                .add_args("-a", "analyze", "-T", "0", "-i", *fc, "-o", fd)
                .add_inputs(*fc).add_outputs(fd))
    return wf


def transformations(keg: str) -> TransformationCatalog:
    tc = TransformationCatalog()
    for name in ("preprocess", "findrange", "analyze"):
        tr = Transformation(name, namespace="diamond", version="4.0", site="condorpool", pfn=keg,
                            is_stageable=False)
        if name == "findrange":
            tr.add_profiles(Namespace.PEGASUS, key="clusters.size", value=3)
        tc.add_transformations(tr)
    return tc


def sites(scratch: str) -> SiteCatalog:
    sc = SiteCatalog()
    local = Site("local")
    pool = Site("condorpool")
    pool.add_directories(Directory(Directory.SHARED_SCRATCH, scratch)
                         .add_file_servers(FileServer("file://" + scratch, Operation.ALL)))
    pool.add_profiles(Namespace.CONDOR, key="universe", value="vanilla")
    sc.add_sites(local, pool)
    return sc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalogs", metavar="DIR", help="write transformations.yml and sites.yml into DIR")
    parser.add_argument("--scratch", metavar="PATH", help="the condorpool site's shared scratch directory")
    args = parser.parse_args()
    if not args.catalogs:
        workflow().write(str(HERE / "workflow.yml"))
        return
    scratch = os.path.abspath(args.scratch or os.path.join(args.catalogs, "scratch"))
    os.makedirs(args.catalogs, exist_ok=True)
    transformations(str(HERE / "bin" / "keg")).write(os.path.join(args.catalogs, "transformations.yml"))
    sites(scratch).write(os.path.join(args.catalogs, "sites.yml"))


if __name__ == "__main__":
    main()
