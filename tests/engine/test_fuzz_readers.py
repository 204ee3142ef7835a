"""Fuzz the engine's readers: DAG files (with INCLUDE, SPLICE and CONFIG), rescue DAGs, submit
descriptions and the pool configuration.

Each input is built from the grammar's words mixed with hostile ones (non-UTF-8 bytes, NUL, 400- and
5,000-digit numbers, ``1e400``, ``nan``, self-includes, ``ALL_NODES`` where it does not belong, long
runs of blanks).  What must hold for every input: it is read, or refused with sheaf's own error
(``SheafError``; a ClassAd error is ``ClassAdSyntaxError``), and it finishes within a generous bound.
A few of the worst inputs also go through ``sheaf run DIR``: exit code 2, one message, no traceback.
Bounded for CI on 2 cores: 120 examples per reader, no per-example deadline but a total-time check.
Every reader is reached through the public API (``sheaf.engine``, ``sheaf.backends``): the rescue DAG
and the submit description as ``run_workflow`` reads them -- a real run of ``/bin/true`` or
``/bin/false`` on the local backend, whose pool matches each attempt's requests -- and the pool
configuration as ``Pool`` reads and lays it out.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import BLANK_AND_COMMENT_RUNS, examples
from sheaf.backends import LocalBackend, Pool
from sheaf.classad import ClassAdSyntaxError
from sheaf.engine import parse_dag, run_workflow
from sheaf.errors import SheafError

SHEAF = Path(sys.executable).with_name("sheaf")
FUZZ = settings(max_examples=examples(120), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
BOUND = 3.0  # seconds for one input; the slow inputs found by the attack took 7 s to hours

HOSTILE = [b"\xff", b"\xc3\x28", b"\x00", b"\r", b"\t", b"\\", b'"', b"'", b"$(", b"#", b"\xe2\x80\xa8",
           b"\x0c", b"1" * 400, b"9" * 5000, b"1e400", b"-1e400", b"nan", b"inf", b"-1", b"2147483648",
           b" " * 8000, b"ALL_NODES", b"\n", *BLANK_AND_COMMENT_RUNS]
DAG_WORDS = [b"JOB A a.sub", b"JOB B a.sub DIR sub", b"FINAL F a.sub", b"SPLICE S inner.dag",
             b"INCLUDE inc.dag", b"INCLUDE wf.dag", b"SPLICE T wf.dag", b"RETRY A 3 UNLESS-EXIT 2",
             b'VARS A x="1"', b"VARS A",
             b"SCRIPT DEFER 4 30 PRE A /bin/true", b"SCRIPT POST B x", b"PRE_SKIP A 1", b"PRIORITY A 10",
             b"CATEGORY A c", b"MAXJOBS c 2", b"ABORT-DAG-ON A 3 RETURN 1", b"PARENT A CHILD B", b"DONE A",
             b"DONE ALL_NODES", b"RETRY ALL_NODES", b"CONFIG wf.config", b"NODE_STATUS_FILE st",
             b"SUBDAG EXTERNAL D wf.dag", b"DOT d", b"JOBSTATE_LOG j", b"PRIORITY", b"CHILD", b"PARENT"]
SUBMIT_WORDS = [b"executable = /bin/true", b"arguments = \"a 'b c'\"", b"environment = \"A=1\"", b"queue",
                b"queue 2", b"request_memory = ", b"request_cpus = ", b"request_disk = ", b"request_gpus = ",
                b"priority = ", b"universe = ", b"+A = ", b"MY.B = ", b"$(x)", b"$(request_memory)", b"\\",
                b"ifthenelse(DAGNodeRetry > 0, 1e400, 1)", b"1 TB", b'real("nan")', b"getenv = true"]
CONFIG_WORDS = [b"NUM_CPUS = ", b"MEMORY = ", b"SLOT_TYPE_1 = cpus=1, memory=25%", b"NUM_SLOTS_TYPE_1 = ",
                b"SLOT_TYPE_1_PARTITIONABLE = true", b"NUM_SLOTS = ", b"MAX_SLOT_TYPES = ", b"$(NUM_CPUS)",
                b"SLOT1_CPU_AFFINITY = 0-", b"START = TARGET.RequestCpus < 2", b"X_LIMIT = ", b"include : x",
                b"DAGMAN_MAX_JOBS_SUBMITTED = ", b"= ", b"\\"]


def lines(words: list[bytes]) -> st.SearchStrategy[bytes]:
    """Text of lines, each a few words and hostile pieces joined by blanks."""
    piece = st.sampled_from(words + HOSTILE)
    line = st.lists(piece, min_size=1, max_size=5).map(b" ".join)
    return st.lists(line, max_size=12).map(b"\n".join)


def files(tmp_path: Path, **texts: bytes) -> None:
    defaults = {"wf.dag": b"JOB A a.sub\nJOB B a.sub\n", "a.sub": b"executable = /bin/true\nqueue\n"}
    (tmp_path / "sub").mkdir(exist_ok=True)
    for name, data in {**defaults, **{k.replace("_", "."): v for k, v in texts.items()}}.items():
        (tmp_path / name).write_bytes(data)


def settled(read: object, *args: object) -> object:
    """Call the reader: a result or sheaf's own error, within BOUND."""
    started = time.perf_counter()
    try:
        return read(*args)  # type: ignore[operator]
    except (SheafError, ClassAdSyntaxError):
        return None
    finally:
        assert time.perf_counter() - started < BOUND


