"""DAX 3.x XML: Pegasus 4.x's clustering example job, file references in arguments, round trip,
malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats._dax import dumps_dax, loads_dax, read_dax
from sheaf.model import PFN, FileRef, Job, Replica, Use, Workflow, validate

SEED_JOB = """<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="labels">
  <job id="ID000004" namespace="app" name="analyze" version="1.0" level="1" >
    <argument>-a bottom -T60  -i <filename file="user.f.c1"/>  -o <filename file="user.f.d"/></argument>
    <profile namespace="pegasus" key="user_label">p1</profile>
    <uses file="user.f.c1" link="input" register="true" transfer="true"/>
    <uses file="user.f.c2" link="input" register="true" transfer="true"/>
    <uses file="user.f.d" link="output" register="true" transfer="true"/>
  </job>
</adag>"""

DIAMOND = """<?xml version="1.0" encoding="UTF-8"?>
<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.4" name="diamond">
  <file name="f.a"><pfn url="file:///data/f.a" site="local"/></file>
  <executable namespace="diamond" name="preprocess" version="4.0" arch="x86_64" os="LINUX" installed="false">
    <pfn url="file:///bin/keg" site="local"/>
    <profile namespace="pegasus" key="clusters.size">3</profile>
  </executable>
  <job id="ID1" namespace="diamond" name="preprocess" version="4.0">
    <argument>-i <filename name="f.a"/> -o <filename name="f.b"/></argument>
    <uses name="f.a" link="input"/>
    <uses name="f.b" link="output" transfer="false" register="false"/>
    <uses name="keg" link="input" executable="true"/>
    <stdout name="pre.out" link="output"/>
  </job>
  <job id="ID2" namespace="diamond" name="analyze" version="4.0">
    <argument>-i <filename name="f.b"/></argument>
    <uses name="f.b" link="input"/>
    <uses name="f.ckpt" link="inout"/>
  </job>
  <dag id="ID3" file="black.dag"/>
  <child ref="ID2"><parent ref="ID1"/></child>
  <child ref="ID3"><parent ref="ID1"/><parent ref="ID2"/></child>
</adag>"""


def test_the_4x_labelled_job() -> None:
    job = loads_dax(SEED_JOB).jobs["ID000004"]
    assert job.arguments == ("-a", "bottom", "-T60", "-i", FileRef("user.f.c1"), "-o", FileRef("user.f.d"))
    assert job.profiles == {"pegasus": {"user_label": "p1"}}
    assert (job.namespace, job.name, job.version) == ("app", "analyze", "1.0")
    assert [u.type for u in job.uses] == ["input", "input", "output"]
    assert job.uses[2] == Use("user.f.d", "output", stage_out=True, register_replica=True)


def test_dax_34_with_catalogs_streams_inout_and_a_dag_job() -> None:
    wf = loads_dax(DIAMOND)
    pre, ana, dag = wf.jobs["ID1"], wf.jobs["ID2"], wf.jobs["ID3"]
    assert pre.uses == (Use("f.a"), Use("f.b", "output"))  # transfer/register false; executable use skipped
    assert pre.stdout == "pre.out"
    assert ana.uses[1].type == "checkpoint"
    assert dag.type == "condorWorkflow" and dag.file == "black.dag"
    assert wf.dependencies == {"ID1": ["ID2", "ID3"], "ID2": ["ID3"]}
    assert wf.replica_catalog is not None and list(wf.replica_catalog) == [
        Replica("f.a", (PFN("file:///data/f.a", "local"),))]
    tc = wf.transformation_catalog
    assert tc is not None
    entry = tc.lookup("diamond", "preprocess", "4.0")
    assert entry is not None and entry.sites[0].type == "stageable" and entry.sites[0].os_type == "linux"
    assert entry.profiles == {"pegasus": {"clusters.size": "3"}}
    _, _, summary = validate(wf)
    assert summary.levels == 3


def test_round_trip_of_a_real_document() -> None:
    wf = loads_dax(DIAMOND)
    assert wf.format_version == "3.4"
    wf.format_version = "3.6"  # the writer writes DAX 3.6
    assert loads_dax(dumps_dax(wf)) == wf


@pytest.mark.parametrize(("text", "rule", "line"), [
    ("<adag>\n<job id='a' name='x'>\n</adag>", "a DAX is well-formed XML", 3),
    ("<sitecatalog/>", "the root element is <adag>", 1),
    ("<adag>\n<job name='x'/></adag>", "<job> requires the 'id' attribute", 2),
    ("<adag><job id='a' name='x'/>\n<job id='a' name='y'/></adag>", "job ids are unique", 2),
    ("<adag><job id='a' name='x'>\n<uses file='f' link='sideways'/></job></adag>",
     "link is none, input, output, inout or checkpoint", 2),
    ("<adag><job id='a' name='x'>\n<uses file='f' link='output' transfer='maybe'/></job></adag>",
     "'transfer' is true or false", 2),
    ("<adag>\n<child><parent ref='a'/></child></adag>", "<child> requires the 'ref' attribute", 2),
    ("<adag><dflow id='DF1'>\n<link source='a'/></dflow></adag>", "<link> requires the 'target' attribute",
     2),
])
def test_malformed_documents(tmp_path: Path, text: str, rule: str, line: int) -> None:
    path = tmp_path / "wf.dax"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_dax(path)
    assert info.value.rule == rule and info.value.line == line and info.value.path == str(path)


def test_a_use_linked_none_is_neither_staged_nor_a_dependency(tmp_path: Path) -> None:
    """``link="none"`` is legal in every DAX 3 schema; Pegasus's DAX parser adds such a file to neither
    the job's inputs nor its outputs: it is not staged, and makes no dependency."""
    path = tmp_path / "wf.dax"
    path.write_text("<adag name='n'><job id='a' name='x'><uses file='f' link='output'/></job>\n"
                    "<job id='b' name='x'><uses file='f' link='none'/><uses file='g' link='input'/></job>"
                    "</adag>")
    wf = read_dax(path)
    assert [u.lfn for u in wf.jobs["b"].uses] == ["g"]  # no use of f: no file edge from a


