"""HTCondor submit descriptions: parsing, macro expansion, arguments/environment tokenising, the ad."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheaf.engine._submit import (
    disk_kb,
    memory_mb,
    parse_submit,
    proc_rows,
    render,
    split_arguments,
    split_environment,
)
from sheaf.errors import FormatError


@pytest.mark.parametrize(("value", "argv"), [
    # new syntax (HTCondor manual examples)
    ('"3 simple arguments"', ["3", "simple", "arguments"]),
    ('"one \'two with spaces\' 3"', ["one", "two with spaces", "3"]),
    ('"one \'\'\'quoted\'\'\'"', ["one", "'quoted'"]),
    ('"\'\' empty"', ["", "empty"]),
    ('"a ""b"" c"', ["a", '"b"', "c"]),
    ('"don\'\'t"', ["dont"]),
    # old syntax
    ('a b  c', ["a", "b", "c"]),
    ('one \\"two\\" \'three\'', ["one", '"two"', "'three'"]),
    ('', []),
])
def test_arguments(value: str, argv: list[str]) -> None:
    assert split_arguments(value) == argv


@pytest.mark.parametrize("value", ['"unterminated', '"a \'b"', 'old "bare" quote'])
def test_bad_arguments(value: str) -> None:
    with pytest.raises(FormatError):
        split_arguments(value)


def _new_syntax(args: list[str]) -> str:
    """Quote per the manual: each arg in single quotes, ' doubled, " doubled; all in double quotes."""
    return '"' + " ".join("'" + a.replace("'", "''").replace('"', '""') + "'" for a in args) + '"'


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12), max_size=6))
def test_new_syntax_round_trip(args: list[str]) -> None:
    assert split_arguments(_new_syntax(args)) == args


@given(st.lists(st.text(alphabet="abc xyz=-_/.", min_size=1, max_size=8)
                .filter(lambda w: w.strip() == w and " " not in w), max_size=6))
def test_old_syntax_is_whitespace_split(words: list[str]) -> None:
    assert split_arguments("  ".join(words)) == words


def test_environment_both_forms() -> None:
    assert split_environment("A=1;B=two words;C=") == {"A": "1", "B": "two words", "C": ""}
    expected = {"A": "1", "B": "x y", "C": '"q"', "D": "its"}
    assert split_environment('"A=1 B=\'x y\' C=""q"" D=it\'\'s"') == expected
    with pytest.raises(FormatError):
        split_environment('"novalue"')


def test_sizes() -> None:
    assert memory_mb("2GB") == "2048" and memory_mb("512") == "512" and memory_mb("1.5G") == "1536"
    expression = "ifthenelse(DAGNodeRetry == 0, 1024, 4096)"
    assert memory_mb(expression) == expression
    assert disk_kb("100") == "100" and disk_kb("1MB") == "1024" and disk_kb("2G") == str(2 * 1024 * 1024)


SUB = """\
# a comment
Universe   = vanilla
Executable = bin/$(tool)
Arguments  = "-i $(input) 'x y' -n $(Cluster).$(Process)"
Environment = "PATH=/usr/bin HOME=$(home:/tmp)"
getenv     = false
InitialDir = work
Output     = $(JOB_ID).out
error      = $(JOB_ID).err
request_memory = ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)
request_cpus = 2
request_disk = 1GB
requirements = (TARGET.Arch == "X86_64") && \\
               (TARGET.OpSys == "LINUX")
rank = Memory
concurrency_limits = pegasus_transfer.stagein:2
priority = 5
+pegasus_site = "condorpool"
MY.Extra = 1 + 2
JOB_ID = job_$(tool)
tool = kickstart
queue
"""


def test_render_expands_vars_and_builds_the_ad(tmp_path: Path) -> None:
    (tmp_path / "j.sub").write_text(SUB)
    desc = parse_submit(str(tmp_path / "j.sub"))
    job = render(desc, "N1", 2, 17, str(tmp_path), {"input": "f a.txt", "+DAGNodeRetry": "$(RETRY)",
                                                   "tool": "override"})
    assert job.argv == (str(tmp_path / "bin" / "override"), "-i", "f", "a.txt", "x y", "-n", "17.0")
    assert job.env == {"PATH": "/usr/bin", "HOME": "/tmp"}
    assert job.cwd == str(tmp_path / "work") and job.stdout == str(tmp_path / "work" / "job_override.out")
    assert job.site == "condorpool"
    ad = job.ad
    assert ad.eval("DAGNodeRetry") == 2 and ad.eval("RequestMemory") == 4096
    assert ad.eval("RequestCpus") == 2 and ad.eval("RequestDisk") == 1024 * 1024
    assert ad.eval("ConcurrencyLimits") == "pegasus_transfer.stagein:2" and ad.eval("JobPrio") == 5
    assert ad.eval("Extra") == 3 and ad.eval("JobUniverse") == 5 and ad.eval("DAGNodeName") == "N1"
    first = render(desc, "N1", 0, 1, str(tmp_path), {}).ad
    assert first.eval("RequestMemory") == 1024


