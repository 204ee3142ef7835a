"""Keys and features from Pegasus users' inputs: known profile keys are not warned about,
deprecated ones are read under their new names with a warning, features not implemented yet are
a warning naming them -- never silence."""

from __future__ import annotations

from pathlib import Path

import pytest
from Pegasus.api import EventType, Job, Namespace, Transformation, TransformationCatalog, Workflow

from sheaf import formats
from sheaf.planner import plan


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _load(here: Path, wf: Workflow, *defines: str) -> formats.Inputs:
    wf.write(str(here / "workflow.yml"))
    return formats.load_inputs("workflow.yml", cwd=here, defines=defines)


def test_profile_keys_pegasus_knows_are_not_unknown(here: Path) -> None:
    job = Job("keg", _id="J1")
    for key in ("SSH_PRIVATE_KEY", "cluster.arguments", "s3cfg", "pegasus_credentials",
                "transfer.lite.arguments", "nosymlink", "gpus", "BOTO_CONFIG"):
        job.add_profiles(Namespace.PEGASUS, key=key, value="x")
    inputs = _load(here, Workflow("w").add_jobs(job))
    assert not [w for w in inputs.warnings if "unknown" in w], inputs.warnings


def test_job_runtime_is_read_as_runtime_with_a_warning(here: Path) -> None:
    inputs = _load(here, Workflow("w").add_jobs(Job("keg", _id="J1").add_profiles(
        Namespace.PEGASUS, key="job.runtime", value="30")))
    assert inputs.workflow.jobs["J1"].profiles["pegasus"] == {"runtime": "30"}
    assert [w for w in inputs.warnings if "'job.runtime' is deprecated: read as 'runtime'" in w]


def test_deprecated_property_is_read_under_its_new_name(here: Path) -> None:
    inputs = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.job.aggregator=mpiexec")
    assert inputs.properties.get_str("pegasus.clusterer.job.aggregator") == "mpiexec"
    assert ("property pegasus.job.aggregator is deprecated: read as pegasus.clusterer.job.aggregator"
            in inputs.warnings)
    newer = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.job.aggregator=mpiexec",
                  "pegasus.clusterer.job.aggregator=seqexec")
    assert newer.properties.get_str("pegasus.clusterer.job.aggregator") == "seqexec"


def test_a_pegasus_mode_sets_its_properties_under_the_users(here: Path) -> None:
    """Pegasus's configuration reference: development means no retries and no integrity checking,
    tutorial one retry; a property the user sets wins; debug's extra logging is warned about."""
    development = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.mode=development")
    assert development.properties.get_str("dagman.retry") == "0"
    assert development.properties.get_str("pegasus.integrity.checking") == "none"
    assert not [w for w in development.warnings if "pegasus.mode" in w]
    mine = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.mode=development", "dagman.retry=2")
    assert mine.properties.get_str("dagman.retry") == "2"
    tutorial = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.mode=tutorial")
    assert tutorial.properties.get_str("dagman.retry") == "1"
    assert tutorial.properties.get_str("pegasus.integrity.checking") is None
    debug = _load(here, Workflow("w").add_jobs(Job("keg")), "pegasus.mode=debug")
    assert [w for w in debug.warnings if "pegasus.mode = debug" in w and "logging is not implemented" in w]


@pytest.mark.parametrize("define", ["pegasus.integrity.checking=full",
                                    "pegasus.transfer.bypass.input.staging=true"])
def test_data_properties_are_the_data_pass_s_not_warned(here: Path, define: str) -> None:
    inputs = _load(here, Workflow("w").add_jobs(Job("keg")), define)
    assert not [w for w in inputs.warnings if define.split("=", 1)[0] in w]


def test_shell_hooks_of_workflow_jobs_and_transformations_are_not_warned(here: Path) -> None:
    wf = Workflow("w").add_jobs(Job("keg", _id="J1").add_shell_hook(EventType.END, "/bin/date"))
    wf.add_shell_hook(EventType.ALL, "/bin/true")
    assert not [w for w in _load(here, wf).warnings if "hooks" in w]  # sheaf.monitor runs them
    tc = TransformationCatalog().add_transformations(
        Transformation("keg", site="local", pfn="/bin/true", is_stageable=False)
        .add_shell_hook(EventType.END, "/bin/date"))
    inputs = _load(here, wf.add_transformation_catalog(tc))
    assert not [w for w in inputs.warnings if "hooks" in w]  # run as job hooks (tests/monitor/test_hooks.py)


def test_code_generator_pmc_is_the_whole_workflow_in_one_pmc_job(here: Path) -> None:
    wf = Workflow("w").add_jobs(Job("keg", _id="A"), Job("keg", _id="B"))
    inputs = _load(here, wf, "pegasus.code.generator=PMC")
    ew = plan(inputs.workflow, tc=None, sc=None, rc=None, properties=inputs.properties)
    assert [(j.id, j.aggregator, j.task_ids) for j in ew.jobs] == [("merge_whole-wf", "mpiexec", ["A", "B"])]
    assert [w for w in ew.warnings if "pegasus.code.generator = PMC is deprecated" in w]


def test_variables_kickstart_would_replace_in_arguments_are_warned_naming_the_jobs(here: Path) -> None:
    # pegasus-kickstart's manual, "Variable Rewriting": $NAME and ${NAME} in the job's arguments are
    # replaced from the job's environment, except inside single quotes or escaped by a backslash
    wf = Workflow("w").add_jobs(
        Job("mkdir", _id="M1").add_args("-p", "$_PEGASUS_INITIAL_DIR/png/a"),
        Job("keg", _id="K1").add_args("-o", "out.txt", "'$HOME'", "\\$HOME"),
        Job("keg", _id="K2").add_args("-a", "cost:", "5$"))
    warnings = [w for w in _load(here, wf).warnings if "kickstart" in w]
    assert len(warnings) == 1, warnings
    assert "job M1 hold $_PEGASUS_INITIAL_DIR" in warnings[0]
    assert "'$_PEGASUS_INITIAL_DIR' as written" in warnings[0] and "K1" not in warnings[0]
    quiet = Workflow("w").add_jobs(Job("keg", _id="K1").add_args("-o", "out.txt", "'$HOME'"))
    assert not [w for w in _load(here, quiet).warnings if "kickstart" in w]