@FUZZ
@given(dag=lines(DAG_WORDS), inc=lines(DAG_WORDS), config=lines(CONFIG_WORDS))
def test_the_dag_reader_with_includes_splices_and_config(tmp_path: Path, dag: bytes, inc: bytes,
                                                          config: bytes) -> None:
    files(tmp_path, wf_dag=b"CONFIG wf.config\nINCLUDE inc.dag\n" + dag, inc_dag=inc, inner_dag=inc,
          wf_config=config)
    settled(parse_dag, str(tmp_path / "wf.dag"))


def _local() -> LocalBackend:
    return LocalBackend()


def _run(directory: Path) -> object:
    return run_workflow(str(directory), backend=_local, handle_signals=False, on_warning=lambda _: None)


@FUZZ
@given(rescue=lines([b"DONE A", b"RETRY B 2", b"DONE", b"RETRY"]))
def test_the_rescue_reader(tmp_path: Path, rescue: bytes) -> None:
    here = Path(tempfile.mkdtemp(dir=tmp_path))  # a fresh run each example: no journal to resume
    files(here, wf_dag=b"JOB A a.sub\nJOB B a.sub\n")
    (here / "wf.dag.rescue001").write_bytes(rescue)
    settled(_run, here)


@FUZZ
@given(text=lines(SUBMIT_WORDS))
def test_the_submit_reader_and_the_pool_on_its_requests(tmp_path: Path, text: bytes) -> None:
    here = Path(tempfile.mkdtemp(dir=tmp_path))
    # the job fails, so its retry renders the description again (DAGNodeRetry > 0)
    files(here, wf_dag=b"JOB A a.sub\nRETRY A 1\n", a_sub=b"executable = /bin/false\n" + text + b"\nqueue\n")
    settled(_run, here)


@FUZZ
@given(text=lines(CONFIG_WORDS))
def test_the_pool_configuration_reader_and_layout(text: bytes) -> None:
    settled(Pool, text.decode("utf-8", "replace"))


# ---- the worst inputs through the command line ---------------------------------------------------

WORST = {
    "not UTF-8": {"wf.dag": b"JOB A a.sub\n# caf\xe9\n"},
    "VARS without a value": {"wf.dag": b"JOB A a.sub\nVARS A\n"},
    "DONE ALL_NODES": {"wf.dag": b"JOB A a.sub\nDONE ALL_NODES\n"},
    "self include": {"wf.dag": b"JOB A a.sub\nINCLUDE wf.dag\n"},
    "400-digit DEFER": {"wf.dag": b"JOB A a.sub\nSCRIPT DEFER 1 " + b"1" * 400 + b" PRE A /bin/true\n"},
    "400-digit status time": {"wf.dag": b"JOB A a.sub\nNODE_STATUS_FILE st " + b"1" * 400 + b"\n"},
    "NUL in a file name": {"wf.dag": b"JOB A a\x00.sub\n"},
    "infinite memory": {"a.sub": b"executable = /bin/true\nrequest_memory = 1e400\nqueue\n"},
    "400-digit memory": {"a.sub": b"executable = /bin/true\nrequest_memory = " + b"1" * 400 + b"\nqueue\n"},
    "NaN cpus": {"a.sub": b"executable = /bin/true\nrequest_cpus = nan\nqueue\n"},
    "submit not UTF-8": {"a.sub": b"executable = /bin/true\narguments = \xff\nqueue\n"},
    "CONFIG not UTF-8": {"wf.dag": b"CONFIG wf.config\nJOB A a.sub\n", "wf.config": b"X = \xff\n"},
}


SUBMIT_CASES = {"infinite memory", "400-digit memory", "NaN cpus", "submit not UTF-8"}


@pytest.mark.parametrize("name", sorted(WORST))
def test_sheaf_run_meets_the_worst_inputs_with_one_message(tmp_path: Path, name: str) -> None:
    files(tmp_path, **{k.replace(".", "_"): v for k, v in WORST[name].items()})
    done = subprocess.run([str(SHEAF), "run", str(tmp_path)], capture_output=True, text=True, timeout=120,
                          check=False)
    # a submit description is submitted when its node is (DAGMan's condor_submit): warned about as the
    # run starts, it fails only its node; the DAG file's own input is refused up front
    assert done.returncode == (1 if name in SUBMIT_CASES else 2), done.stderr
    kind = "warning" if name in SUBMIT_CASES else "error"
    assert "Traceback" not in done.stderr and done.stderr.startswith(f"sheaf: {kind}:")
    assert ("a.sub" if name in SUBMIT_CASES else "wf.") in done.stderr, done.stderr  # names the file
    assert len(done.stderr.strip().splitlines()) <= 3, done.stderr  # one message (a detail line at most)


def test_a_request_that_turns_infinite_on_retry_fails_that_attempt_and_resumes(tmp_path: Path) -> None:
    files(tmp_path, wf_dag=b"JOB A a.sub\nRETRY A 1\n",
          a_sub=b"executable = /bin/false\nrequest_memory = ifthenelse(DAGNodeRetry > 0, 1e400, 1)\nqueue\n")
    for _ in range(2):  # the run, then a resume from its rescue DAG: neither crashes
        done = subprocess.run([str(SHEAF), "run", str(tmp_path)], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "RequestMemory" in done.stdout + done.stderr and "inf" in done.stdout + done.stderr
