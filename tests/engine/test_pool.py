"""The local pool: slot ads, matchmaking with the real ClassAd language, partitioning, local universe."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf import classad
from sheaf.backends import Pool
from sheaf.backends._pool import Claim
from sheaf.backends._poolsig import signature
from sheaf.backends._slotlayout import Machine
from sheaf.classad import ClassAd
from sheaf.errors import FormatError

MACHINE = Machine(cpus=4, memory=16384, disk=4_000_000, swap=0, cpu_ids=(0, 1, 2, 3), hostname="node")
PARTITIONABLE = "SLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\nNUM_SLOTS_TYPE_1 = 1\n"
RETRY_MEMORY = "ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"


def job(**attrs: object) -> ClassAd:
    ad = ClassAd()
    for name, value in attrs.items():
        ad[name] = classad.parse(value) if isinstance(value, str) else value
    return ad


def test_default_pool_advertises_one_static_slot_per_cpu() -> None:
    pool = Pool("", machine=MACHINE)
    ads = pool.slot_ads()
    assert [ad["Name"] for ad in ads] == [f"slot{i}@node" for i in range(1, 5)]
    first = ads[0]
    assert (first["Cpus"], first["Memory"], first["Disk"]) == (1, 4096, 1_000_000)
    assert (first["SlotType"], first["PartitionableSlot"], first["Machine"]) == ("Static", False, "node")
    assert (first["TotalCpus"], first["TotalMemory"], first["OpSys"]) == (4, 16384, "LINUX")
    requirements = "TARGET.Memory >= 4096 && TARGET.Arch == \"X86_64\""
    assert classad.evaluate(requirements, my=None, target=first) is True


def test_requirements_and_rank_pick_the_slot() -> None:
    pool = Pool("", machine=MACHINE)
    claim = pool.claim(job(Requirements="TARGET.SlotID != 4", Rank="TARGET.SlotID"))
    assert claim is not None and claim.slot == "slot3@node"
    assert pool.claim(job(Requirements="TARGET.SlotID == 3")) is None  # taken
    pool.release(claim)
    again = pool.claim(job(Requirements="TARGET.SlotID == 3"))
    assert again is not None and again.slot == "slot3@node"


def test_a_full_pool_grants_nothing_until_a_release() -> None:
    pool = Pool("", machine=MACHINE)
    claims = [pool.claim(job()) for _ in range(4)]
    assert all(isinstance(c, Claim) for c in claims)
    assert pool.claim(job()) is None
    assert pool.statistics()["static_claimed"] == 4
    pool.release(claims[1])  # type: ignore[arg-type]
    pool.release(claims[1])  # type: ignore[arg-type]  # idempotent
    assert pool.statistics()["static_claimed"] == 3
    assert pool.claim(job()) is not None and pool.claim(job()) is None


def test_requests_default_and_memory_limit() -> None:
    pool = Pool("", machine=MACHINE)
    stated = pool.claim(job(RequestMemory=1000))
    implicit = pool.claim(job())
    assert stated is not None and stated.memory_limit == 1000
    assert implicit is not None and implicit.memory_limit == 4096  # the slot's memory


def test_partitionable_slot_splits_and_merges_back() -> None:
    pool = Pool(PARTITIONABLE + "ENFORCE_CPU_AFFINITY = True\n", machine=MACHINE)
    one = pool.claim(job(RequestCpus=2, RequestMemory=6000, RequestDisk=1000))
    two = pool.claim(job(RequestCpus=1, RequestMemory=2000))
    assert one is not None and two is not None
    assert (one.slot, two.slot) == ("slot1_1@node", "slot1_2@node")
    assert one.cpu_ids == frozenset({0, 1}) and two.cpu_ids == frozenset({2})
    ad = pool.slot_ads()[0]
    assert (ad["Cpus"], ad["Memory"], ad["Disk"]) == (1, 16384 - 8000, 4_000_000 - 1000 - 1024)
    assert pool.claim(job(RequestCpus=2)) is None
    assert pool.claim(job(RequestMemory=9000)) is None
    pool.release(one)
    three = pool.claim(job(RequestCpus=3, RequestMemory=1))
    assert three is not None and three.slot == "slot1_1@node" and three.cpu_ids == frozenset({0, 1, 3})
    pool.release(two)
    pool.release(three)
    ad = pool.slot_ads()[0]
    assert (ad["Cpus"], ad["Memory"], ad["Disk"]) == (4, 16384, 4_000_000)
    assert pool.statistics()["dynamic_slots"] == 0


def test_retry_memory_recipe_sees_dag_node_retry() -> None:
    pool = Pool(PARTITIONABLE, machine=MACHINE)
    first = pool.claim(job(RequestMemory=RETRY_MEMORY))
    retry = pool.claim(job(RequestMemory=RETRY_MEMORY, DAGNodeRetry=1))
    assert first is not None and retry is not None
    assert (first.memory, first.memory_limit, retry.memory, retry.memory_limit) == (1024, 1024, 4096, 4096)


def test_signature_includes_what_the_match_reads_and_nothing_else() -> None:
    base = job(RequestMemory=RETRY_MEMORY, Cmd='"/bin/a"')
    same = job(RequestMemory=RETRY_MEMORY, Cmd='"/bin/b"')
    retry = job(RequestMemory=RETRY_MEMORY, DAGNodeRetry=1)
    assert signature(base) == signature(same)
    assert signature(base) != signature(retry)
    plain = job(Requirements="TARGET.Memory > 1", DAGNodeRetry=1)
    assert signature(plain) == signature(job(Requirements="TARGET.Memory > 1", DAGNodeRetry=2))
    indirect = job(Requirements="TARGET.Memory > MY.Need", Need="Base * 2", Base=1)
    other_base = job(Requirements="TARGET.Memory > MY.Need", Need="Base * 2", Base=9)
    assert signature(indirect) != signature(other_base)


def test_cached_matches_still_honour_other_job_attributes() -> None:
    pool = Pool("", machine=MACHINE)
    small = job(Requirements="TARGET.Memory >= MY.Need", Need=100)
    big = job(Requirements="TARGET.Memory >= MY.Need", Need=100_000)
    assert pool.claim(big) is None
    claim = pool.claim(small)
    assert claim is not None
    assert pool.claim(big) is None and pool.unrunnable(big) is not None


@pytest.mark.parametrize(("attrs", "words"), [
    ({"RequestMemory": 100_000}, "100000 MB"),
    ({"RequestCpus": 5}, "5 cpus"),
    ({"Requirements": "TARGET.OpSys == \"WINDOWS\""}, "requirements"),
    ({"RequestMemory": "\"lots\""}, "not a non-negative number"),
    ({"RequestMemory": "1/0"}, "not a non-negative number"),
])
def test_a_job_that_can_never_fit_is_diagnosed(attrs: dict[str, object], words: str) -> None:
    pool = Pool("", machine=MACHINE)
    ad = job(**attrs)
    assert pool.claim(ad) is None
    reason = pool.unrunnable(ad)
    assert reason is not None and words in reason


@pytest.mark.parametrize("config", ["", PARTITIONABLE])
def test_a_job_that_fits_later_is_not_unrunnable(config: str) -> None:
    pool = Pool(config, machine=MACHINE)
    held = [pool.claim(job()) for _ in range(4)]
    assert None not in held and pool.claim(job()) is None
    assert pool.unrunnable(job()) is None
    assert (pool.unrunnable(job(RequestCpus=4)) is None) == (config == PARTITIONABLE)


def test_local_universe_is_throttled_by_start_local_universe_outside_the_slots() -> None:
    pool = Pool("NUM_SLOTS = 1\nSTART_LOCAL_UNIVERSE = TotalLocalJobsRunning < 2\n", machine=MACHINE)
    static = pool.claim(job())
    assert static is not None and pool.claim(job()) is None
    local = [pool.claim(job(JobUniverse=12)), pool.claim(job(Universe='"local"'))]
    assert all(c is not None and c.local and c.slot is None and c.memory_limit is None for c in local)
    assert pool.claim(job(JobUniverse=12)) is None
    assert pool.unrunnable(job(JobUniverse=12)) is None
    assert pool.statistics()["local_running"] == 2
    pool.release(local[0])  # type: ignore[arg-type]
    assert pool.claim(job(JobUniverse=12)) is not None


def test_local_universe_that_can_never_start_is_diagnosed() -> None:
    pool = Pool("START_LOCAL_UNIVERSE = False\n", machine=MACHINE)
    assert pool.claim(job(JobUniverse=12)) is None
    reason = pool.unrunnable(job(JobUniverse=12))
    assert reason is not None and "START_LOCAL_UNIVERSE" in reason


def test_start_expressions_are_checked_when_the_pool_is_built() -> None:
    with pytest.raises(FormatError) as caught:
        Pool("A = 1\nSTART_LOCAL_UNIVERSE = TotalLocalJobsRunning <\n", machine=MACHINE)
    assert caught.value.line == 2 and "START_LOCAL_UNIVERSE" in str(caught.value)


def test_start_restricts_the_slots() -> None:
    pool = Pool("START = TARGET.Owner == \"alice\"\n", machine=MACHINE)
    assert pool.claim(job(Owner='"bob"')) is None
    assert pool.unrunnable(job(Owner='"bob"')) is not None
    assert pool.claim(job(Owner='"alice"')) is not None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3), st.integers(0, 9000)), max_size=30))
def test_partitionable_accounting_never_overcommits_and_always_merges_back(
        steps: list[tuple[bool, int, int]]) -> None:
    pool = Pool(PARTITIONABLE + "ENFORCE_CPU_AFFINITY = True\n", machine=MACHINE)
    held: list[Claim] = []
    for take, cpus, memory in steps:
        if take or not held:
            claim = pool.claim(job(RequestCpus=cpus, RequestMemory=memory, RequestDisk=1))
            if claim is not None:
                held.append(claim)
        else:
            pool.release(held.pop(0))
        assert sum(c.cpus for c in held) <= 4 and sum(c.memory for c in held) <= 16384
        ids = [cpu for c in held for cpu in (c.cpu_ids or ())]
        assert len(ids) == len(set(ids)) == sum(c.cpus for c in held)
    for claim in held:
        pool.release(claim)
    ad = pool.slot_ads()[0]
    assert (ad["Cpus"], ad["Memory"], ad["Disk"]) == (4, 16384, 4_000_000)
