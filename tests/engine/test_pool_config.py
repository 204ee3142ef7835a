"""The pool configuration file (HTCondor syntax) and the slot layout it gives."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheaf.backends._slotconfig import find_config, load_config, parse_config
from sheaf.backends._slotlayout import Machine, layout, parse_cpu_list, parse_slot_type
from sheaf.errors import FormatError

MACHINE = Machine(cpus=12, memory=24000, disk=1_000_000, swap=0, cpu_ids=tuple(range(12)))


def test_assignments_comments_case_and_continuations() -> None:
    config = parse_config(
        "# a comment\n"
        "num_cpus = 4\n"
        "   # indented comment\n"
        "START_LOCAL_UNIVERSE = TotalLocalJobsRunning \\\n"
        "    < 20\n"
        "X = a # not a comment\n"
    )
    assert config["NUM_CPUS"] == "4"
    assert config["num_cpus"] == "4"
    assert config["START_LOCAL_UNIVERSE"] == "TotalLocalJobsRunning     < 20"
    assert config["X"] == "a # not a comment"
    assert config.line_of("X") == 6


def test_macro_references_are_lazy_with_defaults_env_and_self_reference(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEAF_TEST_VAR", "from-env")
    config = parse_config(
        "A = $(B)-$(MISSING:fallback)-$(NOPE)\n"
        "B = $(C)\n"
        "C = c\n"
        "D = one\n"
        "D = $(D) two\n"
        "E = $ENV(SHEAF_TEST_VAR)\n"
    )
    assert config["A"] == "c-fallback-"
    assert config["D"] == "one two"
    assert config["E"] == "from-env"


def test_reference_cycle_is_a_located_format_error() -> None:
    config = parse_config("A = $(B)\nB = $(A)\n", "pool.conf")
    with pytest.raises(FormatError) as caught:
        config["A"]
    assert caught.value.path == "pool.conf" and caught.value.line == 1
    assert "cycle" in str(caught.value)


def test_a_line_that_is_not_an_assignment_is_rejected_with_path_and_line() -> None:
    with pytest.raises(FormatError) as caught:
        parse_config("A = 1\n\nuse ROLE : Personal\n", "/etc/pool.conf")
    error = caught.value
    assert (error.path, error.line, error.value) == ("/etc/pool.conf", 3, "use ROLE : Personal")
    assert error.rule


def test_config_location_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SHEAF_CONFIG", raising=False)
    assert find_config() is None
    assert len(load_config()) == 0
    user = tmp_path / ".config" / "sheaf" / "pool.conf"
    user.parent.mkdir(parents=True)
    user.write_text("NUM_CPUS = 3\n")
    assert find_config() == user
    env_file = tmp_path / "env.conf"
    env_file.write_text("NUM_CPUS = 5\n")
    monkeypatch.setenv("SHEAF_CONFIG", str(env_file))
    assert load_config()["NUM_CPUS"] == "5"
    explicit = tmp_path / "explicit.conf"
    explicit.write_text("NUM_CPUS = 7\n")
    assert load_config(explicit)["NUM_CPUS"] == "7"
    with pytest.raises(FormatError):
        load_config(tmp_path / "missing.conf")


def test_default_layout_is_one_static_slot_per_cpu_with_even_shares() -> None:
    slots = layout(parse_config(""), MACHINE)
    assert len(slots) == 12
    assert all(s.cpus == 1 and s.memory == 2000 and s.disk == 1_000_000 // 12 for s in slots)
    assert not any(s.partitionable for s in slots)
    assert [s.cpu_ids for s in slots] == [(i,) for i in range(12)]


def test_detected_machine_matches_this_host() -> None:
    import psutil

    machine = Machine.detect(parse_config(""))
    assert machine.cpus == len(os.sched_getaffinity(0))
    assert machine.memory == psutil.virtual_memory().total // 2**20
    slots = layout(parse_config(""), machine)
    assert len(slots) == machine.cpus
    assert sum(s.memory for s in slots) <= machine.memory


def test_seed_slot_types_fractions_percentages() -> None:
    config = parse_config(
        "MAX_SLOT_TYPES = 2\n"
        "SLOT_TYPE_1 = cpus=2, ram=50%, swap=1/4, disk=1/4\n"
        "SLOT_TYPE_2 = cpus=1, ram=20%, swap=1/4, disk=1/8\n"
        "NUM_SLOTS_TYPE_1 = 1\n"
        "NUM_SLOTS_TYPE_2 = 2\n"
    )
    slots = layout(config, MACHINE)
    assert [(s.slot_id, s.type_id, s.cpus, s.memory, s.disk) for s in slots] == [
        (1, 1, 2, 12000, 250_000), (2, 2, 1, 4800, 125_000), (3, 2, 1, 4800, 125_000)]


def test_seed_partitionable_slots_with_affinity() -> None:
    config = parse_config(
        "NUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1\n"
        "SLOT_TYPE_1_PARTITIONABLE = True\nSLOT_TYPE_2_PARTITIONABLE = True\n"
        "SLOT_TYPE_1 = cpus=6\nSLOT_TYPE_2 = cpus=6\n"
        "ENFORCE_CPU_AFFINITY = True\n"
        "SLOT1_CPU_AFFINITY=0,2,4,6,8,10\nSLOT2_CPU_AFFINITY=1,3,5,7,9,11\n"
    )
    one, two = layout(config, MACHINE)
    assert one.partitionable and two.partitionable
    assert (one.cpus, one.memory, two.memory) == (6, 12000, 12000)
    assert one.cpu_ids == (0, 2, 4, 6, 8, 10) and two.cpu_ids == (1, 3, 5, 7, 9, 11)


def test_absolute_amounts_with_units_and_auto_remainder() -> None:
    config = parse_config(
        "SLOT_TYPE_1 = cpus=4, ram=2G, disk=100M\nNUM_SLOTS_TYPE_1 = 1\n"
        "SLOT_TYPE_2 = cpus=auto, memory=auto\nNUM_SLOTS_TYPE_2 = 2\n"
    )
    one, two, three = layout(config, MACHINE)
    assert (one.cpus, one.memory, one.disk) == (4, 2048, 102_400)
    assert (two.cpus, two.memory) == (4, (24000 - 2048) // 2) == (three.cpus, three.memory)


def test_whole_machine_partitionable_slot_and_bare_fraction() -> None:
    config = parse_config("SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = true\nNUM_SLOTS_TYPE_1 = 1\n")
    (slot,) = layout(config, MACHINE)
    assert (slot.cpus, slot.memory, slot.disk, slot.partitionable) == (12, 24000, 1_000_000, True)


def test_num_slots_without_types() -> None:
    slots = layout(parse_config("NUM_CPUS = 12\nNUM_SLOTS = 3\n"), MACHINE)
    assert [(s.cpus, s.memory) for s in slots] == [(4, 8000)] * 3


@pytest.mark.parametrize(("text", "name"), [
    ("SLOT_TYPE_1 = cpus=20\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1"),
    ("SLOT_TYPE_1 = ram=60%\nNUM_SLOTS_TYPE_1 = 2\n", "SLOT_TYPE_1"),
    ("SLOT_TYPE_1 = gpus=1\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1"),
    ("SLOT_TYPE_1 = cpus=two\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1"),
    ("SLOT_TYPE_1 = ram=150%\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1"),
    ("NUM_SLOTS_TYPE_1 = many\n", "NUM_SLOTS_TYPE_1"),
    ("SLOT_TYPE_1_PARTITIONABLE = maybe\nNUM_SLOTS_TYPE_1 = 1\n", "SLOT_TYPE_1_PARTITIONABLE"),
    ("SLOT1_CPU_AFFINITY = 0,x\n", "SLOT1_CPU_AFFINITY"),
    ("SLOT1_CPU_AFFINITY = 99\n", "SLOT1_CPU_AFFINITY"),
])
def test_bad_slot_knobs_are_located_format_errors(text: str, name: str) -> None:
    config = parse_config(text, "pool.conf")
    with pytest.raises(FormatError) as caught:
        layout(config, MACHINE)
    error = caught.value
    assert error.path == "pool.conf" and error.line == config.line_of(name)
    assert error.rule and name in error.message


def test_manual_examples_types_one_to_three_and_four_to_six_are_equal() -> None:
    machine = Machine(cpus=4, memory=256, disk=1000, swap=400, cpu_ids=(0, 1, 2, 3))
    config = parse_config(
        "SLOT_TYPE_1 = cpus=2, ram=128, swap=25%, disk=1/2\n"
        "SLOT_TYPE_2 = cpus=1/2, memory=128, virt=25%, disk=50%\n"
        "SLOT_TYPE_3 = c=1/2, m=50%, v=1/4, disk=1/2\n"
        "SLOT_TYPE_4 = c=25%, m=64, v=1/4, d=25%\n"
        "SLOT_TYPE_5 = 25%\n"
        "SLOT_TYPE_6 = 1/4\n"
    )
    sizes = []
    for type_id in range(1, 7):
        single = parse_config(f"SLOT_TYPE_{type_id} = {config[f'SLOT_TYPE_{type_id}']}\n"
                              f"NUM_SLOTS_TYPE_{type_id} = 1\n")
        (slot,) = layout(single, machine)
        sizes.append((slot.cpus, slot.memory, slot.swap, slot.disk))
    assert sizes[0] == sizes[1] == sizes[2] == (2, 128, 100, 500)
    assert sizes[3] == sizes[4] == sizes[5] == (1, 64, 100, 250)


def test_blanket_share_with_named_exceptions() -> None:
    config = parse_config("A = cpus=1, ram=1/2, swap=50%\nB = cpus=1, disk=auto, 50%\n")
    assert parse_slot_type(config, "A") == parse_slot_type(config, "B")


def test_slot_type_amount_forms() -> None:
    config = parse_config("T = c=3, r=25%, s=1/2, d=0.5\nU = auto\n")
    assert parse_slot_type(config, "T") == {
        "cpus": 3, "memory": Fraction(1, 4), "swap": Fraction(1, 2), "disk": Fraction(1, 2)}
    assert parse_slot_type(config, "U") == dict.fromkeys(("cpus", "memory", "swap", "disk"))


@given(st.lists(st.integers(0, 63), min_size=1, max_size=8, unique=True))
def test_cpu_lists_round_trip(ids: list[int]) -> None:
    assert parse_cpu_list(",".join(map(str, ids))) == tuple(ids)


@given(st.integers(1, 64), st.integers(1, 16), st.integers(1, 10**6))
def test_layout_never_exceeds_the_machine(cpus: int, slots: int, memory: int) -> None:
    machine = Machine(cpus=cpus, memory=memory, disk=10**6, swap=0, cpu_ids=tuple(range(cpus)))
    made = layout(parse_config(f"NUM_SLOTS = {slots}\n"), machine)
    assert len(made) == slots
    assert sum(s.memory for s in made) <= memory and all(s.cpus >= 1 for s in made)
    if slots <= cpus:
        assert sum(s.cpus for s in made) <= cpus


# ---- hostile configurations: one FormatError, in bounded time ---------------

@pytest.mark.parametrize("text", [
    "NUM_SLOTS_TYPE_1 = " + "1" * 400 + "\nSLOT_TYPE_1 = cpus=1\n",   # hung: 10**400 slots built one by one
    "NUM_SLOTS = 5000\n",
    "NUM_SLOTS_TYPE_1 = 3000\nNUM_SLOTS_TYPE_2 = 3000\n",
    "MAX_SLOT_TYPES = " + "9" * 5000 + "\n",
    "NUM_SLOTS = 1_0\n",
    "SLOT1_CPU_AFFINITY = 0-" + "9" * 30 + "\n",
])
def test_counts_and_cpu_lists_are_bounded(text: str) -> None:
    with pytest.raises(FormatError):
        layout(parse_config(text), MACHINE)


def test_num_cpus_is_bounded() -> None:
    with pytest.raises(FormatError):
        Machine.detect(parse_config("NUM_CPUS = 1000000000\nMEMORY = 1000\nDISK = 1000\n"))


def test_a_pool_configuration_that_is_not_utf8_or_holds_nul_is_refused(tmp_path: Path) -> None:
    for data, line in ((b"NUM_CPUS = 4\nX = \xff\n", 2), (b"NUM_CPUS = 4\x00\n", 1)):
        path = tmp_path / "pool.conf"
        path.write_bytes(data)
        with pytest.raises(FormatError) as caught:
            load_config(path)
        assert (caught.value.path, caught.value.line) == (str(path), line)