@pytest.mark.parametrize(("text", "rule"), [
    ("executable = /bin/true\n", "a submit description ends with queue"),
    ("arguments = x\nqueue\n", "a submit description names its executable"),
    ("executable = /bin/true\nqueue abc\n", "queue [N] [vars in|from|matching items]"),
    ("executable = /bin/true\nqueue\nqueue\n",
     "one queue statement per node's submit description (one cluster per node)"),
    ("executable = /bin/true\nif $(x) == 3\nendif\nqueue\n",
     "if [!] defined NAME | version OP x.y.z | true/false/yes/no/integer (after $(macro) expansion)"),
    ("executable = /bin/true\nif true\nqueue\n", "queue is not inside if ... endif"),
    ("executable = /bin/true\nelse\nqueue\n", "elif, else and endif follow an if"),
    ("executable = /bin/true\nthis is not a command\nqueue\n", "key = value"),
])
def test_bad_submit_files(tmp_path: Path, text: str, rule: str) -> None:
    (tmp_path / "j.sub").write_text(text)
    with pytest.raises(FormatError) as info:
        parse_submit(str(tmp_path / "j.sub"))
    assert info.value.rule == rule and info.value.path == str(tmp_path / "j.sub")


def test_local_universe_and_getenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEAF_TEST_VAR", "yes")
    (tmp_path / "j.sub").write_text("universe = local\nexecutable = /bin/true\ngetenv = SHEAF_TEST_*\n"
                                    "environment = A=1;B=2\nqueue\n")
    job = render(parse_submit(str(tmp_path / "j.sub")), "N", 0, 1, str(tmp_path), {})
    assert job.universe == "local" and job.env == {"SHEAF_TEST_VAR": "yes", "A": "1", "B": "2"}
    assert job.ad.eval("JobUniverse") == 12


@pytest.mark.parametrize(("lines", "argv", "env"), [
    ("args = a b\nenv = X=1\n", ("/bin/true", "a", "b"), {"X": "1"}),  # the short names alone
    ("args = a b\narguments = c\nenv = X=1\nenvironment = Y=2\n", ("/bin/true", "c"), {"Y": "2"}),
    ("args = a\narguments =\nenv = X=1\nenvironment =\n", ("/bin/true",), {}),  # set, to nothing
    ('args = a\narguments = ""\n', ("/bin/true",), {}),
    ("arguments = $(word)\nenvironment = W=$(word)\n", ("/bin/true", "w0"), {"W": "w0"}),
])
@pytest.mark.parametrize("memo", [True, False])
def test_arguments_and_environment_fall_back_to_args_and_env(
        tmp_path: Path, lines: str, argv: tuple[str, ...], env: dict[str, str], memo: bool) -> None:
    """``args``/``env`` are read only where ``arguments``/``environment`` are not set at all; node after
    node of a shared description (its template learnt at the second) as on a fresh expansion."""
    (tmp_path / "j.sub").write_text(f"executable = /bin/true\n{lines}queue\n")
    desc = parse_submit(str(tmp_path / "j.sub"))
    for node in range(4):
        job = render(desc, f"N{node}", 0, node + 1, str(tmp_path), {"word": "w0"}, memo=memo)
        assert (job.argv, job.env) == (argv, env)


def test_bad_expression_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "j.sub").write_text("executable = /bin/true\nrequirements = (Memory >\nqueue\n")
    desc = parse_submit(str(tmp_path / "j.sub"))
    with pytest.raises(FormatError) as info:
        render(desc, "N", 0, 1, str(tmp_path), {})
    assert (info.value.line, info.value.rule) == (2, "the value is a ClassAd expression")


# ---- resource requests ------------------------------------------------------------------------

BAD_REQUESTS = [
    ("request_memory", "1e400"), ("request_memory", "1" * 400), ("request_memory", "nan"),
    ("request_memory", "inf"), ("request_memory", "-1"), ("request_memory", "1e399 TB"),
    ("request_memory", "9" * 5000), ("request_cpus", "1e400"), ("request_cpus", "-INF"),
    ("request_disk", 'real("nan")'), ("request_gpus", "nan"), ("priority", "1 +"), ("priority", "1e400"),
]


@pytest.mark.parametrize(("key", "value"), BAD_REQUESTS)
def test_bad_request_values_are_refused_when_the_description_is_expanded(tmp_path: Path, key: str,
                                                                         value: str) -> None:
    path = tmp_path / "a.sub"
    path.write_text(f"executable = /bin/true\n{key} = {value}\nqueue\n")
    desc = parse_submit(str(path))
    with pytest.raises(FormatError) as caught:
        render(desc, "A", 0, 1, str(tmp_path), {})
    assert (caught.value.path, caught.value.line, caught.value.value) == (str(path), 2, value)
    assert caught.value.rule and key in caught.value.rule


