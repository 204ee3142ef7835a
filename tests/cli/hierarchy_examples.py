"""The hierarchical-workflow examples of Pegasus's optimization chapter, built with the real
``Pegasus.api`` as printed.

Every executable is one stand-in (``keg``): it reads the files after ``-i``, writes each file after
``-o`` (the inputs' text plus a line naming itself), and, when ``-M DIR`` is given, leaves a marker
file there per run; a job with ``-F FILE`` fails while FILE does not exist.  Catalogs are written
under their default names (``transformations.yml``, ``replicas.yml``) where the parent is planned,
so a child plan finds them only if they are passed down.
"""

from __future__ import annotations

import sys
from pathlib import Path

from Pegasus.api import (
    File,
    Job,
    Namespace,
    ReplicaCatalog,
    SubWorkflow,
    Transformation,
    TransformationCatalog,
    Workflow,
)

KEG = '''#!{python}
import os, sys, time
args, ins, outs, mode, name = sys.argv[1:], [], [], None, "keg"
i = 0
while i < len(args):
    a = args[i]
    if a in ("-i", "-o"):
        mode = a
    elif a in ("-a", "-T", "-M", "-F", "-W"):
        value = args[i + 1]
        i += 1
        if a == "-a":
            name = value
        elif a == "-M":
            open(os.path.join(value, f"{{name}}.{{os.getpid()}}"), "w").close()
        elif a == "-F" and not os.path.exists(value):
            sys.exit(f"{{name}}: {{value}} does not exist")
        elif a == "-W":  # started marker, then wait for the file <value>.go
            open(value, "w").close()
            end = time.time() + 120
            while not os.path.exists(value + ".go") and time.time() < end:
                time.sleep(0.05)
        mode = None
    elif a.startswith("-"):
        mode = None
    elif mode == "-i":
        ins.append(a)
    elif mode == "-o":
        outs.append(a)
    i += 1
data = "".join(open(f).read() for f in ins)
for o in outs:
    with open(o, "w") as fh:
        fh.write(data + f"{{name}}->{{o}}\\n")
'''


def setup(top: Path) -> str:
    """The stand-in, the input files and the catalogs (default names) in ``top``; returns keg's path."""
    keg = top / "keg"
    keg.write_text(KEG.format(python=sys.executable))
    keg.chmod(0o755)
    (top / "input").mkdir(exist_ok=True)
    (top / "input" / "f.a").write_text("fa\n")
    (top / "input.txt").write_text("input\n")
    tc = TransformationCatalog()
    for name in ("preprocess", "findrange", "analyze", "post-analyze"):
        tc.add_transformations(Transformation(name, namespace="diamond", version="4.0", site="condorpool",
                                              pfn=str(keg), is_stageable=False))
    tc.add_transformations(Transformation("keg", site="condorpool", pfn=str(keg), is_stageable=False),
                           Transformation("ls", site="condorpool", pfn="/bin/ls", is_stageable=False),
                           Transformation("cp", site="condorpool", pfn="/bin/cp", is_stageable=False))
    tc.write(str(top / "transformations.yml"))
    rc = ReplicaCatalog()
    for lfn, path in (("blackdiamond.yml", "input/blackdiamond.yml"), ("subwf1.yml", "subwf1.yml"),
                      ("subwf2.yml", "subwf2.yml"), ("input.txt", "input.txt"), ("black.dag", "black.dag")):
        rc.add_replica("local", lfn, "file://" + str(top / path))
    rc.write(str(top / "replicas.yml"))
    _blackdiamond(top)
    return str(keg)


def _blackdiamond(top: Path) -> None:
    fa, fb1, fb2 = File("f.a"), File("f.b1"), File("f.b2")
    fc1, fc2, fd = File("f.c1"), File("f.c2"), File("f.d")
    (
        Workflow("blackdiamond")
        .add_jobs(
            Job("preprocess", namespace="diamond", version="4.0")
            .add_args("-a", "preprocess", "-T", "60", "-i", fa, "-o", fb1, fb2)
            .add_inputs(fa)
            .add_outputs(fb1, fb2, register_replica=True),
            Job("findrange", namespace="diamond", version="4.0")
            .add_args("-a", "findrange", "-T", "60", "-i", fb1, "-o", fc1)
            .add_inputs(fb1)
            .add_outputs(fc1, register_replica=True),
            Job("findrange", namespace="diamond", version="4.0")
            .add_args("-a", "findrange", "-T", "60", "-i", fb2, "-o", fc2)
            .add_inputs(fb2)
            .add_outputs(fc2, register_replica=True),
            Job("analyze", namespace="diamond", version="4.0")
            .add_args("-a", "analyze", "-T", "60", "-i", fc1, fc2, "-o", fd)
            .add_inputs(fc1, fc2)
            .add_outputs(fd, register_replica=False, stage_out=False),
        )
        .write(str(top / "input/blackdiamond.yml"))
    )


