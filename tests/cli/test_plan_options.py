"""pegasus-plan's command line as ``sheaf plan`` takes it: each option with its Pegasus meaning, the
submit-directory rules, and one clear refusal for the options sheaf does not implement."""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from plan_lists import data_lists
from sheaf.cli import main
from sheaf.codegen._layout import reserve_run_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled example, the current directory (its catalogs are found there)."""
    copy = tmp_path / "bd"
    shutil.copytree(EXAMPLE, copy)
    monkeypatch.chdir(copy)
    return copy


def plan(*args: str) -> Result:
    return CliRunner().invoke(main, ["plan", *args])


def submit_dir(result: Result) -> Path:
    assert result.exit_code == 0, result.output
    return Path(result.output.split("submit directory: ", 1)[1].split("\n", 1)[0])


def runs(base: Path) -> Path:
    return base / getpass.getuser() / "pegasus" / "blackdiamond"


def test_dir_is_a_base_and_each_plan_gets_the_next_run_number(work: Path, tmp_path: Path) -> None:
    (runs(tmp_path / "b") / "run0009").mkdir(parents=True)  # Pegasus counts on from the highest
    (runs(tmp_path / "b") / "run-old").mkdir()
    first = submit_dir(plan("workflow.yml", "--dir", str(tmp_path / "b"), "-q"))
    second = submit_dir(plan("--dax", "workflow.yml", "--dir", str(tmp_path / "b"), "-q"))
    assert (first, second) == (runs(tmp_path / "b") / "run0010", runs(tmp_path / "b") / "run0011")
    assert (first / "plan.json").is_file() and (second / "braindump.yml").is_file()


def test_without_dir_the_base_is_the_current_directory_and_workflow_yml_the_workflow(work: Path) -> None:
    assert submit_dir(plan("-q")) == runs(work) / "run0001"


def test_relative_submit_dir_overrides_relative_dir(work: Path, tmp_path: Path) -> None:
    named = submit_dir(plan("--dir", str(tmp_path), "--relative-dir", "a", "--relative-submit-dir", "b/c"))
    assert named == tmp_path / "b" / "c"
    assert submit_dir(plan("--dir", str(tmp_path), "--relative-dir", "/abs")) == tmp_path / "abs"


def test_concurrent_plans_never_share_a_run_directory(tmp_path: Path) -> None:
    made: list[str] = []
    threads = [threading.Thread(target=lambda: made.append(reserve_run_dir(str(tmp_path))))
               for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(os.path.basename(p) for p in made) == [f"run{n:04d}" for n in range(1, 17)]


def test_pegasus_4_dash_d_naming_the_workflow_file_is_read_as_dax(work: Path) -> None:
    result = plan("-d", "workflow.yml", "-q")
    assert submit_dir(result) == runs(work) / "run0001"
    assert "pegasus-plan's -d (--dax)" in result.output


@pytest.mark.parametrize("args", [("-d", "workflow.yml", "--dir", "b"), ("--dir", "b", "-d", "workflow.yml")])
def test_dash_d_naming_a_file_beside_dir_is_the_workflow_and_dir_the_base(work: Path, args: tuple[str, ...]
                                                                          ) -> None:
    shutil.copy("workflow.yml", "other.yml")
    os.rename("workflow.yml", "wf.yml")  # no default workflow to fall back on
    words = ["other.yml" if word == "workflow.yml" else word for word in args]
    result = plan(*words, "-q")
    assert submit_dir(result) == runs(work / "b") / "run0001"
    assert "-d other.yml: read as pegasus-plan's -d (--dax), which is deprecated" in result.output


def test_dash_d_and_dir_naming_two_bases_is_refused(work: Path) -> None:
    result = plan("-d", "a", "--dir", "b")
    assert result.exit_code == 2 and "two submit directory bases named: -d a and --dir b" in result.output
    assert not (work / "a").exists() and not (work / "b").exists()


def test_dash_d_naming_a_missing_workflow_file_is_refused(work: Path) -> None:
    """``-d missing.yml``: a workflow that does not exist, not a base to create (pegasus-plan's -d)."""
    result = plan("-d", "missing.yml")
    assert result.exit_code == 2 and "-d missing.yml: no such file" in result.output
    assert not (work / "missing.yml").exists() and not (work / "root").exists()


def test_pegasus_plan_shims_dash_d_is_the_deprecated_dax(work: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    assert subprocess.run([str(Path(sys.executable).parent / "sheaf"), "shims", str(bindir)], check=False,
                          capture_output=True).returncode == 0
    os.rename("workflow.yml", "wf.yml")
    for dash_d in (["-d", "wf.yml"], ["-dwf.yml"]):
        done = subprocess.run([str(bindir / "pegasus-plan"), *dash_d, "--dir", "runs"], capture_output=True,
                              text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "pegasus-plan: warning: -d wf.yml: -d (--dax) is deprecated" in done.stderr
        assert f"pegasus-run  {runs(work / 'runs')}" in done.stdout
    missing = subprocess.run([str(bindir / "pegasus-plan"), "-d", "nope.yml", "--dir", "runs"],
                             capture_output=True, text=True, check=False, timeout=120)
    assert missing.returncode == 2 and "nope.yml" in missing.stderr and "Traceback" not in missing.stderr


def test_abbreviated_long_options_define_anywhere_and_comma_lists(work: Path, tmp_path: Path) -> None:
    target = submit_dir(plan("--dir", str(tmp_path), "--output-site", "local", "--relative-d", "p",
                             "--sites", "condorpool", "-Dpegasus.mode=production", "--cluster", "horizontal",
                             "--staging-site", "condorpool=local", "--cleanup", "leaf", "-O", "out",
                             "--randomdir=xyz", "-b", "diamond", "--force", "--force-replan", "-I", "input"))
    doc = json.loads((target / "plan.json").read_text())
    assert doc["output_sites"] == ["local"] and doc["clustering"] == ["horizontal"]
    assert doc["options"] == {"staging_sites": {"condorpool": "local"}, "output_dir": str(work / "out"),
                              "cleanup": "leaf", "random_dir": "xyz", "input_dirs": [str(work / "input")],
                              "force": True, "force_replan": True, "basename": "diamond", "exec_dir": "xyz",
                              "replica_output": {"file": str(target / "blackdiamond.replicas.yml"),
                                                 "format": "yaml"}}
    assert (target / "diamond.dag").is_file()  # --basename names the per-workflow files


def test_a_basename_that_is_no_file_name_is_made_one_with_a_warning(work: Path, tmp_path: Path) -> None:
    result = plan("--dir", str(tmp_path), "-b", "../../evil")
    assert result.exit_code == 0, result.output
    target = submit_dir(result)
    assert (target / "_.._evil.dag").is_file() and not list(tmp_path.parent.glob("evil*"))
    assert "--basename '../../evil' is not a file name" in result.output


def test_randomdir_is_acted_on_without_a_warning(work: Path, tmp_path: Path) -> None:
    result = plan("--dir", str(tmp_path), "--randomdir=xyz", "-q")
    assert result.exit_code == 0 and "--randomdir" not in result.output
    assert json.loads((submit_dir(result) / "plan.json").read_text())["options"]["exec_dir"] == "xyz"


def test_recorded_options_say_what_the_plan_does_with_them(work: Path, tmp_path: Path) -> None:
    result = plan("--dir", str(tmp_path), "--staging-site", "local", "--nocleanup", "-o", "local", "-q")
    assert "--staging-site is for condorio and nonsharedfs" in result.output  # sharedfs ignores it
    assert "--output-sites" not in result.output and "--cleanup" not in result.output  # both acted on
    doc = json.loads((submit_dir(result) / "plan.json").read_text())
    assert doc["options"]["staging_sites"] == {"*": "local"} and doc["options"]["cleanup"] == "none"


def test_input_dirs_repeated_and_comma_separated_first_holding_a_file_wins(work: Path,
                                                                           tmp_path: Path) -> None:
    empty, second = tmp_path / "empty", tmp_path / "second"
    empty.mkdir()
    second.mkdir()
    (second / "f.a").write_text("from second\n")
    (work / "replicas.yml").unlink()
    target = submit_dir(plan("--dir", str(tmp_path), "--input-dir", f"{empty},{second}", "-I", "input", "-q"))
    pairs = "".join(data_lists(target, "stage_in"))
    assert str(second / "f.a") in pairs


def test_directory_catalog_settings_are_warned_about_for_input_dirs_too(work: Path, tmp_path: Path) -> None:
    # pegasus-plan reads --input-dir through its Directory replica catalog, with every
    # pegasus.catalog.replica.* property: pegasus.catalog.replica.directory.site names the site of its files
    (work / "replicas.yml").unlink()
    result = plan("--dir", str(tmp_path), "--input-dir", "input", "-q",
                  "-Dpegasus.catalog.replica.directory.site=waisman")
    assert result.exit_code == 0, result.output
    assert ("property pegasus.catalog.replica.directory.site = waisman is not implemented (ignored)"
            in result.output)
    quiet = plan("--dir", str(tmp_path), "-q", "-Dpegasus.catalog.replica.directory.site=waisman")
    assert "directory.site" not in quiet.output


@pytest.mark.parametrize("option", ["--job-prefix", "-j", "--forward", "-F", "--rescue", "-g", "--group"])
def test_options_sheaf_does_not_implement_are_refused_naming_them(work: Path, tmp_path: Path,
                                                                  option: str) -> None:
    result = plan("--dir", str(tmp_path / "b"), option, "x")
    assert result.exit_code == 2
    long = {"-j": "--job-prefix", "-F": "--forward", "-g": "--group"}
    assert f"option {long.get(option, option)} is not supported" in result.output
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--cleanup", "sometimes"], "none, inplace, leaf, constraint"),
    (["--nocleanup", "--cleanup", "leaf"], "contradicts"),
    (["--staging-site", "a=b,a=c"], "two staging sites for a"),
    (["--staging-site", "a="], "SITE=STAGING_SITE"),
    (["--staging-site", "condorpool=nosite", "-Dpegasus.data.configuration=nonsharedfs"],
     "the staging site of site condorpool is not in the site catalog"),
    (["--staging-site", "condorpool=nosite"],
     "the staging site of site condorpool is not in the site catalog"),
    (["--staging-site", "condorpool", "-Dpegasus.data.configuration=condorio"],
     "under condorio the staging site of site condorpool is the submit host"),
    (["--reuse", "."], "not a submit directory"),
    (["--conf", "/dev/zero"], "/dev/zero: not a regular file but a device"),  # it would never end
    (["-D", "pegasus.runtime=abc"], "malformed pegasus profile 'runtime' of the properties"),
    (["-Dpegasus.clusters.size=abc", "-C", "horizontal"],
     "malformed pegasus profile 'clusters.size' of the properties"),
    (["--tc", "/dev/null"], "the transformation catalog given on the command line is not a regular file"),
    (["--dax", "other.yml", "workflow.yml"], "two workflows"),
    (["--dax", "workflow.yml", "workflow.yml"], "two workflows named: workflow.yml and --dax workflow.yml"),
    (["-d", "workflow.yml", "workflow.yml"],
     "two workflows named: the workflow workflow.yml and -d workflow.yml"),
    (["--nosuchoption"], "No such option"),
])
def test_bad_options_are_one_message_and_nothing_written(work: Path, tmp_path: Path, args: list[str],
                                                         message: str) -> None:
    result = plan("--dir", str(tmp_path / "b"), *args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "b").exists()


def test_reuse_of_an_earlier_plan_that_registered_nothing_is_warned_about(work: Path, tmp_path: Path) -> None:
    earlier = submit_dir(plan("--dir", str(tmp_path), "-q"))
    result = plan("--dir", str(tmp_path), "--reuse", str(earlier))
    assert result.exit_code == 0, result.output
    assert f"--reuse {earlier}: its plan registers no outputs; nothing reused from it" in result.stderr
    (earlier / "plan.json").write_text("{not json")
    result = plan("--dir", str(tmp_path / "c"), "--reuse", str(earlier))
    assert result.exit_code == 2 and f"--reuse {earlier}: its plan.json cannot be read" in result.output
    assert not (tmp_path / "c").exists()


def test_json_prints_what_pegasus_plan_prints(work: Path, tmp_path: Path) -> None:
    from Pegasus import braindump

    result = CliRunner().invoke(main, ["plan", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)  # nothing else on stdout
    target = Path(printed["submit_dir"])
    assert printed["pegasus-run"] == f"pegasus-run --json {target}" and "message" in printed
    assert printed["dax_label"] == "blackdiamond" and printed["dag"] == "blackdiamond.dag"
    loaded = braindump.load((target / "braindump.yml").open())
    assert str(loaded.submit_dir) == str(target) and loaded.wf_uuid == printed["wf_uuid"]


def test_verbosity_quiet_prints_only_the_directory_and_version(work: Path, tmp_path: Path) -> None:
    quiet = plan("--dir", str(tmp_path), "-q").output.splitlines()
    assert quiet[0].startswith("submit directory: ") and len(quiet) == 2
    loud = plan("--dir", str(tmp_path), "-vv").output
    assert "abstract jobs: 10" in loud and "note:" in loud
    assert CliRunner().invoke(main, ["plan", "-V"]).output.startswith("sheaf ")


@pytest.mark.parametrize(("extended", "pattern"), [
    (False, r"\d{8}T\d{6}[+-]\d{4}"), (True, r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")])
def test_use_timestamp_names_the_run_directory_by_the_planning_time(work: Path, tmp_path: Path,
                                                                    extended: bool, pattern: str) -> None:
    defines = ["-Dpegasus.dir.useTimestamp=true", f"-Dpegasus.dir.timestamp.extended={str(extended).lower()}"]
    first = submit_dir(plan(*defines, "--dir", str(tmp_path), "-q"))
    second = submit_dir(plan(*defines, "--dir", str(tmp_path), "-q"))  # never the same directory
    assert first.parent == second.parent == runs(tmp_path) and first != second
    assert re.fullmatch(pattern, first.name), first.name
    assert second.name == f"{first.name}-2" or re.fullmatch(pattern, second.name), second.name
    assert (first / "plan.json").is_file() and (second / "plan.json").is_file()


def _scratch_sites(work: Path, scratch: Path) -> None:
    from Pegasus.api import Directory, FileServer, Operation, Site, SiteCatalog

    shared = Directory(Directory.SHARED_SCRATCH, str(scratch)).add_file_servers(
        FileServer(f"file://{scratch}", Operation.ALL))
    SiteCatalog().add_sites(Site("local"), Site("condorpool").add_directories(shared)).write(
        str(work / "sites.yml"))


@pytest.mark.parametrize(("args", "expected"), [
    ((), "{user}/pegasus/blackdiamond/run0001"),                  # the relative submit directory
    (("--relative-dir", "mine/r1"), "mine/r1"),
    (("--relative-submit-dir", "sub"), "{user}/pegasus/blackdiamond/run0001"),  # still the default
    (("--randomdir=fixed",), "fixed"),
    (("--relative-dir", "mine/r1", "--randomdir"), "blackdiamond-0-{uuid}"),     # over --relative-dir
])
def test_jobs_run_in_the_relative_execution_directory_under_shared_scratch(
        work: Path, tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    scratch = tmp_path / "scratch"
    _scratch_sites(work, scratch)
    target = submit_dir(plan("--dir", str(tmp_path / "b"), "-s", "condorpool", *args))
    braindump = (target / "braindump.yml").read_text()
    wf_uuid = json.loads(braindump.split("wf_uuid: ", 1)[1].split("\n", 1)[0])
    relative = expected.format(user=getpass.getuser(), uuid=wf_uuid)
    doc = json.loads((target / "plan.json").read_text())
    assert doc["options"]["exec_dir"] == relative
    dag = "".join(path.read_text() for path in [*target.glob("*.dag"), *target.rglob("*.sub")])
    assert f"{scratch / relative}\n" in dag or f"{scratch / relative}\"" in dag, dag[:2000]
    if args[:1] == ("--relative-dir",) and len(args) == 2:  # and the jobs really run there
        done = subprocess.run([str(Path(sys.executable).parent / "sheaf"), "run", str(target)],
                              capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "analyze on" in (scratch / relative / "f.d").read_text()


@pytest.mark.parametrize(("dir_exec", "expected"), [("work/here", "{scratch}/work/here/r1"),
                                                   ("{abs}", "{abs}/r1")])
def test_dir_exec_is_appended_to_the_work_directory_or_replaces_it(work: Path, tmp_path: Path,
                                                                   dir_exec: str, expected: str) -> None:
    scratch, absolute = tmp_path / "scratch", tmp_path / "elsewhere"
    _scratch_sites(work, scratch)
    given = dir_exec.format(abs=absolute)
    target = submit_dir(plan("--dir", str(tmp_path / "b"), "-s", "condorpool", "--relative-dir", "r1",
                             f"-Dpegasus.dir.exec={given}"))
    where = Path(expected.format(scratch=scratch, abs=absolute))
    done = subprocess.run([str(Path(sys.executable).parent / "sheaf"), "run", str(target)],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "analyze on" in (where / "f.d").read_text()


@pytest.mark.parametrize(("args", "exec_dir"), [
    (("--randomdir", "workflow.yml"), "blackdiamond-0-"),   # bare: a generated name; the word is the workflow
    (("-r", "workflow.yml"), "blackdiamond-0-"),
    (("--random", "workflow.yml"), "blackdiamond-0-"),      # a unique prefix, read as GNU getopt reads it
    (("--randomdir=mine", "workflow.yml"), "mine"),
    (("-rmine", "workflow.yml"), "mine"),
])
def test_randomdir_takes_its_optional_value_only_attached(work: Path, tmp_path: Path, args: tuple[str, ...],
                                                           exec_dir: str) -> None:
    """pegasus-plan reads ``--randomdir`` with GNU getopt's optional argument: a value is attached
    (``--randomdir=NAME``, ``-rNAME``), never the next word, which stays the workflow."""
    result = plan("--dir", str(tmp_path), "-q", *args)
    assert result.exit_code == 0, result.output
    doc = json.loads((submit_dir(result) / "plan.json").read_text())
    assert doc["options"]["exec_dir"].startswith(exec_dir) and doc["workflow"] == "blackdiamond"


def test_transformations_dir_makes_each_file_a_stageable_transformation(tmp_path: Path) -> None:
    """``--transformations-dir DIR``: each file in DIR is a stageable transformation on site local, as
    Pegasus's transformation factory adds them; a job whose executable is only there plans and runs."""
    from Pegasus.api import File, Job, Workflow

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "shout").write_text("#!/bin/sh\ntr a-z A-Z < \"$1\" > \"$2\"\n")
    (tools / "shout").chmod(0o755)
    (tmp_path / "in.txt").write_text("hello\n")
    wf = Workflow("tdir")
    wf.add_jobs(Job("shout").add_args(File("in.txt"), File("out.txt"))
                .add_inputs(File("in.txt")).add_outputs(File("out.txt")))
    wf.write(str(tmp_path / "wf.yml"))
    (tmp_path / "rc.txt").write_text(f'in.txt file://{tmp_path / "in.txt"} site="local"\n')
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    sheaf = str(Path(sys.executable).parent / "sheaf")
    done = subprocess.run([sheaf, "plan", "wf.yml", "--dir", "runs", "--relative-dir", "p", "--rc", "rc.txt",
                           "--transformations-dir", "tools", "--output-dir", "out", "-s", "local"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sheaf, "run", "runs/p"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "out.txt").read_text() == "HELLO\n"
    refused = subprocess.run([sheaf, "plan", "wf.yml", "--dir", "runs", "-t", "missing"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "--transformations-dir missing" in refused.stderr


def test_a_comment_only_cache_file_is_an_empty_replica_catalog(work: Path, tmp_path: Path) -> None:
    """The cache a plan writes for a sub-workflow with no outputs holds only comments; passed to the next
    sibling's plan with ``--cache`` it is an empty replica catalog, not an error."""
    cache = tmp_path / "sibling.cache"
    cache.write_text("# file-based replica catalog: 2026-12-05T12:00:00\n# (no outputs)\n\n")
    result = plan("--dir", str(tmp_path / "b"), "--cache", str(cache), "-q")
    assert result.exit_code == 0, result.output


def test_a_default_output_site_without_storage_is_named_as_such(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a site catalog, condorpool is Pegasus's default site, which has no storage directory:
    the message says so, not that the site is missing."""
    from Pegasus.api import Job, Transformation, TransformationCatalog, Workflow

    monkeypatch.chdir(tmp_path)
    TransformationCatalog().add_transformations(Transformation("t", site="condorpool", pfn="/bin/true")) \
        .write("transformations.yml")
    Workflow("w").add_jobs(Job("t")).write("workflow.yml")
    result = plan("--dir", str(tmp_path / "b"), "--sites", "condorpool", "--output-sites", "condorpool")
    assert result.exit_code == 2, result.output
    assert "the output site has no local storage directory (the default site" in result.output
    assert not (tmp_path / "b").exists()


def test_properties_in_the_environment_are_over_conf_and_under_define(work: Path) -> None:
    os.remove("replicas.yml")
    Path("other.rc").write_text(f'f.a file://{work}/input/f.a site="local"\n')
    Path("c.properties").write_text("pegasus.catalog.replica.file = nosuch.rc\n")
    env = {"_PEGASUS__CATALOG__REPLICA__FILE": "other.rc"}
    unstaged = "input file 'f.a' of job 'ID0000001' has no replica"  # planning fails without it

    def run(*args: str) -> Result:
        return CliRunner().invoke(main, ["plan", "--conf", "c.properties", "-q", *args], env=env)

    assert unstaged not in run().output
    assert unstaged in run("-Dpegasus.catalog.replica.file=nosuch.rc").output


def test_a_property_value_refers_to_properties_and_system_properties(work: Path) -> None:
    os.remove("replicas.yml")
    Path("other.rc").write_text(f'f.a file://{work}/input/f.a site="local"\n')
    with open("pegasus.properties", "a", encoding="utf-8") as file:
        file.write("my.rc = ${user.dir}/other.rc\n")
    Path("c.properties").write_text("pegasus.catalog.replica.file = ${my.rc}\nx.y = a${no.such}b\n")
    result = plan("--conf", "c.properties", "-q")
    assert result.exit_code == 0 and "has no replica" not in result.output
    assert ("c.properties: x.y = a${no.such}b: ${no.such} names no property nor system property sheaf "
            "defines; replaced by nothing") in result.output


def test_a_malformed_property_value_names_the_layer_that_set_it(work: Path) -> None:
    Path("c.properties").write_text("pegasus.transfer.threads = 2\npegasus.register = maybe\n")
    result = plan("-Dpegasus.transfer.threads=abc", "-q")
    assert result.exit_code == 2
    assert ("-D: malformed property 'pegasus.transfer.threads' (rule: must be an integer): 'abc'"
            in result.output)
    result = plan("--conf", "c.properties", "-q")
    assert result.exit_code == 2 and "workflow.yml" not in result.output
    assert f"{work / 'c.properties'}:2: malformed property 'pegasus.register'" in result.output
    # the line of the setting that counts: the last, where its logical line starts
    Path("c.properties").write_text("pegasus.register = maybe\n# again\npegasus.register = \\\n  never\n")
    result = plan("--conf", "c.properties", "-q")
    assert result.exit_code == 2
    said = f"{work / 'c.properties'}:3: malformed property 'pegasus.register' (rule: must be true or false)"
    assert f"{said}: 'never'" in result.output, result.output
    assert not (work / getpass.getuser()).exists()


def test_properties_sheaf_does_not_read_are_warned_about_by_name(work: Path) -> None:
    given = {"pegasus.file.cleanup.strategy": "Constraint", "pegasus.selector.transformation": "Installed",
             "pegasus.dir.submit.mapper": "Flat", "pegasus.dir.submit.logs": "/tmp/logs",
             "pegasus.dir.create.strategy": "HourGlass", "pegasus.transfer.stagein.impl": "GUC",
             "pegasus.catalog.site": "JDBC", "pegasus.catalog.transformation": "Directory",
             "dagman.post.scope": "none", "pegasus.metrics.app.name": "x", "pegasus.monitord.events": "false",
             "pegasus.catalog.workflow.url": "sqlite:///x.db"}
    result = plan(*(f"-D{key}={value}" for key, value in given.items()), "-q")
    assert result.exit_code == 0, result.output
    for key, value in given.items():
        assert f"property {key} = {value} is not implemented yet (ignored)" in result.output
    quiet = plan("-Dpegasus.selector.transformation=Random", "-Dpegasus.transfer.inter.impl=Transfer", "-q")
    assert "is not implemented yet" not in quiet.output


def test_more_properties_of_the_configuration_reference_sheaf_does_not_read_are_warned(work: Path) -> None:
    """Each changes what Pegasus does: where its files go, where its transfers run, which edges it
    adds, which tools it deploys and runs, how it runs notifications."""
    given = {"pegasus.dir.submit.mapper.hashed.levels": "3", "pegasus.dir.staging.mapper": "Hashed",
             "pegasus.dir.staging.mapper.hashed.multiplier": "7",
             "pegasus.transfer.stagein.remote.sites": "condorpool", "pegasus.transfer.*.remote.sites": "*",
             "pegasus.transfer.container.onhost": "false", "pegasus.transfer.worker.package": "true",
             "pegasus.transfer.disable.chmod.sites": "condorpool", "pegasus.file.cleanup.impl": "RM",
             "pegasus.parser.dax.data.dependencies": "false", "pegasus.monitord.notifications.max": "3",
             "pegasus.monitord.notifications.timeout": "60"}
    result = plan(*(f"-D{key}={value}" for key, value in given.items()), "-q")
    assert result.exit_code == 0, result.output
    for key, value in given.items():
        assert f"property {key} = {value} is not implemented yet (ignored)" in result.output
    defaults = {"pegasus.dir.staging.mapper": "Flat", "pegasus.transfer.container.onhost": "true",
                "pegasus.transfer.worker.package": "false", "pegasus.file.cleanup.impl": "Cleanup",
                "pegasus.parser.dax.data.dependencies": "true", "pegasus.monitord.notifications.max": "10",
                "pegasus.monitord.notifications.timeout": "0"}
    quiet = plan(*(f"-D{key}={value}" for key, value in defaults.items()), "-q")
    assert quiet.exit_code == 0 and "is not implemented yet" not in quiet.output, quiet.output


def test_a_cleanup_scope_pegasus_does_not_define_is_read_as_fullahead_as_pegasus_reads_it(work: Path) -> None:
    result = plan("-Dpegasus.file.cleanup.scope=inplace", "-q")
    assert result.exit_code == 0, result.output
    assert ("property pegasus.file.cleanup.scope = inplace is not a value Pegasus defines (fullahead, "
            "deferred): read as fullahead, as Pegasus reads it") in result.output
    assert "is not implemented yet" not in result.output
    deferred = plan("-Dpegasus.file.cleanup.scope=deferred", "-q")
    assert ("property pegasus.file.cleanup.scope = deferred is not implemented yet (ignored)"
            in deferred.output)


def test_monitoring_destinations_sheaf_does_not_feed_are_warned_about_by_name(work: Path) -> None:
    # Pegasus's monitoring guide: pegasus-monitord sends the workflow's events to an AMQP endpoint
    # (pegasus.catalog.workflow.amqp.url) and to the dashboard's database (pegasus.catalog.master.url)
    given = {"pegasus.catalog.workflow.amqp.url": "amqp://friend:donatedata@msgs.example.org:5672/prod/workflows",
             "pegasus.catalog.master.url": "sqlite:///home/me/.pegasus/workflow.db",
             "pegasus.monitord.output": "sqlite:///x.db", "pegasus.dashboard.output": "sqlite:///y.db"}
    Path("c.properties").write_text("".join(f"{key} = {value}\n" for key, value in given.items()))
    result = plan("--conf", "c.properties", "-q")
    assert result.exit_code == 0, result.output
    for key, value in given.items():
        assert f"property {key} = {value} is not implemented yet (ignored)" in result.output
    assert "never to a queue" in result.output


def test_a_pegasus_mode_pegasus_does_not_define_is_refused(work: Path) -> None:
    result = plan("-Dpegasus.mode=fast", "-q")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert ("-D: unknown pegasus.mode (rule: pegasus.mode is one of production, development, tutorial, "
            "debug): 'fast'") in result.output
    assert not (work / getpass.getuser()).exists()


def _with_store(work: Path, tmp_path: Path) -> Path:
    """A site ``store`` with a local storage directory in the example's site catalog."""
    store = tmp_path / "store"
    with open(work / "sites.yml", "a", encoding="utf-8") as file:
        file.write(f"- name: store\n  directories:\n  - type: localStorage\n    path: {store}\n"
                   f"    fileServers:\n    - url: file://{store}\n      operation: all\n")
    return store


def _delivered_to(target: Path) -> set[tuple[str, str]]:
    """(site label, directory) of every place the plan's stage-out jobs deliver into."""
    entries = [e for text in data_lists(target, "stage_out") for e in json.loads(text)]
    return {(u["site_label"], os.path.dirname(u["url"].removeprefix("file://"))) for e in entries
            for u in e["dest_urls"]}


@pytest.mark.parametrize(("args", "where", "recorded"), [
    # several output sites: -O is local's storage directory, the others keep theirs
    (["-o", "local,store", "-O", "out"], {("local", "{W}/out"), ("store", "{S}")}, "{W}/out"),
    (["-o", "store", "-O", "relsub"], {("store", "{S}/relsub")}, "{S}/relsub"),  # one: under its storage
    (["-o", "store", "-O", "{T}/abs"], {("store", "{T}/abs")}, "{T}/abs"),
    (["-O", "out"], {("local", "{W}/out")}, "{W}/out"),                           # none: local's
])
def test_output_dir_replaces_one_output_sites_storage_directory(work: Path, tmp_path: Path, args: list[str],
                                                                where: set[tuple[str, str]],
                                                                recorded: str) -> None:
    store = _with_store(work, tmp_path)

    def path(text: str) -> str:
        return text.format(W=work, T=tmp_path, S=store)

    target = submit_dir(plan("--dir", str(tmp_path / "b"), "--sites", "condorpool", *map(path, args), "-q"))
    assert _delivered_to(target) == {(label, path(directory)) for label, directory in where}
    assert json.loads((target / "plan.json").read_text())["options"]["output_dir"] == path(recorded)


@pytest.mark.parametrize("outputs", ["condorpool", "local,condorpool"])
def test_output_dir_makes_no_storage_directory_for_a_site_without_one(work: Path, tmp_path: Path,
                                                                     outputs: str) -> None:
    result = plan("--dir", str(tmp_path / "b"), "--sites", "condorpool", "-o", outputs, "-O",
                  str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    assert "the output site has no local storage directory" in result.output
    assert "'condorpool'" in result.output
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(("text", "line"), [
    ('# a cache\nf.a file:///data/f.a site="local"\n',
     """line 2 is a replica catalog's, not a property: 'f.a file:///data/f.a site="local"'"""),
    ("pegasus: '5.0'\nreplicas:\n  - lfn: f.a\n    pfns:\n      - {site: local, pfn: /data/f.a}\n",
     "line 2 is a replica catalog's, not a property: 'replicas:'"),
])
def test_a_replica_catalog_given_as_conf_is_warned_about_naming_cache(work: Path, text: str,
                                                                       line: str) -> None:
    """pegasus-plan's -c is --cache; sheaf's is --conf: a replica file there is read as properties, and
    the warning says so."""
    Path("cache.rc").write_text(text)
    result = plan("-c", "cache.rc", "-q")
    assert result.exit_code == 0, result.output
    assert f"{work / 'cache.rc'}: {line}" in result.output
    assert "pegasus-plan's -c is --cache" in result.output
    assert "replica catalog" not in plan("-c", "pegasus.properties", "-q").output
    help_text = " ".join(plan("--help").output.split())
    assert "pegasus-plan's -c is --cache" in help_text


@pytest.mark.parametrize(("args", "message"), [
    (["--randomdir={T}/abs"], "--randomdir '{T}/abs': an absolute path would put the jobs' working"),
    (["--randomdir=a/../../x"], "--randomdir 'a/../../x': a '..' part would put the jobs' working directory"),
    (["-r../x"], "--randomdir '../x': a '..' part"),
    (["--relative-dir", "../x"], "--relative-dir '../x': a '..' part"),
    (["--relative-dir", "/a/../../x"], "--relative-dir '/a/../../x': a '..' part"),
])
def test_an_execution_directory_outside_the_sites_working_directory_is_refused(
        work: Path, tmp_path: Path, args: list[str], message: str) -> None:
    """Jobs run, and leaf cleanup removes, under the execution directory: it stays under each site's
    working directory."""
    result = plan("--dir", str(tmp_path / "b"), "--cleanup", "leaf",
                  *(arg.format(T=tmp_path) for arg in args))
    assert result.exit_code == 2 and message.format(T=tmp_path) in result.output, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists() and not (tmp_path / "x").exists()


def test_an_absolute_relative_dir_is_under_the_sites_working_directory(work: Path, tmp_path: Path) -> None:
    """As under BASE for the submit directory, pegasus-plan joins it under the site's scratch directory."""
    scratch = tmp_path / "scratch"
    with open(work / "sites.yml", "a", encoding="utf-8") as file:
        file.write(f"- name: pool\n  directories:\n  - type: sharedScratch\n    path: {scratch}\n"
                   f"    fileServers:\n    - url: file://{scratch}\n      operation: all\n")
    tc = Path("transformations.yml")
    tc.write_text(tc.read_text().replace("condorpool", "pool"))
    target = submit_dir(plan("--dir", str(tmp_path / "b"), "--sites", "pool", "--relative-dir", "/rel", "-q"))
    assert target == tmp_path / "b" / "rel"
    entries = [e for text in data_lists(target, "stage_in") for e in json.loads(text)]
    assert entries and {os.path.dirname(e["dest_urls"][0]["url"]) for e in entries} == {f"file://{scratch}/rel"}
    assert json.loads((target / "plan.json").read_text())["options"]["exec_dir"] == "rel"


def test_a_staging_site_for_a_site_no_job_is_planned_on_is_warned_about(work: Path, tmp_path: Path) -> None:
    result = plan("--dir", str(tmp_path), "--sites", "condorpool", "--staging-site",
                  "nosuch=local,condorpool=local", "-Dpegasus.data.configuration=nonsharedfs", "-q")
    assert result.exit_code == 0, result.output
    assert ("--staging-site names sites no job is planned on: nosuch (planned: condorpool); their staging "
            "sites are not used") in result.output
    assert "planned on" not in plan("--dir", str(tmp_path), "--staging-site", "condorpool=local",
                                    "-Dpegasus.data.configuration=nonsharedfs", "-q").output


@pytest.mark.parametrize(("value", "what"), [("/dev/null", "is not a regular file but a device"),
                                             ("input", "is not a regular file but a directory"),
                                             ("nosuch.rc", "does not exist")])
def test_a_catalog_property_naming_no_regular_file_says_what_it_names(work: Path, value: str,
                                                                       what: str) -> None:
    result = plan(f"-Dpegasus.catalog.replica.file={value}", "--input-dir", "input", "-q")
    assert result.exit_code == 0, result.output
    path = value if os.path.isabs(value) else str(work / value)
    assert (f"{path}: the replica catalog named by the property pegasus.catalog.replica.file {what}; "
            "planning without it") in result.output


# --- what pegasus-plan refuses, refused with one message naming the file, the line, the rule and the
# value: an unknown or database replica catalog type, a file that is both input and output of one job,
# a job whose transformation no catalog has, a malformed profile value, a misspelt data configuration in
# a properties file, and arguments given as a string


def _plan_out(*args: str) -> Result:
    return plan("--dir", "out", "-q", *args)


def _refused(result: Result, *words: str) -> None:
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert all(w in result.output for w in words), result.output
    assert not Path("out").exists()


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _edit(work: Path, old: str, new: str) -> Path:
    path = work / "workflow.yml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("kind", ["Fiel", "Databse"])
def test_an_unknown_replica_catalog_type_is_refused_with_its_line(work: Path, kind: str) -> None:
    Path("c.properties").write_text(f"# mine\npegasus.catalog.replica = {kind}\n")
    _refused(_plan_out("--conf", "c.properties"), "c.properties:2", "pegasus.catalog.replica", repr(kind),
             "YAML", "File", "Regex", "Directory")
    _refused(_plan_out(f"-Dpegasus.catalog.replica={kind}"), "pegasus.catalog.replica", repr(kind))


@pytest.mark.parametrize("kind", ["JDBCRC", "MRC"])
def test_a_pegasus_replica_catalog_type_sheaf_lacks_is_refused_by_name(work: Path, kind: str) -> None:
    Path("c.properties").write_text(f"pegasus.catalog.replica = {kind}\n")
    _refused(_plan_out("--conf", "c.properties"), "c.properties:1", kind, "not implemented")


def test_simplefile_is_pegasus_file_replica_catalog(work: Path) -> None:
    Path("c.properties").write_text("pegasus.catalog.replica = SimpleFile\n")
    assert _plan_out("--conf", "c.properties").exit_code == 0


def test_a_file_both_input_and_output_of_one_job_is_refused(work: Path) -> None:
    path = _edit(work, "  - lfn: f.a\n", "  - lfn: f.a\n    type: output\n  - lfn: f.a\n")
    _refused(_plan_out("workflow.yml"), "f.a", "input and output", "ID0000001", f"{path}:")


def test_a_job_whose_transformation_is_not_in_the_catalog_names_it_at_the_jobs_line(work: Path) -> None:
    path = _edit(work, "  name: preprocess\n", "  name: preprocesz\n")
    line = _line(path, "id: ID0000001")
    _refused(_plan_out("workflow.yml"), f"{path}:{line}:", "not in the transformation catalog",
             ": 'diamond::preprocesz:4.0'")


def test_a_malformed_profile_value_of_a_job_is_located(work: Path) -> None:
    path = _edit(work, "  id: ID0000001\n", "  id: ID0000001\n  profiles: {dagman: {RETRY: three}}\n")
    _refused(_plan_out("workflow.yml"), f"{path}:{_line(path, 'RETRY: three')}:", "'three'")


def test_a_misspelt_data_configuration_names_the_properties_file_and_line(work: Path) -> None:
    Path("c.properties").write_text("\npegasus.data.configuration = nonsharedf\n")
    _refused(_plan_out("--conf", "c.properties"), "c.properties:2", "'nonsharedf'")


def test_arguments_given_as_a_string_cite_the_arguments(work: Path) -> None:
    path = _edit(work, "  id: ID0000001\n  arguments:\n", "  id: ID0000001\n  arguments: hello\n  x-args:\n")
    _refused(_plan_out("workflow.yml"), f"{path}:{_line(path, 'arguments: hello')}:", "'hello'")
