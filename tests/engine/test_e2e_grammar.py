"""The DAG grammar's newer commands end to end: ``sheaf run`` on hand-written DAGs, real processes.

Our own versions of DAGMan's test scenarios: inline and SUBMIT-DESCRIPTION descriptions, continued
lines, commands before their JOB line, ``queue N`` and ``queue ... in`` as one node of several procs,
if/else and ``$CHOICE`` in a submit description, ENV SET, several DAG files in one run, and the
refusals (a clear message naming the line, exit code 2, nothing run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).parent / "sheaf")


def sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory), *args], capture_output=True, text=True, check=False,
                          timeout=120)


def _append(out: Path, text: str) -> str:
    return f'universe = local\nexecutable = /bin/sh\narguments = "-c \'echo {text} >> {out}\'"\n'


def test_inline_descriptions_continuations_and_forward_references(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "wf.dag").write_text(
        "RETRY B 1\n"
        "VARS B word=\"bee\"\n"
        "PARENT A \\\n  CHILD B\n"
        "SUBMIT-DESCRIPTION shared {\n" + _append(out, "$(word)") + "}\n"
        "JOB A {\n" + _append(out, "inline-a") + "}\n"
        "JOB B shared\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "inline-a\nbee\n"


def test_queue_n_is_one_node_of_several_procs(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "p.sub").write_text(_append(out, "p$(Process)") + "queue 3\n")
    (tmp_path / "i.sub").write_text(_append(out, "$(Item)") + "queue in (x, y)\n")
    (tmp_path / "wf.dag").write_text("JOB P p.sub\nJOB I i.sub\nPARENT P CHILD I\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().split()
    assert sorted(lines[:3]) == ["p0", "p1", "p2"] and sorted(lines[3:]) == ["x", "y"]


def test_a_failing_proc_fails_its_node(tmp_path: Path) -> None:
    (tmp_path / "p.sub").write_text('universe = local\nexecutable = /bin/sh\n'
                                    'arguments = "-c \'exit $(Process)\'"\nqueue 3\n')
    (tmp_path / "wf.dag").write_text("JOB P p.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr


def test_if_else_choice_and_env_set(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "c.sub").write_text(
        "if defined fancy\n  word = $CHOICE(1, zero, one)\nelse\n  word = plain\nendif\n"
        + _append(out, "$(word)-$ENV(SHEAF_TEST_ENV)") + "queue\n")
    (tmp_path / "wf.dag").write_text("ENV SET SHEAF_TEST_ENV=set\nJOB A c.sub\nVARS A fancy=\"1\"\n"
                                     "JOB B c.sub\n"
                                     "PARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "one-set\nplain-set\n"


def test_submit_commands_sheaf_does_not_honour_are_named(tmp_path: Path) -> None:
    """Nothing silently ignored: ``hold = true`` or a ``deferral_time`` is named in a warning, once a
    submit file, with its line; ``hold = false`` needs none."""
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nhold = true\n"
                                    "deferral_time = 0\nqueue\n")
    (tmp_path / "b.sub").write_text("universe = local\nexecutable = /bin/true\nhold = false\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB A2 a.sub\nJOB B b.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [line for line in done.stderr.splitlines() if "is not honoured" in line]
    tail = "is not honoured by sheaf run (it is ignored)"
    head = f"sheaf: warning: {tmp_path / 'a.sub'}"
    assert warned == [f"{head}:3: submit command hold = true {tail}",
                      f"{head}:4: submit command deferral_time = 0 {tail}"], done.stderr


def test_a_gpu_request_is_named_as_not_honoured(tmp_path: Path) -> None:
    """HTCondor runs a job that asks for GPUs only on a slot that has them; sheaf's slots have none, so
    the job runs without one and the warning says so, with the submit file's line; 0 GPUs needs none."""
    (tmp_path / "g.sub").write_text("universe = vanilla\nexecutable = /bin/true\nrequest_gpus = 1\nqueue\n")
    (tmp_path / "z.sub").write_text("universe = vanilla\nexecutable = /bin/true\nrequest_gpus = 0\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB G g.sub\nJOB Z z.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [line for line in done.stderr.splitlines() if "request_gpus" in line]
    said = (f"sheaf: warning: {tmp_path / 'g.sub'}:3: submit command request_gpus = 1 is not honoured by "
            "sheaf run (it is ignored): its slots have no GPUs to match, and the job runs without one")
    assert warned == [said], done.stderr


def test_a_noop_nodes_submit_file_is_never_read(tmp_path: Path) -> None:
    """A NOOP node is never submitted, so DAGMan reads no submit file for it: /dev/null or a missing
    file draws no warning."""
    (tmp_path / "wf.dag").write_text("JOB A /dev/null NOOP\nJOB B missing.sub NOOP\nPARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stdout + done.stderr


def test_an_old_syntax_environment_may_name_its_own_delimiter_first(tmp_path: Path) -> None:
    """HTCondor reads a V1 environment's first character, when it is one of its permitted delimiters,
    as the delimiter (``|A=x;y|B=z``): in DAGMan's ENV SET and in a job's ``environment``."""
    (tmp_path / "show.sh").write_text('#!/bin/sh\necho "$GAMES/$MORE/$OWN" > env.out\n')
    (tmp_path / "show.sh").chmod(0o755)
    (tmp_path / "e.sub").write_text("universe = local\nexecutable = show.sh\n"
                                    "environment = !OWN=a;b!X=1\ngetenv = GAMES,MORE\nqueue\n")
    (tmp_path / "wf.dag").write_text("ENV SET |GAMES=Blue;Red;|MORE=Gold\nJOB A e.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "env.out").read_text() == "Blue;Red;/Gold/a;b\n"


def test_choice_takes_condor_submits_platform_macros_and_an_expression_as_index(tmp_path: Path) -> None:
    """condor_submit predefines ``IsLinux``/``IsWindows`` (``SubmitMacroDefaults``), and a
    ``$CHOICE`` index that is no integer is evaluated (``string_is_long_param``): the DAGMan tests'
    ``executable = $CHOICE(IsWindows, /bin/echo, ...)`` runs /bin/echo on Linux."""
    out = tmp_path / "out.txt"
    (tmp_path / "c.sub").write_text(
        "universe = local\nexecutable = $CHOICE(IsWindows,/bin/echo,appendmsg)\n"
        "arguments = $CHOICE(IsLinux,no,yes) $CHOICE(1+1,a,b,c) $CHOICE(true,a,b) $(OPSYS)\n"
        f"output = {out}\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A c.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "yes c b LINUX\n"


def test_a_description_name_defined_twice_follows_dagmans_precedence(tmp_path: Path) -> None:
    """One name space of SUBMIT-DESCRIPTIONs: in a DAG file (and its INCLUDEs) the later definition
    replaces the earlier; a splice's never replaces its including DAG's, even one defined before the
    SPLICE line (DAGMan lifts splices after parsing); both are warned about, not refused."""
    out = tmp_path / "out.txt"
    (tmp_path / "splice.dag").write_text(
        f"SUBMIT-DESCRIPTION say {{\n{_append(out, 'splice')}}}\nJOB S say\n")
    (tmp_path / "wf.dag").write_text(
        f"JOB A say\nSUBMIT-DESCRIPTION say {{\n{_append(out, 'first')}}}\n"
        f"SUBMIT-DESCRIPTION say {{\n{_append(out, 'top')}}}\nSPLICE X splice.dag\nPARENT A CHILD X\n")
    done = sheaf_run(tmp_path, "--dag", "wf.dag")
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "top\ntop\n"
    assert "defined again" in done.stderr
    assert "defined by an including DAG too; that one is used" in done.stderr


def test_dollar_dollar_in_arguments_is_expanded_before_the_text_is_split(tmp_path: Path) -> None:
    """The schedd expands ``$$()`` in the arguments text and the starter splits it afterwards: a
    reference that expands to nothing (a node without parents) is no argument, a quoted one is an
    empty argument."""
    out = tmp_path / "out.txt"
    script = tmp_path / "args.sh"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "<%s>" "$a" >> {out}; done\necho >> {out}\n')
    script.chmod(0o755)
    (tmp_path / "a.sub").write_text(
        f"universe = vanilla\nexecutable = {script}\n"
        "arguments = \"$(JOB) $$([DAGParentNodeNames]) '$$([DAGParentNodeNames])' end\"\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "<A><><end>\n<B><A><A><end>\n"


def test_config_env_and_set_job_attr_in_a_splice_take_no_effect(tmp_path: Path) -> None:
    """The manual: CONFIG, ENV and SET_JOB_ATTR are read at condor_submit_dag time, so in a spliced DAG
    they take no effect; a splice's second CONFIG file is no conflict, and each line is warned about."""
    out = tmp_path / "out.txt"
    (tmp_path / "c.sub").write_text(_append(out, "$ENV(SHEAF_TEST_ENV)-") + "queue\n")
    (tmp_path / "top.config").write_text("DAGMAN_MAX_JOBS_SUBMITTED = 1\n")
    (tmp_path / "splice.config").write_text("DAGMAN_MAX_JOBS_SUBMITTED = 2\n")
    (tmp_path / "splice.dg").write_text("CONFIG splice.config\nENV SET SHEAF_TEST_ENV=set\n"
                                         "SET_JOB_ATTR Spliced = 1\nJOB A c.sub\n")
    (tmp_path / "wf.dag").write_text("CONFIG top.config\nSPLICE S splice.dg\nNODE_STATUS_FILE wf.status\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "-\n"
    assert "Spliced" not in (tmp_path / "wf.status").read_text()
    log = (tmp_path / "wf.dag.dagman.out").read_text()
    for line, keyword in ((1, "CONFIG"), (2, "ENV"), (3, "SET_JOB_ATTR")):
        assert f"splice.dg:{line}: {keyword} in a splice takes no effect" in log


def _run_two_dag_files(tmp_path: Path, a_dag: str, b_dag: str, config: str = "") -> None:
    """``sheaf run --dag a.dag --dag b.dag`` in one name space (DAGMAN_MUNGE_NODE_NAMES = False in the
    first file's CONFIG, so b may name a's nodes); it must succeed."""
    (tmp_path / "a.dag").write_text("CONFIG a.config\n" + a_dag)
    (tmp_path / "a.config").write_text("DAGMAN_MUNGE_NODE_NAMES = False\n" + config)
    (tmp_path / "b.dag").write_text(b_dag)
    done = sheaf_run(tmp_path, "--dag", "a.dag", "--dag", "b.dag")
    assert done.returncode == 0, done.stderr


def test_several_dag_files_run_as_one(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(_append(out, "a") + "queue\n")
    (tmp_path / "b.sub").write_text(_append(out, "b") + "queue\n")
    _run_two_dag_files(tmp_path, "JOB A a.sub\n", "JOB B b.sub\nPARENT A CHILD B\n")
    assert out.read_text() == "a\nb\n"
    assert list(tmp_path.glob(".sheaf/a.dag_multi.journal"))


def test_a_later_dag_files_settings_for_an_earlier_files_node_win(tmp_path: Path) -> None:
    """condor_submit_dag a.dag b.dag reads b.dag after a.dag: b's VARS and PRIORITY for a.dag's node
    are later lines of the one DAG, so they override a's (with DAGMan's warnings)."""
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(_append(out, "$(v)") + "queue\n")
    _run_two_dag_files(tmp_path, 'JOB A a.sub\nVARS A v="from-a"\nPRIORITY A 1\n',
                       'VARS A v="from-b"\nPRIORITY A 5\n', config="DAGMAN_USE_STRICT = 0\n")
    assert out.read_text() == "from-b\n"
    log = (tmp_path / "a.dag.dagman.out").read_text()
    assert "b.dag:2: new PRIORITY 5 for node A overrides old value 1" in log


def test_refusals_name_the_line_and_run_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(_append(out, "a") + "queue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B a.sub\nREJECT\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 2
    assert "wf.dag:3" in done.stderr and "REJECT" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_node_is_no_dag_command(tmp_path: Path) -> None:
    """DAGMan's keyword table has JOB and no NODE: ``NODE A a.sub`` is an unknown command at its line,
    in DAGMan's words, and nothing runs."""
    out = tmp_path / "out.txt"
    (tmp_path / "a.sub").write_text(_append(out, "a") + "queue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n\nNODE B a.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "wf.dag:3: 'NODE' is not a valid DAG command" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_unhonoured_config_knob_is_warned(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.config").write_text("DAGMAN_FROBNICATE = 1\n")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "DAGMAN_FROBNICATE" in done.stderr


def _config_run(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    """Three independent nodes that record their starts and ends, under the CONFIG file ``config``."""
    (tmp_path / "a.sub").write_text('universe = local\nexecutable = /bin/sh\narguments = "-c \'echo start >> '
                                    'log; sleep 0.3; echo end >> log\'"\nqueue\n')
    (tmp_path / "wf.config").write_text(config)
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\nJOB B a.sub\nJOB C a.sub\n")
    return sheaf_run(tmp_path)


@pytest.mark.parametrize("config", ["N = 1\nDAGMAN_MAX_JOBS_SUBMITTED = $(N)\n",
                                    "DAGMAN_MAX_JOBS_SUBMITTED = $(UNSET:1)\n",
                                    "DAGMAN_MAX_JOBS_SUBMITTED = \\\n   1\n"])
def test_a_config_file_is_read_in_htcondors_configuration_language(tmp_path: Path, config: str) -> None:
    """Macros (``$(N)``, a default) and continued lines, as condor_config reads them: one job at a time,
    and a name only other values use is a macro, no knob to warn about."""
    done = _config_run(tmp_path, config)
    assert done.returncode == 0, done.stderr
    assert "not honoured" not in done.stderr
    assert (tmp_path / "log").read_text().split() == ["start", "end"] * 3


@pytest.mark.parametrize(("config", "line", "value"), [
    ("# throttles\nDAGMAN_MAX_JOBS_SUBMITTED = many\n", 2, "'many'"),
    ("\nDAGMAN_ALWAYS_RUN_POST = yes\n", 2, "'yes'"),
    ("DAGMAN_REPORT_GRAPH_METRICS = on\n", 1, "'on'"),  # read only as the run ends: checked at its start
    ("DAGMAN_USE_STRICT = 1\nDAGMAN_MAX_JOBS_SUBMITTED = -2\n", 2, "'-2'"),
    ("include : other.config\n", 1, "include : other.config"),
    ("\n\nDAGMAN_MAX_JOBS_IDLE = $(POOL_IDLE)\n", 3, "'$(POOL_IDLE)'"),  # no system configuration read
])
def test_a_bad_config_value_is_refused_at_its_line(tmp_path: Path, config: str, line: int,
                                                   value: str) -> None:
    """HTCondor reads a boolean as true, false, 1 or 0 (``yes`` is no boolean to it)."""
    done = _config_run(tmp_path, config)
    assert done.returncode == 2
    assert f"wf.config:{line}:" in done.stderr and value in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "log").exists()


@pytest.mark.parametrize("value", ["TRUE", "true ", "1", "False", "0"])
def test_config_booleans_as_htcondor_reads_them(tmp_path: Path, value: str) -> None:
    done = _config_run(tmp_path, f"DAGMAN_ALWAYS_RUN_POST = {value}\n")
    assert done.returncode == 0, done.stderr