_words = st.from_regex(r"[A-Za-z0-9_.=-]{1,8}", fullmatch=True)


@st.composite
def dax_workflows(draw: st.DrawFn) -> Workflow:
    ids = draw(st.lists(st.from_regex(r"ID[0-9]{1,4}", fullmatch=True), min_size=1, max_size=6, unique=True))
    wf = Workflow(draw(_words))
    for i, job_id in enumerate(ids):
        args = tuple(draw(st.lists(_words | _words.map(FileRef), max_size=5)))
        uses = tuple(draw(st.lists(st.builds(
            lambda lfn, kind, flags: Use(lfn, kind, stage_out=kind != "input" and flags[0],
                                         register_replica=kind != "input" and flags[1], optional=flags[2]),
            _words, st.sampled_from(["input", "output", "checkpoint"]),
            st.tuples(st.booleans(), st.booleans(), st.booleans())),
            max_size=3, unique_by=lambda u: u.lfn)))
        profiles = draw(st.dictionaries(st.sampled_from(["env", "condor"]),
                                        st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), _words,
                                                        min_size=1, max_size=2), max_size=2))
        kind = draw(st.sampled_from(["job", "job", "pegasusWorkflow", "condorWorkflow"]))
        if kind == "job":
            job = Job(job_id, draw(_words), draw(st.none() | _words), draw(st.none() | _words), "job", args,
                      uses, profiles, draw(st.none() | _words))
        else:
            file = draw(_words)
            job = Job(job_id, file, type=kind, arguments=args, uses=uses, profiles=profiles, file=file)
        wf.jobs[job_id] = job
        for parent in ids[:i]:
            if draw(st.booleans()):
                wf.add_dependency(parent, job_id)
    return wf


@settings(max_examples=60, deadline=None)
@given(dax_workflows())
def test_round_trip(wf: Workflow) -> None:
    back = loads_dax(dumps_dax(wf))
    assert back.jobs == wf.jobs
    assert {c: sorted(p for p, cs in back.dependencies.items() if c in cs) for c in back.jobs} == \
        {c: sorted(p for p, cs in wf.dependencies.items() if c in cs) for c in wf.jobs}


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="<>/=\"' adag job id name uses file link argument filename child parent ref\n",
               max_size=120))
def test_fuzz_only_format_errors(text: str) -> None:
    try:
        loads_dax(text, source="fuzz")
    except FormatError as error:
        assert error.path == "fuzz"


def test_a_declared_label_key_is_not_warned_about(tmp_path: Path) -> None:
    from sheaf.formats import load_inputs

    dax = tmp_path / "wf.dax"
    dax.write_text(SEED_JOB)
    plain = load_inputs(dax, cwd=tmp_path)
    assert any("'user_label'" in w for w in plain.warnings)
    declared = load_inputs(dax, cwd=tmp_path, defines=["pegasus.clusterer.label.key=user_label"])
    assert not any("'user_label'" in w for w in declared.warnings)