def pegasus_workflow_job(top: Path) -> Path:
    """"Specifying a pegasusWorkflow Job in the Abstract Workflow", as printed."""
    wf = Workflow("local-hierarchy")
    fd = File("f.d")
    blackdiamond_wf = SubWorkflow("blackdiamond.yml", False).add_args(
        "--input-dir", "input", "--output-sites", "local", "-vvv", "--force"
    ).add_outputs(fd).add_dagman_profile(max_jobs="10")
    wf.add_jobs(blackdiamond_wf)
    wf.write(str(top / "workflow.yml"))
    return top / "workflow.yml"


def condor_workflow_job(top: Path, dag_dir: Path) -> Path:
    """"Specifying a condorWorkflow Job", as printed, with the chapter's ``/dag-dir/test`` under ``top``."""
    keg = top / "keg"
    (top / "black.sub").write_text(f"universe = local\nexecutable = {keg}\n"
                                   f"arguments = -a black -M {top} -o black.out\nqueue\n")
    (top / "black.dag").write_text(f"JOB A {top}/black.sub\nJOB B {top}/black.sub\nPARENT A CHILD B\n")
    wf = Workflow("local-hierarchy")
    blackdiamond_wf = SubWorkflow("black.dag", True).add_dagman_profile(max_jobs="10").add_profiles(
        Namespace.DAGMAN, key="dir", value=str(dag_dir))
    wf.add_jobs(blackdiamond_wf)
    wf.write(str(top / "workflow.yml"))
    return top / "workflow.yml"


def across_sub_workflows(top: Path) -> Path:
    """"File Dependencies Across pegasusWorkflow Jobs", as printed (keg and ls catalogued)."""
    keg = Transformation("keg", site="condorpool", pfn=str(top / "keg"), is_stageable=False)
    ls = Transformation("ls", site="condorpool", pfn="/bin/ls", is_stageable=False)
    input_file = File("input.txt")
    k1_out = File("k1.txt")
    wf1 = Workflow("subworkflow-1")
    k1 = Job(keg).add_args("-i", input_file, "-o", k1_out, "-T", 5).add_inputs(input_file).add_outputs(k1_out)
    ls1 = Job(ls).add_args("-alh")
    wf1.add_jobs(k1, ls1)
    wf1.write(str(top / "subwf1.yml"))
    k2_out = File("k2.txt")
    wf2 = Workflow("subworkflow-2")
    k2 = Job(keg).add_args("-i", k1_out, "-o", k2_out, "-T", 5).add_inputs(k1_out).add_outputs(k2_out)
    wf2.add_jobs(k2)
    wf2.write(str(top / "subwf2.yml"))
    root_wf = Workflow("root")
    j1 = SubWorkflow("subwf1.yml", _id="subwf1").add_planner_args(verbose=3).add_outputs(k1_out)
    j2 = SubWorkflow("subwf2.yml", _id="subwf2").add_planner_args(verbose=3).add_inputs(k1_out) \
        .add_outputs(k2_out)
    root_wf.add_jobs(j1, j2)
    root_wf.write(str(top / "workflow.yml"))
    return top / "workflow.yml"


def compute_reads_sub_workflow_output(top: Path) -> Path:
    """"File Dependencies between pegasusWorkflow and Compute Jobs", as printed."""
    fd, fe = File("f.d"), File("f.e")
    wf = Workflow("local-hierarchy")
    blackdiamond_wf = SubWorkflow("blackdiamond.yml", False).add_args(
        "--input-dir", "input", "--output-sites", "local", "-vvv", "--force"
    ).add_outputs(fd)
    post_analyze_job = Job("post-analyze", namespace="diamond", version="4.0")\
        .add_args("-a", "post-analyze", "-T", "60", "-i", fd, "-o", fe)\
        .add_inputs(fd)\
        .add_outputs(fe, register_replica=True, stage_out=True)
    wf.add_jobs(blackdiamond_wf, post_analyze_job)
    wf.add_dependency(blackdiamond_wf, children=[post_analyze_job])
    wf.write(str(top / "workflow.yml"))
    return top / "workflow.yml"
