"""The negotiator's order among matching slots, as HTCondor's matchmaker has it: NEGOTIATOR_PRE_JOB_RANK,
then the job's Rank (the slot's Rank when the job has none), then NEGOTIATOR_POST_JOB_RANK, then list
order -- with HTCondor's default expressions (the admin manual's negotiator configuration) -- and how
WantAdRevaluate and CurMatches are read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, negotiate


def _picked(job: str, *slots: str, pre_job_rank: str | None = "default",
            post_job_rank: str | None = "default") -> list[str]:
    ranks = {name: value for name, value in (("pre_job_rank", pre_job_rank), ("post_job_rank", post_job_rank))
             if value != "default"}
    cycle = negotiate([ClassAd.parse(job)], [ClassAd.parse(s) for s in slots], **ranks)
    return [match.resource for match in cycle.matches]


# a startd advertises its Rank (0.0 by default); without it the default pre-job rank is UNDEFINED for
# every slot, and leaves the order to the job's Rank, as in HTCondor
SMALL = '[Name = "small"; Cpus = 1; Memory = 1024; Requirements = true; Rank = 0.0]'
BIG = '[Name = "big"; Cpus = 8; Memory = 32768; Requirements = true; Rank = 0.0]'
MIDDLE = '[Name = "middle"; Cpus = 1; Memory = 4096; Requirements = true; Rank = 0.0]'


def test_default_pre_job_rank_is_best_fit() -> None:
    # "- (100000 * Cpus) - Memory": the smallest slot that fits, wherever it is in the list
    assert _picked("[Requirements = TARGET.Memory >= 1000]", BIG, MIDDLE, SMALL) == ["small"]
    assert _picked("[Requirements = TARGET.Memory >= 2000]", BIG, MIDDLE, SMALL) == ["middle"]


def test_the_slots_own_rank_of_the_job_comes_first() -> None:
    # "(10000000 * My.Rank)": a slot that prefers this job wins over best fit and over the job's Rank
    fond = '[Name = "fond"; Cpus = 8; Memory = 32768; Requirements = true; Rank = TARGET.Owner == "ann"]'
    job = '[Owner = "ann"; Requirements = true; Rank = TARGET.Memory < 2000]'
    assert _picked(job, SMALL, fond) == ["fond"]


def test_the_job_rank_decides_among_equal_pre_job_ranks() -> None:
    a = '[Name = "a"; Cpus = 1; Memory = 1024; Requirements = true; Arch = "ARM"]'
    b = '[Name = "b"; Cpus = 1; Memory = 1024; Requirements = true; Arch = "X86_64"]'
    assert _picked('[Requirements = true; Rank = TARGET.Arch == "X86_64"]', a, b) == ["b"]


def test_the_job_rank_beats_best_fit_without_a_pre_job_rank() -> None:
    job = "[Requirements = true; Rank = TARGET.Memory]"
    assert _picked(job, SMALL, BIG, pre_job_rank=None) == ["big"]
    assert _picked(job, SMALL, BIG) == ["small"]  # the default pre-job rank comes first
    no_rank = [slot.replace("; Rank = 0.0", "") for slot in (SMALL, BIG)]
    assert _picked(job, *no_rank) == ["big"]  # UNDEFINED for both: no effect


def test_post_job_rank_breaks_ties_the_job_leaves() -> None:
    # "(ifThenElse(isUndefined(KFlops), 1000, Kflops) - SlotID ...)": faster, then lower SlotID
    slow = '[Name = "slow"; Cpus = 1; Memory = 1024; Requirements = true; KFlops = 10; SlotID = 1]'
    fast = '[Name = "fast"; Cpus = 1; Memory = 1024; Requirements = true; KFlops = 90; SlotID = 2]'
    assert _picked("[Requirements = true]", slow, fast) == ["fast"]
    assert _picked("[Requirements = true]", slow, fast, post_job_rank=None) == ["slow"]  # list order


def test_a_job_without_rank_takes_the_slots_rank() -> None:
    # EvalFloat reads an attribute the job lacks from the other ad (the slot's Rank, in the slot)
    a = '[Name = "a"; Cpus = 1; Memory = 1024; Requirements = true; Rank = 1]'
    b = '[Name = "b"; Cpus = 1; Memory = 1024; Requirements = true; Rank = 5]'
    assert _picked("[Requirements = true]", a, b, pre_job_rank=None, post_job_rank=None) == ["b"]
    cycle = negotiate([ClassAd.parse("[Requirements = true]")], [ClassAd.parse(b)], pre_job_rank=None)
    assert cycle.matches[0].rank == 5.0


def test_want_ad_revaluate_and_cur_matches_read_as_htcondor_reads_them() -> None:
    slot = ('[Name = "s"; Cpus = 1; Memory = 1024; WantAdRevaluate = 1; CurMatches = true;'
            ' Requirements = CurMatches < 3]')
    cycle = negotiate([ClassAd.parse("[Requirements = true]") for _ in range(4)], [ClassAd.parse(slot)])
    assert [m.resource for m in cycle.matches] == ["s", "s"]  # CurMatches true is 1: two more


# The admin manual's example ("Assume that five slots match one request for three jobs",
# cm-configuration): the values of NEGOTIATOR_PRE_JOB_RANK, Job.Rank and NEGOTIATOR_POST_JOB_RANK
# per slot, and the slots the schedd is given for the three jobs, in order.
MANUAL_TABLE = {"slot1": (100, 1, 10), "slot2": (100, 2, 20), "slot3": (100, 2, 30),
                "slot4": (0, 1, 40), "slot5": (200, 1, 50)}
MANUAL_PICKS = ["slot5", "slot3", "slot2"]


def _manual_slots(order: list[str]) -> list[ClassAd]:
    return [ClassAd.parse(f'[Name = "{name}"; Requirements = true; PreValue = {pre}; JobValue = {job};'
                          f' PostValue = {post}]')
            for name in order for pre, job, post in [MANUAL_TABLE[name]]]


@settings(max_examples=30, deadline=None)
@given(st.permutations(sorted(MANUAL_TABLE)))
def test_the_manuals_example_picks_the_manuals_slots(order: list[str]) -> None:
    jobs = [ClassAd.parse(f'[Id = {n}; Requirements = true; Rank = TARGET.JobValue]') for n in range(3)]
    cycle = negotiate(jobs, _manual_slots(order), pre_job_rank="MY.PreValue", post_job_rank="MY.PostValue")
    assert [match.resource for match in cycle.matches] == MANUAL_PICKS
    assert [match.job for match in cycle.matches] == [0, 1, 2]