def test_a_request_that_turns_bad_at_run_time_makes_that_attempt_unrunnable(tmp_path: Path) -> None:
    from sheaf.backends._pool import Pool
    path = tmp_path / "a.sub"
    path.write_text("executable = /bin/true\n"
                    "request_memory = ifthenelse(DAGNodeRetry > 0, 1e400, 1)\nqueue\n")
    desc = parse_submit(str(path))
    pool = Pool("NUM_CPUS = 2\nMEMORY = 4000\n")
    first = render(desc, "A", 0, 1, str(tmp_path), {}).ad
    claim = pool.claim(first)
    assert claim is not None
    pool.release(claim)
    retry = render(desc, "A", 1, 2, str(tmp_path), {}).ad
    assert pool.claim(retry) is None  # was: ValueError: cannot convert float NaN to integer
    reason = pool.unrunnable(retry)
    assert reason is not None and "RequestMemory" in reason and "inf" in reason


@pytest.mark.parametrize(("data", "line", "word"), [
    (b"executable = /bin/true\narguments = caf\xe9\nqueue\n", 2, "UTF-8"),
    (b"executable = /bin/true\narguments = a\x00b\nqueue\n", 2, "NUL"),
])
def test_a_submit_description_that_is_not_utf8_or_holds_nul_is_refused(tmp_path: Path, data: bytes, line: int,
                                                                       word: str) -> None:
    path = tmp_path / "a.sub"
    path.write_bytes(data)
    with pytest.raises(FormatError) as caught:
        parse_submit(str(path))
    assert (caught.value.path, caught.value.line) == (str(path), line) and word in caught.value.message


def test_file_transfer_remaps_and_when_to_transfer_output(tmp_path: Path) -> None:
    """``transfer_output_remaps`` (``\\=`` and ``\\;`` literal, a relative target under initialdir) and
    ``when_to_transfer_output`` reach the launch's ``FileTransfer``; a bad entry or value is refused."""
    (tmp_path / "j.sub").write_text(
        "executable = /bin/true\ninitialdir = work\nshould_transfer_files = YES\n"
        "transfer_input_files = a.txt, dir/\ntransfer_output_files = out.txt, x=y.txt\n"
        'transfer_output_remaps = "out.txt = sub/renamed.txt ; x\\=y.txt = /abs/z.txt"\n'
        "when_to_transfer_output = on_success\nqueue\n")
    transfer = render(parse_submit(str(tmp_path / "j.sub")), "N", 0, 1, str(tmp_path), {}).transfer
    assert transfer is not None and transfer.on_success
    assert transfer.inputs == (str(tmp_path / "work" / "a.txt"), str(tmp_path / "work" / "dir") + "/")
    assert transfer.remaps == (("out.txt", str(tmp_path / "work" / "sub" / "renamed.txt")),
                               ("x=y.txt", "/abs/z.txt"))
    for line, rule in (("transfer_output_remaps = a.txt", "transfer_output_remaps = "),
                       ("when_to_transfer_output = NEVER", "when_to_transfer_output is ")):
        (tmp_path / "bad.sub").write_text(f"executable = /bin/true\nshould_transfer_files = YES\n{line}\n"
                                          "queue\n")
        with pytest.raises(FormatError) as info:
            render(parse_submit(str(tmp_path / "bad.sub")), "N", 0, 1, str(tmp_path), {})
        assert info.value.rule.startswith(rule) and info.value.path == str(tmp_path / "bad.sub")



def test_queue_item_variables_are_submit_commands_and_win_over_the_file(tmp_path: Path) -> None:
    # condor_submit's item variables are live values set once the file is read: `queue input in ...`
    # sets each proc's stdin, `queue arguments from` each proc's arguments (the whole line, for one
    # variable), and an item variable wins over the file's own value of that name
    (tmp_path / "in.sub").write_text("executable = /bin/cat\nqueue 1 input in a.dat, b.dat\n")
    (tmp_path / "from.sub").write_text("executable = /bin/echo\narguments = file\n"
                                       "queue arguments from (\n  x.dat y.dat\n  z.dat\n)\n")
    stdins, argvs = [], []
    for name, out in (("in.sub", stdins), ("from.sub", argvs)):
        desc = parse_submit(str(tmp_path / name))
        for row in proc_rows(desc, str(tmp_path)):
            job = render(desc, "N", 0, 7, str(tmp_path), {}, proc=row)
            out.append(job.stdin if name == "in.sub" else job.argv[1:])
    assert stdins == [str(tmp_path / "a.dat"), str(tmp_path / "b.dat")]
    assert argvs == [("x.dat", "y.dat"), ("z.dat",)]
