"""ClassAd speed, sheaf against the official binding (classad2) in the same run, side by side.

    .venv/bin/python benchmarks/classad_bench.py [--quick]

Rates (per second, higher is better) for: parsing distinct Requirements expressions; loading job ads
never seen before (new and old syntax) and evaluating their Requirements against a slot ad; the first
evaluation of an expression just parsed; evaluating one parsed Requirements expression again and
again against a target ad; and a symmetric match of a job ad and a machine ad.  The header names the
build (``compiled``: the C parser; ``pure``: ``SHEAF_PURE_PYTHON=1``) and the load average.  Then
one negotiator cycle of 100,000 job ads (200 distinct kinds) against 1,000 resource ads, beside what the
same cycle would cost as a naive loop over classad2.symmetricMatch (every job against every resource,
measured on a slice and extrapolated; the binding has no negotiator of its own).

The jobs of one kind are copies of one prototype sharing its expressions, as the procs of an
HTCondor cluster share their cluster ad; ClusterId/ProcId differ per job.  Resources: 800 slots used
once per cycle (no WantAdRevaluate) and 200 grid sites with WantAdRevaluate and MaxMatches 200.  A
second cycle has only WantAdRevaluate sites (1,000, MaxMatches 100), so most of its 100,000 jobs are
matched and every match re-evaluates.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2  # noqa: F401  (must come before classad2)

# isort: split
import classad2

from sheaf import classad

JOB = ('[ Owner = "alice"; Cmd = "/bin/sleep"; RequestMemory = 2048; RequestCpus = 1; Arch = "X86_64";'
       ' Requirements = TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Memory >= RequestMemory'
       ' && TARGET.Cpus >= RequestCpus; Rank = TARGET.Memory ]')
MACHINE = ('[ Name = "slot1@node1"; Arch = "X86_64"; OpSys = "LINUX"; Memory = 4096; Cpus = 4;'
           ' LoadAvg = 0.1; KeyboardIdle = 2000;'
           ' Requirements = TARGET.RequestMemory <= MY.Memory && (LoadAvg <= 0.3 && KeyboardIdle > 15 * 60);'
           ' Rank = 0 ]')


def _rate(fn: Callable[[int], object], count: int) -> float:
    """The best of three runs of ``fn(run)``, in operations per second of CPU time (the machine is
    shared, so CPU time is steadier than wall time; both libraries are measured the same way)."""
    best = 0.0
    for run in range(3):
        start = time.process_time()
        fn(run)
        best = max(best, count / max(time.process_time() - start, 1e-9))
    return best


def _row(what: str, ours: float, theirs: float) -> None:
    print(f"{what:<34} {ours:>14,.0f} {theirs:>14,.0f} {ours / theirs:>8.2f}x")


def _job(i: int, old: bool) -> str:
    """A job ad never seen before (its ClusterId, Args and Requirements differ from every other)."""
    requirements = ('TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Memory >= RequestMemory'
                    f" && TARGET.Cpus >= RequestCpus && TARGET.Disk >= {i % 997}")
    attrs = [("Owner", f'"user{i % 17}"'), ("Cmd", '"/opt/app/bin/task"'), ("Args", f'"-n {i} -o o{i}.dat"'),
             ("ClusterId", str(i)), ("ProcId", "0"), ("JobPrio", str(i % 4)), ("RequestCpus", "1"),
             ("RequestMemory", str(1024 + i % 1000)), ("RequestDisk", "1000000"), ("Iwd", '"/home/user/run"'),
             ("Environment", '"PATH=/bin:/usr/bin HOME=/home/user"'), ("JobUniverse", "5"),
             ("Requirements", requirements),
             ("Rank", "TARGET.Memory"), ("WantRemoteIO", "true"), ("LeaveJobInQueue", "false")]
    if old:
        return "".join(f"{k} = {v}\n" for k, v in attrs)
    return "[ " + "; ".join(f"{k} = {v}" for k, v in attrs) + " ]"


SLOT = MACHINE.replace("Cpus = 4;", "Cpus = 4; Disk = 50000000;")


def micro(count: int) -> None:
    # distinct texts in every run: sheaf.classad.parse caches text -> Expr, and a cache hit is not a parse
    texts = [[f'TARGET.Memory >= {1000 + i} && TARGET.Arch == "X86_64" && (Cpus > {run} || Owner == "u{i}")'
              for i in range(count)] for run in range(6)]
    print(f"{'per second (CPU time)':<34} {'sheaf':>14} {'classad2':>14} {'ratio':>9}")
    ours = _rate(lambda run: [classad.parse(t) for t in texts[run]], count)
    theirs = _rate(lambda run: [classad2.ExprTree(t) for t in texts[3 + run]], count)
    _row("parse (distinct expressions)", ours, theirs)

    slot, cslot = classad.ClassAd.parse(SLOT), classad2.ClassAd(SLOT)
    for old in (False, True):
        jobs = [[_job(run * count + i, old) for i in range(count)] for run in range(6)]
        load = classad.ClassAd.parse_old if old else classad.ClassAd.parse
        cload = classad2.parseOne if old else classad2.ClassAd

        def ours_load(run: int, jobs: list[list[str]] = jobs,
                      load: Callable[[str], classad.ClassAd] = load) -> None:
            for text in jobs[run]:  # the same calls as classad2's below
                ad = load(text)
                assert ad.lookup("Requirements").evaluate_in(ad, slot) is True

        def theirs_load(run: int, jobs: list[list[str]] = jobs,
                        cload: Callable[[str], object] = cload) -> None:
            for text in jobs[3 + run]:
                ad = cload(text)
                assert ad.lookup("Requirements").eval(ad, cslot) is True  # type: ignore[attr-defined]
        _row(f"load job ad ({'old' if old else 'new'} syntax) + Requirements",
             _rate(ours_load, count), _rate(theirs_load, count))

    job, machine = classad.ClassAd.parse(JOB), classad.ClassAd.parse(MACHINE)
    cjob, cmachine = classad2.ClassAd(JOB), classad2.ClassAd(MACHINE)
    # every term evaluated (no && cut short); the names in the first kind are all bound to constants in
    # the job or the machine (sheaf's compiled walk answers), the second also reads a name the job lacks
    # (compat mode finds Cpus in the machine: sheaf's Python walk answers)
    tails = (("constants", "RequestCpus <= {run}"), ("compat lookup", '(Cpus < {run} || Owner == "u{i}")'))
    for what, tail in tails:
        fresh = [[f'TARGET.Memory > -{i} && TARGET.Arch == "X86_64" && {tail.format(run=run + 7, i=i)}'
                  for i in range(count)] for run in range(6)]
        firsts = [[classad.parse(t) for t in fresh[run]] for run in range(3)]
        cfirsts = [[classad2.ExprTree(t) for t in fresh[3 + run]] for run in range(3)]
        assert all(e.evaluate_in(job, machine) is True for e in firsts[0][:10])
        firsts[0] = [classad.parse(t + " ") for t in fresh[0]]  # not evaluated yet: the assert did
        ours = _rate(lambda run, firsts=firsts: [e.evaluate_in(job, machine) for e in firsts[run]], count)
        theirs = _rate(lambda run, cfirsts=cfirsts: [e.eval(cjob, cmachine) for e in cfirsts[run]], count)
        _row(f"first evaluation ({what})", ours, theirs)

    req, creq = job.lookup("Requirements"), cjob.lookup("Requirements")
    assert req.evaluate_in(job, machine) is True and creq.eval(cjob, cmachine) is True
    loop = range(count)
    ours = _rate(lambda run: [req.evaluate_in(job, machine) for _ in loop], count)
    theirs = _rate(lambda run: [creq.eval(cjob, cmachine) for _ in loop], count)
    _row("Requirements against a target", ours, theirs)

    assert classad.symmetric_match(job, machine) and cjob.symmetricMatch(cmachine)
    ours = _rate(lambda run: [classad.symmetric_match(job, machine) for _ in loop], count)
    theirs = _rate(lambda run: [cjob.symmetricMatch(cmachine) for _ in loop], count)
    _row("symmetric match", ours, theirs)


def _kind_text(kind: int, rng: random.Random) -> str:
    # (memory, cpus) is unique per kind, so the 200 prototypes are 200 distinct kinds
    memory, cpus = 256 * (1 + kind % 50), 1 + kind // 50
    grid = kind % 5 == 0
    attrs = {
        "Owner": f'"user{kind % 17}"', "Cmd": f'"/opt/app/bin/task{kind}"', "JobPrio": str(kind % 4),
        "RequestCpus": str(cpus),
        "RequestMemory": f"ifThenElse(isUndefined(DAGNodeRetry) || DAGNodeRetry == 0, {memory},"
                         f" {memory * 2})",
        "Requirements": ('TARGET.Is_Grid_Site =?= true' if grid else
                         f'TARGET.Arch == "{rng.choice(["X86_64", "aarch64"])}" && TARGET.OpSys == "LINUX"'
                         ' && TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus'),
        "Rank": "-CurMatches/MaxMatches" if grid else rng.choice(["TARGET.Memory", "0", "TARGET.Cpus * 10"]),
        "WANT_GRID": "true" if grid else "false",
        "Environment": '"$$(SiteEnvironment);PATH=/bin"' if grid else '"PATH=/bin"',
    }
    if kind % 10 == 3:
        attrs["ConcurrencyLimits"] = '"pegasus_transfer.stagein"'
    if kind % 7 == 1:
        attrs["DAGNodeRetry"] = "1"
    return "[ " + "; ".join(f"{k} = {v}" for k, v in attrs.items()) + " ]"


def _resources(rng: random.Random) -> list[str]:
    slots = [f'[ Name = "slot{i}@node{i // 8}"; Arch = "{"X86_64" if i % 4 else "aarch64"}";'
             f' OpSys = "LINUX"; Memory = {rng.choice([2048, 4096, 8192, 16384, 32768])};'
             f' Cpus = {rng.choice([1, 2, 4, 8])};'
             ' Requirements = TARGET.WANT_GRID =!= true && TARGET.RequestMemory <= MY.Memory; Rank = 0 ]'
             for i in range(800)]
    sites = [f'[ Name = "site{i}"; WantAdRevaluate = true; CurMatches = {i % 3}; MaxMatches = 200;'
             ' Is_Grid_Site = true; Requirements = CurMatches < MaxMatches && TARGET.WANT_GRID =?= true;'
             f' SiteEnvironment = "SITE=site{i}";'
             f' MatchmakerURL = "gk{i}.example.org/jobmanager-condor" ]'
             for i in range(200)]
    return slots + sites


def cycle(jobs_count: int, kinds: int) -> None:
    rng = random.Random(4)
    start = time.perf_counter()
    prototypes = [classad.ClassAd.parse(_kind_text(k, rng)) for k in range(kinds)]
    resource_texts = _resources(rng)
    resources = [classad.ClassAd.parse(text) for text in resource_texts]
    per_kind = jobs_count // kinds
    jobs = {}
    for k, proto in enumerate(prototypes):
        for p in range(per_kind):
            job = proto.copy()
            job["ClusterId"], job["ProcId"] = 100 + k, p
            jobs[f"{100 + k}.{p}"] = job
    setup = time.perf_counter() - start
    config = {"CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER": 500}
    start, cpu = time.perf_counter(), time.process_time()
    result = classad.negotiate(jobs, resources, config)
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu

    sample = 20
    cjobs = [classad2.ClassAd(_kind_text(k, random.Random(k))) for k in range(sample)]
    cres = [classad2.ClassAd(text) for text in resource_texts]
    start = time.process_time()
    for cjob in cjobs:
        for res in cres:
            cjob.symmetricMatch(res)
    naive = (time.process_time() - start) / sample * len(jobs)
    print(f"\nnegotiator cycle: {len(jobs):,} jobs, {result.kinds} kinds, {len(resources):,} resources "
          f"(setup {setup:.1f} s, not timed)")
    print(f"  sheaf negotiate            {ours:8.2f} s wall, {ours_cpu:.2f} s CPU   "
          f"{len(result.matches):,} matches, {len(result.unmatched):,} unmatched")
    print(f"  classad2 naive loop        {naive:8.0f} s CPU   (every job x every resource; extrapolated from "
          f"{sample} jobs x {len(cres)} resources)")


def revaluation_cycle() -> None:
    """The WantAdRevaluate path under load: 1,000 grid sites that each take up to 100 matches."""
    sites = [classad.ClassAd.parse(
        f'[ Name = "site{i}"; WantAdRevaluate = true; CurMatches = 0; MaxMatches = 100;'
        f' Memory = {1024 * (1 + i % 8)};'
        ' Requirements = CurMatches < MaxMatches && TARGET.RequestMemory <= Memory;'
        f' SiteEnvironment = "S={i}" ]')
        for i in range(1000)]
    jobs = {}
    for k in range(200):
        proto = classad.ClassAd.parse(f"[ RequestMemory = {40 * (1 + k)}; JobPrio = {k % 4};"
                                      " Requirements = TARGET.Memory >= RequestMemory;"
                                      f" Rank = -CurMatches/MaxMatches + {k % 3} ]")
        for p in range(500):
            job = proto.copy()
            job["ProcId"] = p
            jobs[f"{100 + k}.{p}"] = job
    start, cpu = time.perf_counter(), time.process_time()
    result = classad.negotiate(jobs, sites)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"  sheaf, all WantAdRevaluate {wall:8.2f} s wall, {cpu:.2f} s CPU   "
          f"{len(result.matches):,} matches ({result.kinds} kinds; "
          "every match re-evaluates a site and moves it to the end)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--micro", action="store_true", help="the per-operation rates only, no cycles")
    args = parser.parse_args()
    from sheaf.classad import _parser
    accelerated = getattr(_parser, "ACCELERATED", False)  # absent before the C parser: a pure build
    build = "compiled" if accelerated else "pure (SHEAF_PURE_PYTHON=1 or no C extension)"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"sheaf ({build}) vs classad2 {classad2.version()}, Python {sys.version.split()[0]},"
          f" load average {load}\n")
    micro(5_000 if args.quick else 50_000)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.micro:
        cycle(100_000, 200)
        revaluation_cycle()


if __name__ == "__main__":
    main()
