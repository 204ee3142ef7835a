"""``sheaf classad eval`` and ``sheaf classad match``: CliRunner, plus one real subprocess each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sheaf.cli import _classad, main

SHEAF = Path(sys.executable).with_name("sheaf")
SITE = """\
MyType = "Machine"
Name = "uw-hep-USCMS-Site"
WantAdRevaluate = True
CurMatches = 0
MaxMatches = 2
Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)
Is_USCMS_Site = True
MatchmakerURL = "ramen.fnal.gov:/jobmanager-condor"
"""
JOB = "[ WANT_USCMS_MATCHMAKER = True; Requirements = Is_USCMS_Site =?= True; Rank = -CurMatches/MaxMatches ]"


@pytest.fixture
def ads(tmp_path: Path) -> dict[str, Path]:
    files = {"site": SITE, "full": SITE.replace("CurMatches = 0", "CurMatches = 2").replace("uw-hep", "full"),
             "job": JOB, "broken": "Name = \"x\"\nRequirements = (1 +\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.ad").write_text(text)
    return {name: tmp_path / f"{name}.ad" for name in files}


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["classad", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("args", "printed"), [
    (["TARGET.Memory > 1024", "--target", "[Memory = 2048]"], "true"),
    (["Memory * 2", "--my", "[Memory = 2048]"], "4096"),
    (['strcat("a", "\\"b")'], '"a\\"b"'),
    (["{1, 2.5, undefined}"], "{ 1, 2.5, undefined }"),
    (["x"], "undefined"),
    (["1/0"], "error"),
    (["[a = 1; b = a + 1].b"], "2"),
    (["[a = 1; b = a + 1]"], "[ a = 1; b = a + 1 ]"),
    (["-CurMatches/MaxMatches", "--target", "[CurMatches = 1; MaxMatches = 2]"], "0"),
    (["--target", "[CurMatches = 1]", "-TARGET.CurMatches / 2.0"], "-0.5"),
    (["--my=[x = -1]", "-x"], "1"),
])
def test_eval_prints_the_value_in_classad_syntax(args: list[str], printed: str) -> None:
    assert _run("eval", *args) == (0, printed + "\n", "")


def test_eval_reads_old_syntax_files_as_my_and_target(ads: dict[str, Path]) -> None:
    code, out, _ = _run("eval", "MY.MaxMatches - CurMatches + TARGET.MaxMatches", "--my", str(ads["site"]),
                        "--target", str(ads["full"]))
    assert (code, out) == (0, "4\n")
    assert _run("eval", "Requirements", "--my", str(ads["job"]), "--target", str(ads["site"]))[1] == "true\n"


def test_match_says_which_resources_match_and_their_rank(ads: dict[str, Path]) -> None:
    code, out, err = _run("match", str(ads["job"]), str(ads["site"]), str(ads["full"]),
                          "[ Name = \"inline\"; Requirements = true; CurMatches = 1; MaxMatches = 2 ]")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "uw-hep-USCMS-Site\tmatch\t0\t",
        "full-USCMS-Site\tno match\t-1\tresource Requirements not met",
        "inline\tno match\t0\tjob Requirements not met",
    ]


def test_match_renders_a_table_on_a_terminal(ads: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_classad, "_on_terminal", lambda: True)
    code, out, _ = _run("match", str(ads["job"]), str(ads["site"]), "[Requirements = false]")
    assert code == 0 and "resource" in out and "uw-hep-USCMS-Site" in out and "yes" in out
    assert "[Requirements = false]" in out and "no" in out


def test_a_syntax_error_is_one_message_with_a_caret_and_exit_2(ads: dict[str, Path]) -> None:
    code, out, err = _run("eval", "1 + (2 *")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "sheaf: error: EXPR:1:9: expected an expression, found end of input (rule: ClassAd syntax)",
        "  1 + (2 *",
        "          ^",
    ]
    code, _, err = _run("match", str(ads["job"]), str(ads["broken"]))
    assert code == 2 and f"{ads['broken']}:2:" in err and "^" in err and "Traceback" not in err
    code, _, err = _run("match", str(ads["job"]), str(ads["site"].with_name("missing.ad")))
    assert code == 2 and "missing.ad" in err


def test_the_installed_command_runs_as_a_real_process(ads: dict[str, Path]) -> None:
    done = subprocess.run([str(SHEAF), "classad", "match", str(ads["job"]), str(ads["site"])],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "uw-hep-USCMS-Site\tmatch\t0\t\n", "")
    done = subprocess.run([str(SHEAF), "classad", "eval", "TARGET.x +", "--target", "[x = 1]"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "^" in done.stderr and "Traceback" not in done.stderr
