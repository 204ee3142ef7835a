"""DAGMAN_MAX_SUBMITS_PER_INTERVAL: at most that many Submit instructions per turn, the rest in the next
turns in the same order, without the loop waiting for events in between; the throttles still hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_helpers import FakeBackend, write_dag
from engine_machines import machine, submits, validate_every_machine  # noqa: F401 (autouse fixture)
from sheaf.condor._dagman import parse_dag
from sheaf.engine import DagmanOptions, Launch, run_workflow
from sheaf.engine._runconfig import HONOURED_KNOBS, config_warnings, run_limits
from sheaf.engine._state import Limits
from sheaf.errors import FormatError

WIDE = "".join(f"JOB n{i} n.sub\n" for i in range(250))


def test_a_step_submits_at_most_the_cap_and_says_more_are_ready(tmp_path: Path) -> None:
    m = machine(tmp_path, WIDE, Limits(max_submits_per_interval=100))
    steps = [m.start()]
    while steps[-1].more:
        steps.append(m.advance([], idle=0))
    assert [len(submits(s)) for s in steps] == [100, 100, 50]
    assert [s.more for s in steps] == [True, True, False]
    whole = machine(tmp_path, WIDE, Limits(max_submits_per_interval=1000)).start()
    assert [n for s in steps for n in submits(s)] == submits(whole) and not whole.more


def test_a_throttle_that_stops_the_submissions_is_not_more(tmp_path: Path) -> None:
    """``more`` means the cap, not a throttle, held a ready node back: maxjobs and maxidle still stop."""
    jobs = machine(tmp_path, WIDE, Limits(maxjobs=30, max_submits_per_interval=10))
    firsts = [jobs.start(), jobs.advance([]), jobs.advance([])]
    assert [len(submits(s)) for s in firsts] == [10, 10, 10]
    assert [s.more for s in firsts] == [True, True, False]
    idle = machine(tmp_path, WIDE, Limits(maxidle=150, max_submits_per_interval=100))
    first = idle.start()
    second = idle.advance([], idle=100)  # the backend reports the first 100 still idle
    assert (len(submits(first)), first.more, len(submits(second)), second.more) == (100, True, 50, False)


@pytest.mark.parametrize(("text", "cap"), [("1", 1), ("5000", 1000), ("0", 1), ("-3", 1), ("250", 250)])
def test_the_knob_is_clamped_to_its_legal_range(tmp_path: Path, text: str, cap: int) -> None:
    (tmp_path / "wf.config").write_text(f"DAGMAN_MAX_SUBMITS_PER_INTERVAL = {text}\n")
    dag = parse_dag(str(write_dag(tmp_path, "CONFIG wf.config\nJOB a a.sub\n")))
    assert run_limits(dag, DagmanOptions()).max_submits_per_interval == cap
    assert config_warnings(dag) == []  # honoured, so not warned about


def test_the_knob_defaults_to_100_and_refuses_what_is_no_integer(tmp_path: Path) -> None:
    assert run_limits(parse_dag(str(write_dag(tmp_path / "plain", "JOB a a.sub\n"))), DagmanOptions()) \
        .max_submits_per_interval == 100
    (tmp_path / "wf.config").write_text("DAGMAN_MAX_SUBMITS_PER_INTERVAL = many\n")
    dag = parse_dag(str(write_dag(tmp_path, "CONFIG wf.config\nJOB a a.sub\n")))
    with pytest.raises(FormatError, match="DAGMAN_MAX_SUBMITS_PER_INTERVAL is an integer"):
        run_limits(dag, DagmanOptions())


class _Watching(FakeBackend):
    """Records, per submission, how many blocking ``wait`` calls came before it and how many attempts
    it queued.  Its attempts take a while: a poll (a timeout under 10 ms, as the loop's while a
    journal commit is in flight) sees none end, a wait for events does."""

    def __init__(self, per_wait: int) -> None:
        super().__init__(per_wait)
        self.waits = 0
        self.seen: list[tuple[int, int]] = []

    def submit(self, launch: Launch) -> None:
        super().submit(launch)
        self.seen.append((self.waits, len(self.queue)))

    def wait(self, timeout: float | None) -> list:  # type: ignore[type-arg]
        if timeout is not None and timeout < 0.01:
            return []
        self.waits += 1
        return super().wait(timeout)


def _run_with(tmp: Path, body: str, knob: str | None, **kw: int) -> _Watching:
    config = f"DAGMAN_MAX_SUBMITS_PER_INTERVAL = {knob}\n" if knob is not None else ""
    tmp.mkdir(parents=True)
    (tmp / "wf.config").write_text(config)
    write_dag(tmp, "CONFIG wf.config\n" + body)
    backend = _Watching(per_wait=2)
    options = DagmanOptions(**kw)  # type: ignore[arg-type]
    assert run_workflow(str(tmp), backend=backend, handle_signals=False, options=options).succeeded
    return backend


def test_capped_steps_submit_in_the_order_one_step_would(tmp_path: Path) -> None:
    """Priorities, categories with their own MAXJOBS and parents: the steps a cap of 7 makes submit
    what one uncapped step submits, in the same order."""
    body = "".join(f"JOB n{i} n.sub\nCATEGORY n{i} c{i % 3}\nPRIORITY n{i} {i % 4}\n" for i in range(60)) \
        + "MAXJOBS c0 4\n" + "".join(f"PARENT n{i} CHILD n{i + 7}\n" for i in range(0, 30, 3))
    capped = machine(tmp_path, body, Limits(max_submits_per_interval=7))
    steps = [capped.start()]
    while steps[-1].more:
        steps.append(capped.advance([]))
    whole = machine(tmp_path, body, Limits(max_submits_per_interval=1000)).start()
    assert all(len(submits(s)) <= 7 for s in steps) and len(steps) > 3
    assert [n for s in steps for n in submits(s)] == submits(whole)


#: independent nodes of several priorities: the order of submission is the priority order whenever
#: the exits come, so a run's order is comparable across caps
PRIORITIES = "".join(f"JOB n{i} n.sub\nPRIORITY n{i} {i % 4}\n" for i in range(40))


@pytest.mark.parametrize("throttle", [{}, {"maxjobs": 3}, {"maxidle": 5}])
def test_the_order_of_submission_and_the_throttles_do_not_change(tmp_path: Path,
                                                                throttle: dict[str, int]) -> None:
    orders = {}
    for knob in (None, "1", "5000"):
        backend = _run_with(tmp_path / f"cap{knob}", PRIORITIES, knob, **throttle)
        orders[knob] = backend.nodes()
        if throttle:  # the backend never held more queued attempts than the throttle lets it
            assert max(queued for _, queued in backend.seen) <= min(throttle.values())
    assert orders["1"] == orders[None] == orders["5000"] and len(orders[None]) == 40


def test_the_loop_does_not_wait_while_the_cap_holds_ready_nodes_back(tmp_path: Path) -> None:
    """With one submission per turn, 20 ready nodes are all submitted before the backend is waited on."""
    backend = _run_with(tmp_path / "one", "".join(f"JOB n{i} n.sub\n" for i in range(20)), "1")
    assert [waits for waits, _ in backend.seen] == [0] * 20


def test_every_knob_the_engine_reads_is_not_warned_about() -> None:
    """A CONFIG knob sheaf run reads (a "DAGMAN_..." string in its code) is never reported as ignored."""
    import re

    import sheaf

    root = Path(sheaf.__file__).parent
    read = {knob for path in root.rglob("*.py")
            for knob in re.findall(r'"(DAGMAN_[A-Z_]+)"', path.read_text(encoding="utf-8"))}
    assert read and read <= HONOURED_KNOBS, sorted(read - HONOURED_KNOBS)