def test_a_dflow_is_one_decaf_data_flow_job_of_its_jobs(tmp_path: Path) -> None:
    """DAX 3.6's <dflow>: its <job>s are jobs of the workflow labelled as one Decaf cluster, its <link>s
    their dependencies -- and the planner makes them that one Decaf job whatever --cluster says."""
    from sheaf.model import Properties, Transformation, TransformationCatalog, TransformationSite
    from sheaf.planner import plan

    path = tmp_path / "wf.dax"
    path.write_text("""<adag name="flow">
  <job id="pre" name="prep"/>
  <dflow id="DF1" name="coupled">
    <job id="sim" name="simulation"><profile namespace="pegasus" key="runtime">10</profile></job>
    <job id="ana" name="analysis"/>
    <link source="sim" target="ana"/>
  </dflow>
  <child ref="sim"><parent ref="pre"/></child>
</adag>
""")
    wf = read_dax(path)
    assert list(wf.jobs) == ["pre", "sim", "ana"]
    for name in ("sim", "ana"):
        assert wf.jobs[name].profiles["pegasus"]["label"] == "DF1"
        assert wf.jobs[name].profiles["pegasus"]["job.aggregator"] == "decaf"
    assert wf.jobs["sim"].profiles["pegasus"]["runtime"] == "10"
    assert "pegasus" not in wf.jobs["pre"].profiles
    assert wf.dependencies == {"pre": ["sim"], "sim": ["ana"]}
    tc = TransformationCatalog()
    for name in ("prep", "simulation", "analysis"):
        tc.add(Transformation(name, sites=(TransformationSite("condorpool", f"/bin/{name}"),)))
    tc.add(Transformation("decaf", namespace="dataflow",
                          sites=(TransformationSite("condorpool", "/x/flow.json"),)))
    exec_wf = plan(wf, tc=tc, sc=None, rc=None, properties=Properties(), sites=["condorpool"])
    (cluster,) = [job for job in exec_wf.jobs if job.type == "cluster"]
    assert cluster.aggregator == "decaf" and [t.id for t in cluster.tasks] == ["sim", "ana"]
    assert any("decaf aggregator" in w for w in exec_wf.warnings)


DAX_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="d">\n'
            '  <job id="ID1" name="t"/>\n')


@pytest.mark.parametrize(("body", "said", "where"), [
    ('  <child ref="ID1">\n    <parent ref="NOPE"/>\n  </child>\n', "names an unknown job", "wf.dax:5:18"),
    ('  <child ref="ID1">\n    <parent ref="ID1"/>\n  </child>\n', "depends on itself", "wf.dax:3:12"),
    ('  <job id="ID2" name="t">\n    <profile namespace="pegasus" key="cores">-3</profile>\n  </job>\n',
     "malformed pegasus profile 'cores' of job 'ID2'", "wf.dax:5:46"),
])
def test_a_broken_model_rule_in_a_dax_is_located_at_its_line(tmp_path: Path, body: str, said: str,
                                                              where: str) -> None:
    """The model's rules, checked after the DAX is read, name the attribute or element that broke them."""
    import subprocess
    import sys

    (tmp_path / "wf.dax").write_text(DAX_HEAD + body + "</adag>\n")
    sheaf = str(Path(sys.executable).with_name("sheaf"))
    done = subprocess.run([sheaf, "validate", str(tmp_path / "wf.dax")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and said in done.stderr and where in done.stderr, done.stderr


COMPOUND = """<adag xmlns="http://pegasus.isi.edu/schema/DAX" version="3.6" name="compound">
  <executable name="decon" installed="false"><pfn url="file:///opt/bin/decon" site="local"/></executable>
  <executable name="iterdecon" installed="false"><pfn url="file:///opt/bin/idecon" site="local"/></executable>
  <job id="ID1" name="decon"><argument>a b</argument><uses name="a" link="input"/></job>
  <job id="ID2" name="other"/>
  <transformation name="decon">
    <uses name="decon"/>
    <uses name="iterdecon"/>
    <uses name="model.conf" executable="false"/>
  </transformation>
  <transformation name="nothing"><uses name="iterdecon"/></transformation>
</adag>
"""


def test_a_compound_transformation_requires_its_executables_and_gives_its_jobs_its_files() -> None:
    """DAX 3.6's <transformation>: its executables (``executable`` defaults to true there) are what its
    entry requires, staged beside its executable; its data files inputs of each of its jobs."""
    warnings: list[str] = []
    wf = loads_dax(COMPOUND, warnings=warnings)
    assert wf.transformation_catalog is not None
    decon = wf.transformation_catalog.lookup(None, "decon", None)
    assert decon is not None and decon.requires == ("iterdecon",)
    assert [use.lfn for use in wf.jobs["ID1"].uses] == ["a", "model.conf"]
    assert wf.jobs["ID2"].uses == ()
    assert len(warnings) == 1 and "<transformation> nothing names no <executable>" in warnings[0]
    again = loads_dax(dumps_dax(wf))
    assert again.transformation_catalog is not None
    assert again.transformation_catalog.lookup(None, "decon", None) == decon


def test_a_job_naming_another_executable_to_stage_is_warned_about() -> None:
    text = DIAMOND.replace('<uses name="keg" link="input" executable="true"/>',
                           '<uses name="preprocess" namespace="diamond" version="4.0" executable="true"/>'
                           '<uses name="helper" executable="true"/>')
    warnings: list[str] = []
    loads_dax(text, warnings=warnings)
    (warning,) = warnings
    assert "job ID1" in warning and "(helper) are not staged" in warning
