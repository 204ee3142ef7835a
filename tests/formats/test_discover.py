"""Catalog discovery and property layering (docs/command-line.md), and inline/standalone merging."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import formats
from sheaf.errors import InputError, UsageError

WF = """pegasus: '5.0'
name: w
transformationCatalog:
  transformations:
  - {name: keg, sites: [{name: inline-site, pfn: /inline/keg, type: installed}]}
  - {name: only-inline, sites: [{name: inline-site, pfn: /inline/x, type: installed}]}
replicaCatalog:
  replicas:
  - {lfn: f.a, pfns: [{site: inline, pfn: /inline/f.a}]}
jobs:
- {type: job, id: a, name: keg, uses: [{lfn: f.a, type: input}]}
"""
TC = "pegasus: '5.0'\ntransformations:\n- {name: keg, sites: [{name: %s, pfn: /%s/keg, type: installed}]}\n"
SC = "pegasus: '5.0'\nsites:\n- {name: %s, directories: []}\n"


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "wf.yml").write_text(WF)
    return tmp_path


def test_nothing_but_the_workflow(here: Path) -> None:
    inputs = formats.load_inputs("wf.yml", cwd=here)
    assert inputs.tc is inputs.workflow.transformation_catalog and inputs.sc is None
    assert inputs.paths["tc"] is None and inputs.paths["properties"] is None
    assert len(inputs.properties) == 0


def test_default_file_names_in_cwd(here: Path) -> None:
    (here / "transformations.yml").write_text(TC % ("cwd", "cwd"))
    (here / "sites.yml").write_text(SC % "cwd-site")
    (here / "replicas.yml").write_text("f.a /cwd/f.a site=\"cwd\"\n")
    inputs = formats.load_inputs("wf.yml", cwd=here)
    assert inputs.paths["tc"] == str(here / "transformations.yml")
    keg = inputs.tc.lookup(None, "keg", None)  # type: ignore[union-attr]
    assert keg is not None and keg.sites[0].pfn == "/cwd/keg"  # standalone wins
    assert inputs.tc.lookup(None, "only-inline", None) is not None  # type: ignore[union-attr]  # inline fills in
    assert inputs.sc is not None and "cwd-site" in inputs.sc
    # the workflow's own replica wins, as Pegasus's locations in the workflow override the catalog's
    assert [p.pfn for p in inputs.rc.lookup("f.a")] == ["/inline/f.a"]  # type: ignore[union-attr]


def test_property_beats_default_and_option_beats_property(here: Path) -> None:
    (here / "transformations.yml").write_text(TC % ("cwd", "cwd"))
    (here / "prop-tc.yml").write_text(TC % ("prop", "prop"))
    (here / "opt-tc.yml").write_text(TC % ("opt", "opt"))
    (here / "pegasus.properties").write_text("pegasus.catalog.transformation.file = prop-tc.yml\n")
    by_property = formats.load_inputs("wf.yml", cwd=here)
    assert by_property.tc.lookup(None, "keg", None).sites[0].pfn == "/prop/keg"  # type: ignore[union-attr]
    by_option = formats.load_inputs("wf.yml", cwd=here, tc="opt-tc.yml")
    assert by_option.tc.lookup(None, "keg", None).sites[0].pfn == "/opt/keg"  # type: ignore[union-attr]


def test_properties_layers(here: Path) -> None:
    (here / "pegasus.properties").write_text("a = base\nb = base\nc = base\n")
    (here / "conf.properties").write_text("b = conf\nc = conf\n")
    inputs = formats.load_inputs("wf.yml", cwd=here, conf="conf.properties", defines=["c=define", "d = x"])
    assert dict(inputs.properties) == {"a": "base", "b": "conf", "c": "define", "d": "x"}
    assert inputs.properties.sources == (str(here / "pegasus.properties"), str(here / "conf.properties"),
                                         "-D")
    # a property file named on -D is honoured too (the layers are merged before discovery)
    (here / "d-sites.yml").write_text(SC % "from-define")
    inputs = formats.load_inputs("wf.yml", cwd=here, defines=["pegasus.catalog.site.file=d-sites.yml"])
    assert inputs.sc is not None and "from-define" in inputs.sc


def test_missing_catalogs_an_option_is_an_error_a_property_a_warning(here: Path) -> None:
    with pytest.raises(InputError, match="given on the command line does not exist"):
        formats.load_inputs("wf.yml", cwd=here, sc="nope.yml")
    # as in Pegasus: a catalog named by a property but absent is planned without, and said so
    inputs = formats.load_inputs("wf.yml", cwd=here, defines=["pegasus.catalog.replica.file=gone.txt"])
    assert inputs.paths["rc"] is None  # the inline entries only
    assert [w for w in inputs.warnings if str(here / "gone.txt") in w and
            "pegasus.catalog.replica.file does not exist" in w]
    with pytest.raises(UsageError, match="key=value"):
        formats.load_inputs("wf.yml", cwd=here, defines=["novalue"])


def test_undeclared_transformation_with_a_catalog(here: Path) -> None:
    (here / "wf2.yml").write_text("pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: keg}\n"
                                  "- {type: job, id: b, name: missing}\n")
    (here / "tc.yml").write_text(TC % ("x", "x"))
    inputs = formats.load_inputs("wf2.yml", cwd=here, tc="tc.yml")
    with pytest.raises(InputError) as info:
        formats.validate_inputs(inputs)
    assert "'missing', not in the transformation catalog" in str(info.value) and info.value.line == 5


def test_malformed_profile_value_is_rejected(here: Path) -> None:
    (here / "wf3.yml").write_text("pegasus: '5.0'\nname: w\njobs:\n- type: job\n  id: a\n  name: keg\n"
                                  "  profiles:\n    pegasus: {clusters.size: three}\n")
    with pytest.raises(InputError) as info:
        formats.validate_inputs(formats.load_inputs("wf3.yml", cwd=here))
    assert "clusters.size" in str(info.value) and info.value.line == 8
