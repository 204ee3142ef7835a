"""``sheaf validate``: summary and exit 0, warnings on stderr, one clear error and exit 2 on bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sheaf.cli import main

CHAPTER = Path(__file__).parent / "data" / "chapter"
DIAMOND = """pegasus: '5.0'
name: blackdiamond
jobs:
- {type: job, namespace: diamond, version: '4.0', name: preprocess, id: ID1, arguments: [-i, f.a],
   uses: [{lfn: f.a, type: input}, {lfn: f.b1, type: output}, {lfn: f.b2, type: output}]}
- {type: job, namespace: diamond, version: '4.0', name: findrange, id: ID2,
   uses: [{lfn: f.b1, type: input}, {lfn: f.c1, type: output}]}
- {type: job, namespace: diamond, version: '4.0', name: findrange, id: ID3,
   uses: [{lfn: f.b2, type: input}, {lfn: f.c2, type: output}]}
- {type: job, namespace: diamond, version: '4.0', name: analyze, id: ID4,
   uses: [{lfn: f.c1, type: input}, {lfn: f.c2, type: input}, {lfn: f.d, type: output}]}
"""
TC = """pegasus: '5.0'
transformations:
- {namespace: diamond, version: '4.0', name: preprocess,
   sites: [{name: condorpool, pfn: /bin/p, type: installed}]}
- {namespace: diamond, version: '4.0', name: findrange,
   sites: [{name: condorpool, pfn: /bin/f, type: installed}], profiles: {pegasus: {clusters_size: 2}}}
- {namespace: diamond, version: '4.0', name: analyze,
   sites: [{name: condorpool, pfn: /bin/a, type: installed}]}
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workflow.yml").write_text(DIAMOND)
    return tmp_path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["validate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_summary(here: Path) -> None:
    (here / "transformations.yml").write_text(TC)
    code, out, err = _run("workflow.yml")
    assert code == 0, err
    assert "jobs: 4 (4 compute, 0 sub-workflow)" in out
    for line in ("files: 6", "edges: 4", "levels: 3", "transformations: 3", "sites: condorpool",
                 f"transformation catalog: {here / 'transformations.yml'}"):
        assert line in out
    assert err == ""


def test_options(here: Path) -> None:
    (here / "tc.yml").write_text(TC)
    (here / "sites.yml").write_text("pegasus: '5.0'\nsites:\n- {name: local, directories: []}\n")
    (here / "conf.properties").write_text("pegasus.catalog.site.file = sites.yml\n")
    code, out, _ = _run("workflow.yml", "--tc", "tc.yml", "-c", "conf.properties", "-D", "dagman.retry=3")
    assert code == 0 and "sites: condorpool, local" in out
    assert "properties: " + str(here / "conf.properties") in out


def test_warnings_go_to_stderr(here: Path) -> None:
    (here / "transformations.yml").write_text((CHAPTER / "tc_runtime_maxruntime.yml").read_text())
    (here / "w.yml").write_text("pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: B}\n")
    code, out, err = _run("w.yml")
    assert code == 0 and "jobs: 1" in out
    assert "sheaf: warning: " in err and "did you mean 'clusters.maxruntime'" in err


@pytest.mark.parametrize(("setup", "args", "words"), [
    ({}, ["missing.yml"], "cannot read file"),
    ({"w.yml": "pegasus: '5.0'\nname: w\njobs:\n"
              "- {type: job, id: a, name: t}\n- {type: job, id: a, name: t}\n"},
     ["w.yml"], "w.yml:5:"),
    ({"w.yml": "pegasus: '5.0'\nname: w\njobs: [\n"}, ["w.yml"], "YAML syntax error"),
    ({"w.yml": "pegasus: '5.0'\nname: w\njobs:\n- {type: job, id: a, name: t}\njobDependencies:\n"
              "- {id: a, children: [a]}\n"}, ["w.yml"], "depends on itself"),
    ({}, ["workflow.yml", "--tc", "nope.yml"], "does not exist"),
    ({}, ["workflow.yml", "-D", "oops"], "-D expects key=value"),
    ({"w.yml": DIAMOND.replace("name: analyze", "name: nothere")}, ["w.yml", "--tc", "tc.yml"],
     "not in the transformation catalog"),
])
def test_bad_input_exit_2(here: Path, setup: dict[str, str], args: list[str], words: str) -> None:
    (here / "tc.yml").write_text(TC)
    for name, text in setup.items():
        (here / name).write_text(text)
    code, out, err = _run(*args)
    assert code == 2
    assert words in err and "Traceback" not in err and err.count("\n") <= 4
    assert out == ""


def test_real_subprocess(here: Path) -> None:
    (here / "transformations.yml").write_text(TC)
    script = "import sys; from sheaf.cli import main; sys.argv[0] = 'sheaf'; main()"
    ok = subprocess.run([sys.executable, "-c", script, "validate", "workflow.yml"], cwd=here,
                        capture_output=True, text=True, timeout=120, check=False)
    assert ok.returncode == 0 and "levels: 3" in ok.stdout
    bad = subprocess.run([sys.executable, "-c", script, "validate", str(CHAPTER / "wf_root_misindented.yml")],
                         cwd=here, capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "wf_root_misindented.yml:2:2: YAML syntax error" in bad.stderr
    assert "Traceback" not in bad.stderr
