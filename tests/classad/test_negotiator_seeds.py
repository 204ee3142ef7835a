"""End to end, the USCMS report's USCMS recipe: site ads, DAG jobs, cycles, $$() expansion, monitor,
back-out."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf import classad
from sheaf.classad._limits import ConcurrencyLimits
from sheaf.classad._match_expand import expand
from sheaf.classad._negotiator import cur_matches, negotiate
from sheaf.classad._negotiator_monitor import recount_matches, unmatch

ClassAd = classad.ClassAd
MAX = {"uw-hep": 2, "fnal": 3, "ufl": 1, "caltech": 2}


def _site(name: str, max_matches: int) -> ClassAd:
    return ClassAd.parse_old(f"""\
MyType = "Machine"
TargetType = "Job"
Name = "{name}-USCMS-Site"
StartdIpAddr = "<127.0.0.1:1234>"
UpdateSequenceNumber = 1057960761
Rank = 0.000000
CurrentRank = 0.000000
WantAdRevaluate = True
CurMatches = 0
MaxMatches = {max_matches}
Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)
Is_USCMS_Site = True
MatchmakerURL = "ramen.fnal.gov:/jobmanager-condor"
SiteEnvironment = "SiteName={name};SiteGatekeeperURL={name}.example.org:/jobmanager-condor;SiteVDTLocation=/dpe"
MOP_SITE="{name}"
""")  # noqa: E501  (the USCMS report's site ad, verbatim)


def _dag_job(group: int) -> ClassAd:
    # the USCMS report's modified DAGMan submit file, as condor_submit turns it into a job ad
    return ClassAd.parse(f"""[
        JobUniverse = 9; Cmd = "/condor/bin/condor_dagman"; WANT_USCMS_MATCHMAKER = True;
        Requirements = Is_USCMS_Site =?= True; Rank = -CurMatches/MaxMatches;
        Environment = "$$(SiteEnvironment);PATH=/usr/bin;USER=cms;_CONDOR_DAGMAN_LOG=group{group}.dag.dagman.out";
        GlobusScheduler = "$$(MatchmakerURL)"; Arguments = "-f -l . -Dag group{group}.dag";
        GlobusRSL = "(condor_submit=(universe scheduler)(remove_kill_sig SIGUSR1))" ]""")  # noqa: E501  (verbatim)


def _site_of(job: ClassAd) -> str:
    env = job["MATCH_SiteEnvironment"]
    return dict(part.split("=", 1) for part in env.split(";"))["SiteName"]


def test_dags_spread_over_sites_by_rank_without_exceeding_max_matches() -> None:
    sites = [_site(name, m) for name, m in MAX.items()]
    queue = {f"group{g}": _dag_job(g) for g in range(12)}
    unrelated = ClassAd.parse("[ Requirements = true; Cmd = \"/bin/true\" ]")  # not for the USCMS grid

    cycle = negotiate({**queue, "plain": unrelated}, sites)
    assert cycle.kinds == 2
    assert len(cycle.matches) == sum(MAX.values()) and "plain" in cycle.unmatched
    per_site = Counter(m.resource.removesuffix("-USCMS-Site") for m in cycle.matches)
    assert per_site == Counter(MAX)
    # -CurMatches/MaxMatches is integer division: every open site ranks 0, and moving a matched
    # site to the end of the list spreads the DAGs round-robin
    assert [m.resource.split("-")[0] for m in cycle.matches[:4]] == ["uw", "fnal", "ufl", "caltech"]
    assert all(m.rank == 0.0 for m in cycle.matches)
    assert all(cur_matches(ad) == ad["MaxMatches"] for ad in cycle.resources)

    started = {}
    for match in cycle.matches:
        result = expand(match.job_ad, match.resource_ad)
        assert result.ok
        assert result.ad["GlobusScheduler"] == "ramen.fnal.gov:/jobmanager-condor"
        assert result.ad["Environment"].startswith("SiteName=")
        started[match.job] = result.ad
    assert {job: _site_of(ad) for job, ad in started.items()} == {
        m.job: m.resource.removesuffix("-USCMS-Site") for m in cycle.matches}

    # a second cycle matches nothing more: the sites are full
    waiting = {job: ad for job, ad in queue.items() if job not in started}
    assert negotiate(waiting, cycle.resources).matches == []

    # the monitor republishes the site ads from the queue; two DAGs at fnal finish first
    finished = [m.job for m in cycle.matches if m.resource.startswith("fnal")][:2]
    running = [ad for job, ad in started.items() if job not in finished]
    republished = recount_matches(cycle.resources, running, by="SiteEnvironment")
    counts = {ad["Name"].split("-")[0]: cur_matches(ad) for ad in republished}
    assert counts == {"uw": 2, "fnal": 1, "ufl": 1, "caltech": 2}
    # the USCMS report's monitor keys sites by the name inside the environment: a site that republishes a
    # changed environment is still counted right that way, and not by comparing whole values
    changed = [ad.copy() for ad in cycle.resources]
    changed[0]["SiteEnvironment"] = changed[0]["SiteEnvironment"] + ";SiteExportDir=/scratch/export"
    by_value = recount_matches(changed, running)
    by_name = recount_matches(changed, running,
                              key=lambda env: _site_of(ClassAd({"MATCH_SiteEnvironment": env})))
    assert cur_matches(by_value[0]) == 0 and cur_matches(by_name[0]) == cur_matches(republished[0]) > 0
    assert [cur_matches(ad) for ad in by_name] == [cur_matches(ad) for ad in republished]
    refill = negotiate(waiting, republished)
    assert [m.resource for m in refill.matches] == ["fnal-USCMS-Site"] * 2

    # backing out of a decision frees the slot for the next cycle
    decision = refill.matches[0]
    freed = unmatch(refill.resources, decision)
    assert cur_matches(next(ad for ad in freed if ad["Name"] == decision.resource)) == 2
    rest = {job: ad for job, ad in waiting.items() if job not in {m.job for m in refill.matches}}
    again = negotiate({decision.job: decision.job_ad, **rest}, freed)
    assert [(m.job, m.resource) for m in again.matches] == [(decision.job, decision.resource)]


def test_backing_out_releases_concurrency_limits() -> None:
    site = ClassAd.parse('[ Name = "s"; WantAdRevaluate = true; CurMatches = 0;'
                         ' Requirements = CurMatches < 5 ]')
    job = ClassAd.parse('[ Requirements = true; ConcurrencyLimits = "pegasus_transfer.stagein" ]')
    limits = ConcurrencyLimits({"CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER": 1})
    cycle = negotiate([job, job], [site], limits)
    assert len(cycle.matches) == 1 and "pegasus_transfer.stagein" in cycle.unmatched[1]
    freed = unmatch(cycle.resources, cycle.matches[0], limits)
    assert limits.usage("pegasus_transfer.stagein") == 0 and cur_matches(freed[0]) == 0
    assert len(negotiate([job], freed, limits).matches) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=5), st.integers(0, 12))
def test_the_monitor_recounts_what_the_negotiator_counted_and_backing_out_undoes_it(
        maxima: list[int], dags: int) -> None:
    sites = [_site(f"s{i}", m) for i, m in enumerate(maxima)]
    cycle = negotiate([_dag_job(g) for g in range(dags)], sites)
    assert len(cycle.matches) == min(dags, sum(maxima))
    started = [expand(m.job_ad, m.resource_ad).ad for m in cycle.matches]
    recounted = recount_matches(cycle.resources, started)
    assert [cur_matches(ad) for ad in recounted] == [cur_matches(ad) for ad in cycle.resources]
    assert all(cur_matches(ad) <= ad["MaxMatches"] for ad in cycle.resources)
    resources = cycle.resources
    for match in cycle.matches:
        resources = unmatch(resources, match)
    assert all(cur_matches(ad) == 0 for ad in resources)
