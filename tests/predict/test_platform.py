"""Where ``sheaf predict`` (and ``sheaf plan --cluster auto``) find the platform's slots: ``--slots``,
the local pool's configuration, a Slurm cluster's ``sinfo``, else this machine -- and say which."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_predict_app import fan_trace, sheaf

from sheaf.app._platform import platform_slots
from sheaf.backends.slurm import sinfo_cpus


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No pool configuration but what a test gives: no $SHEAF_CONFIG, a home without one."""
    home = tmp_path / "home"
    home.mkdir()
    out = {**os.environ, "SHEAF_OVERHEADS": str(tmp_path / "overheads.json"), "HOME": str(home),
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    out.pop("SHEAF_CONFIG", None)
    return out


@pytest.fixture
def fan(tmp_path: Path, env: dict[str, str]) -> Path:
    """A planned fan of eight 10 s tasks into a merge."""
    fan_trace(tmp_path, tasks=8)
    trace = json.loads((tmp_path / "fan.json").read_text())
    for task in trace["workflow"]["execution"]["tasks"]:
        task["runtimeInSeconds"] = 10.0
    (tmp_path / "fan.json").write_text(json.dumps(trace))
    done = sheaf("plan", "fan.json", "--dir", "runs", "-q", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.splitlines()[0].removeprefix("submit directory: "))


def predict_json(directory: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = sheaf("predict", str(directory), "--json", "--no-history", *args, cwd=directory, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert isinstance(got, dict)
    return got


def test_the_local_pools_configuration_gives_the_slots_and_memory(fan: Path, env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    conf = tmp_path / "pool.conf"
    conf.write_text("NUM_CPUS = 8\nMEMORY = 4000\n")
    wide = predict_json(fan, env, "--pool-config", str(conf))
    assert wide["slots"] == 8 and wide["memory_mb"] == 4000
    assert wide["slots_source"] == f"local pool configuration {conf}, 8 slots"
    conf.write_text("NUM_CPUS = 2\nMEMORY = 4000\n")
    narrow = predict_json(fan, env, "--pool-config", str(conf))
    assert narrow["slots"] == 2
    # eight 10 s tasks: one wave on 8 slots, four on 2
    assert isinstance(wide["makespan_s"], float) and isinstance(narrow["makespan_s"], float)
    assert narrow["makespan_s"] - wide["makespan_s"] == pytest.approx(30, abs=3)


def test_slot_types_count_only_their_slots(fan: Path, env: dict[str, str], tmp_path: Path) -> None:
    conf = tmp_path / "typed.conf"
    conf.write_text("NUM_CPUS = 8\nMEMORY = 8000\nSLOT_TYPE_1 = cpus=2, memory=1000\nNUM_SLOTS_TYPE_1 = 3\n")
    got = predict_json(fan, env, "--pool-config", str(conf))
    assert got["slots"] == 6 and got["memory_mb"] == 3000
    assert got["slots_source"] == f"local pool configuration {conf}, 3 slots"


def test_sheaf_config_is_read_without_the_option_and_slots_win(fan: Path, env: dict[str, str],
                                                                tmp_path: Path) -> None:
    conf = tmp_path / "env.conf"
    conf.write_text("NUM_CPUS = 5\n")
    found = predict_json(fan, {**env, "SHEAF_CONFIG": str(conf)})
    assert found["slots"] == 5 and str(conf) in str(found["slots_source"])
    given_slots = predict_json(fan, {**env, "SHEAF_CONFIG": str(conf)}, "--slots", "3")
    assert given_slots["slots"] == 3 and given_slots["slots_source"] == "--slots"
    assert given_slots["memory_mb"] == 0
    both = predict_json(fan, env, "--slots", "3", "--pool-config", str(conf))
    assert both["slots_source"] == "--slots; --pool-config ignored under --slots"


def test_without_any_configuration_the_pool_is_this_machine(fan: Path, env: dict[str, str]) -> None:
    got = predict_json(fan, env)
    assert got["slots"] == (os.cpu_count() or 1)
    assert str(got["slots_source"]).startswith("local pool without a configuration file")
    text = sheaf("predict", str(fan), "--no-history", cwd=fan, env=env).stdout
    assert "(local pool without a configuration file" in text


def test_other_backends_use_this_machine_and_say_so(fan: Path, env: dict[str, str], tmp_path: Path) -> None:
    conf = tmp_path / "pool.conf"
    conf.write_text("NUM_CPUS = 8\n")
    got = predict_json(fan, env, "--backend", "dask", "--pool-config", str(conf))
    assert got["slots"] == (os.cpu_count() or 1)
    assert got["slots_source"] == ("this machine's CPUs: backend dask does not state its slots; "
                                   "--pool-config ignored under backend dask")


def test_a_bad_pool_configuration_is_exit_2_naming_the_file(fan: Path, env: dict[str, str],
                                                            tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("NUM_CPUS = many\n")
    done = sheaf("predict", str(fan), "--pool-config", str(conf), cwd=fan, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{conf}:1: NUM_CPUS" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    missing = sheaf("predict", str(fan), "--pool-config", str(tmp_path / "none.conf"), cwd=fan, env=env)
    assert missing.returncode == 2 and "none.conf" in missing.stderr


def fake_sinfo(directory: Path, script: str) -> dict[str, str]:
    """A PATH whose ``sinfo`` is ``script`` (a shell script's body)."""
    directory.mkdir(exist_ok=True)
    path = directory / "sinfo"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{directory}:{Path(sys.executable).parent}:/usr/bin:/bin"}


def test_slurm_slots_come_from_sinfo_each_node_once(fan: Path, env: dict[str, str], tmp_path: Path) -> None:
    # node a in two partitions (listed twice), node b with 4 CPUs drained (other)
    path = fake_sinfo(tmp_path / "bin", 'echo "$@" > "$(dirname "$0")/argv"\n'
                                        "printf 'a 2/6/0/8\\na 2/6/0/8\\nb 0/4/4/8\\n'")
    got = predict_json(fan, {**env, **path}, "--backend", "slurm")
    assert got["slots"] == 12 and got["slots_source"] == "sinfo: 12 CPUs allocated or idle of 16"
    assert (tmp_path / "bin" / "argv").read_text().split() == ["--noheader", "--Node", "--format", "%N", "%C"]


@pytest.mark.parametrize(("script", "said"), [
    ("echo 'sinfo: error: Unable to contact slurm controller' >&2; exit 1",
     "sinfo failed: sinfo: error: Unable to contact slurm controller"),
    ("printf 'a 0/0/8/8\\n'", "sinfo reports no usable CPUs, 8 in all"),
])
def test_slurm_without_an_answer_falls_back_to_this_machine(fan: Path, env: dict[str, str], tmp_path: Path,
                                                             script: str, said: str) -> None:
    got = predict_json(fan, {**env, **fake_sinfo(tmp_path / "bin", script)}, "--backend", "slurm")
    assert got["slots"] == (os.cpu_count() or 1) and got["slots_source"] == f"this machine's CPUs: {said}"


def test_slurm_without_sinfo_says_so(fan: Path, env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = sheaf("predict", str(fan), "--json", "--backend", "slurm", cwd=fan,
                 env={**env, "PATH": str(empty)})
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["slots_source"]
    assert said == "this machine's CPUs: sinfo not found, no Slurm cluster to ask"


def test_plan_cluster_auto_plans_on_the_pools_slots(tmp_path: Path, env: dict[str, str]) -> None:
    fan_trace(tmp_path)
    conf = tmp_path / "pool.conf"
    conf.write_text("NUM_CPUS = 4\n")
    done = sheaf("plan", "fan.json", "--dir", "runs", "--cluster", "auto", "--overhead", "60",
                 "--pool-config", str(conf), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    directory = Path(done.stdout.split("submit directory: ")[1].splitlines()[0])
    auto = json.loads((directory / "plan.json").read_text())["autocluster"]
    assert auto["slots"] == 4 and auto["groups"][0]["jobs"] == 4
    assert auto["slots_source"] == f"local pool configuration {conf}, 4 slots"
    unused = sheaf("plan", "fan.json", "--dir", "runs", "--pool-config", str(conf), cwd=tmp_path, env=env)
    assert unused.returncode == 0 and "--pool-config: only automatic clustering reads them" in unused.stderr


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cpus=st.integers(1, 256), per_cpu=st.integers(1, 1 << 14))
def test_the_pool_figures_are_its_configured_cpus_and_memory(tmp_path: Path, cpus: int, per_cpu: int) -> None:
    conf = tmp_path / "h.conf"  # one static slot per CPU, an even share of memory each
    conf.write_text(f"NUM_CPUS = {cpus}\nMEMORY = {cpus * per_cpu}\n")
    found = platform_slots("local", None, str(conf))
    assert (found.cpus, found.memory) == (cpus, cpus * per_cpu)


@given(nodes=st.dictionaries(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True),
                             st.tuples(*[st.integers(0, 512)] * 3), max_size=8),
       partitions=st.integers(1, 3))
def test_sinfo_counts_each_node_once_whatever_its_partitions(nodes: dict[str, tuple[int, int, int]],
                                                            partitions: int) -> None:
    lines = [f"{name} {a}/{i}/{o}/{a + i + o}" for name, (a, i, o) in nodes.items()] * partitions
    text = "\n".join([*lines, "garbage", "x 1/2/3"])
    assert sinfo_cpus(text) == (sum(a + i for a, i, _ in nodes.values()),
                                 sum(a + i + o for a, i, o in nodes.values()))
