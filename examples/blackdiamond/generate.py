#!/usr/bin/env python3
"""The bundled blackdiamond example, written with the Pegasus 5 Python API.

    python generate.py        # (re)writes workflow.yml and the three catalogs beside it

The output is committed; run this again only to change the example.  The workflow is Pegasus's
black diamond made wider so that clustering shows: ``preprocess`` reads ``f.a`` and writes
``f.b0..f.b7``; eight ``findrange`` jobs each turn one ``f.bN`` into ``f.cN``; ``analyze`` reads
them all and writes ``f.d``.  All transformations are ``diamond::*:4.0``; dependencies are the ones
the files imply.

The transformation catalog names ``bin/keg`` relative to this directory (sheaf writes a relative
executable path as absolute from where ``sheaf plan`` runs, so plan from here), and gives
``findrange`` the pegasus profile ``clusters.size = 3``: horizontal clustering makes clusters of 3, 3
and 2 tasks.  The site catalog names no scratch directory, so jobs run in ``DIR/scratch/condorpool``
under the plan directory.  ``f.a`` is ``input/f.a``, named by the replica catalog (relative, like
the executable) -- or pass ``--input-dir input``.
"""

from __future__ import annotations

from pathlib import Path

from Pegasus.api import (
    File,
    Job,
    Namespace,
    ReplicaCatalog,
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


def sites() -> SiteCatalog:
    pool = Site("condorpool").add_profiles(Namespace.CONDOR, key="universe", value="vanilla")
    return SiteCatalog().add_sites(Site("local"), pool)


def main() -> None:
    if not (HERE / "workflow.yml").exists():  # generated once and committed: the catalogs may change
        workflow().write(str(HERE / "workflow.yml"))
    transformations("bin/keg").write(str(HERE / "transformations.yml"))
    sites().write(str(HERE / "sites.yml"))
    ReplicaCatalog().add_replica("local", "f.a", "input/f.a").write(str(HERE / "replicas.yml"))


if __name__ == "__main__":
    main()
