"""The local pool: this machine's slots as ClassAds, and matchmaking of jobs to them.

What HTCondor's startd, schedd and negotiator do for one machine, as pure resource accounting (no
processes here; the local backend runs what the pool grants):

- **Slots** are laid out from the configuration (``_slotlayout``) and advertised as ClassAds:
  ``Name`` (``slot1@host``), ``Machine``, ``SlotID``, ``SlotType`` (``"Static"``,
  ``"Partitionable"``, ``"Dynamic"``), ``PartitionableSlot``, ``DynamicSlot``, ``Cpus``, ``Memory``
  (MB), ``Disk`` (KiB), ``VirtualMemory`` (KiB), ``TotalSlotCpus``/``Memory``/``Disk``,
  ``TotalCpus``/``TotalMemory``/``TotalDisk`` (the machine), ``Arch``, ``OpSys``,
  ``MyType = "Machine"``, ``Start`` and ``Requirements`` (true unless ``START`` is configured), and
  the attributes HTCondor's startd adds by default (``_slotattrs``: ``FileSystemDomain``,
  ``UidDomain``, the ``OpSys*`` family, ``Rank = 0.0``, ...).
  A partitionable slot's ``Cpus``/``Memory``/``Disk`` are what it has *left*.
- **Requests**: the job's ``RequestCpus`` (default 1), ``RequestMemory`` (MB; default
  ``JOB_DEFAULT_REQUESTMEMORY``, 128 as in HTCondor) and ``RequestDisk`` (KiB; default
  ``JOB_DEFAULT_REQUESTDISK``, 1024 here -- HTCondor uses the job's ``DiskUsage``) may be
  expressions; they are evaluated with the job as MY and the slot as TARGET, so ``DAGNodeRetry``
  of the job ad is in scope.  A request that is not a finite non-negative number within 64 bits
  (``classad.usable_request``) makes the job *never runnable*.
- **Match**: a slot is a candidate if it is free (a static slot unclaimed, a partitionable slot with
  what the job asks for left), the requests fit, the job's ``Requirements`` evaluate to true and the
  slot's ``Requirements`` (``START``) too.  Among candidates the highest ``Rank`` (the job's, with
  the slot as TARGET; undefined counts 0) wins, ties going to the lowest slot id.
- **Partitionable slots** split a dynamic slot (``slot1_1``, the lowest free suffix) with exactly the
  request (CPU ids taken from the parent's lowest free ones); on release its resources merge back.
- **Local universe** (``JobUniverse == 12`` or ``Universe == "local"``) jobs take no slot: they run
  when ``START_LOCAL_UNIVERSE`` (default true) evaluates to true with ``TotalLocalJobsRunning`` and
  ``TotalSchedulerJobsRunning`` in MY scope and the job as TARGET.
- **Never runnable**: ``unrunnable(job_ad)`` says why a job could not run even on the empty pool
  (asks more than any slot could give, requirements no slot meets, a broken request expression); the
  backend reports such a job ``Held`` instead of letting it wait forever.
- **Affinity**: with ``ENFORCE_CPU_AFFINITY``, a claim carries the CPU ids its job is pinned to.
- **Memory limit** of a claim: the job's ``RequestMemory`` when the job states one, else the slot's
  memory (what a job may use before it is stopped); none for the local universe.

Invariants: the sum of granted CPUs/memory/disk of a partitionable slot never exceeds the slot's
size; a static slot has at most one claim; ``release`` is idempotent; ``statistics()`` counts are
exact.  The pool is not thread-safe (one engine loop drives it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from sheaf import classad
from sheaf.backends._poolsig import signature
from sheaf.backends._slotattrs import default_attributes, read_os_release
from sheaf.backends._slotconfig import PoolConfig, as_mapping, load_config
from sheaf.backends._slotlayout import Machine, SlotDef, layout
from sheaf.classad import ClassAd

__all__ = ["Claim", "Pool"]

LOCAL_UNIVERSE = 12
SCHEDULER_UNIVERSE = 7
_UNIVERSES = {"local": LOCAL_UNIVERSE, "scheduler": SCHEDULER_UNIVERSE, "vanilla": 5}
_DEFAULT_MEMORY = 128
_DEFAULT_DISK = 1024
_TRUE = classad.parse("true")
_CACHE_LIMIT = 65536
_REQUEST_ATTRS = ("RequestCpus", "RequestMemory", "RequestDisk")


@dataclass(frozen=True, slots=True)
class Claim:
    """What a job was granted: a slot (None for the local universe) and its share of it."""

    slot: str | None
    cpus: int
    memory: int
    disk: int
    cpu_ids: frozenset[int] | None
    memory_limit: int | None
    local: bool = False
    slot_id: int = 0
    sub_id: int = 0
    assigned: tuple[int, ...] = ()


@dataclass(slots=True)
class _Slot:
    defn: SlotDef
    ad: ClassAd
    claimed: bool = False
    cpus: int = 0
    memory: int = 0
    disk: int = 0
    free_cpu_ids: list[int] = field(default_factory=list)
    children: set[int] = field(default_factory=set)
    name: str = ""

    @property
    def usable(self) -> bool:
        return self.cpus > 0 if self.defn.partitionable else not self.claimed


class Pool:
    """This machine's slots and the matchmaking of job ads to them (see the module docstring)."""

    def __init__(self, config: PoolConfig | Mapping[str, str] | str | None = None, *,
                 machine: Machine | None = None) -> None:
        self.config = as_mapping(config)
        self.machine = machine or Machine.detect(self.config)
        self.enforce_affinity = self.config.boolean("ENFORCE_CPU_AFFINITY", False)
        self._default_memory = self.config.integer("JOB_DEFAULT_REQUESTMEMORY", _DEFAULT_MEMORY)
        self._default_disk = self.config.integer("JOB_DEFAULT_REQUESTDISK", _DEFAULT_DISK)
        self._start = self._expression("START", "true")
        self._start_local = self._expression("START_LOCAL_UNIVERSE", "true")
        self._defaults = default_attributes(self.config, self.machine.hostname, read_os_release())
        self._slots = [self._make_slot(defn) for defn in layout(self.config, self.machine)]
        self._pristine = [slot.ad.copy() for slot in self._slots]  # as if every slot were free
        self._local_running = 0
        self._claims_total = 0
        self._dynamic_total = 0
        self._idle_static = sum(1 for s in self._slots if not s.defn.partitionable)
        self._partitionable = [s for s in self._slots if s.defn.partitionable]
        self._local_universe: dict[object, bool] = {}
        self._unrunnable_cache: dict[object, str | None] = {}
        self._matches: dict[object, tuple[float, tuple[int, int, int] | None]] = {}

    @classmethod
    def from_config(cls, path: str | os.PathLike[str] | None = None) -> Pool:
        """The pool configured by ``path``, ``$SHEAF_CONFIG`` or ``~/.config/sheaf/pool.conf``."""
        return cls(load_config(path))

    # -- configuration ---------------------------------------------------------------------------

    def _expression(self, name: str, default: str) -> classad.Expr:
        text = self.config.get(name, default).strip() or default
        try:
            return classad.parse(text)
        except ValueError as exc:
            raise self.config.error(name, "not a ClassAd expression", "the value is a ClassAd expression",
                                    text) from exc

    def _make_slot(self, defn: SlotDef) -> _Slot:
        slot = _Slot(defn, ClassAd(), cpus=defn.cpus, memory=defn.memory, disk=defn.disk,
                     free_cpu_ids=list(defn.cpu_ids))
        slot.name = self._slot_name(defn.slot_id)
        slot.ad = self._slot_ad(defn, slot.name, defn.cpus, defn.memory, defn.disk,
                                "Partitionable" if defn.partitionable else "Static")
        return slot

    def _slot_name(self, slot_id: int, sub_id: int = 0) -> str:
        suffix = f"_{sub_id}" if sub_id else ""
        return f"slot{slot_id}{suffix}@{self.machine.hostname}"

    def _slot_ad(self, defn: SlotDef, name: str, cpus: int, memory: int, disk: int, kind: str) -> ClassAd:
        machine = self.machine
        ad = ClassAd({
            "MyType": "Machine", "Name": name, "Machine": machine.hostname, "SlotID": defn.slot_id,
            "SlotTypeID": defn.type_id, "SlotType": kind, "PartitionableSlot": kind == "Partitionable",
            "DynamicSlot": kind == "Dynamic", "Cpus": cpus, "Memory": memory, "Disk": disk,
            "VirtualMemory": defn.swap, "TotalSlotCpus": defn.cpus, "TotalSlotMemory": defn.memory,
            "TotalSlotDisk": defn.disk, "TotalCpus": machine.cpus, "TotalMemory": machine.memory,
            "TotalDisk": machine.disk, "DetectedCpus": len(machine.cpu_ids), "Arch": machine.arch,
            **self._defaults, "OpSys": machine.opsys,
        })
        ad["Start"] = self._start
        ad["Requirements"] = self._start
        return ad

    # -- matchmaking -------------------------------------------------------------------------------

    @property
    def saturated(self) -> bool:
        """True when no slot could take any job now (every static slot claimed, no CPU left)."""
        return self._idle_static == 0 and not any(s.cpus for s in self._partitionable)

    def is_local(self, job_ad: ClassAd) -> bool:
        """Whether the job runs in the local (or scheduler) universe, outside the slots."""
        key = (job_ad.get_expr("JobUniverse"), job_ad.get_expr("Universe"))
        local = self._local_universe.get(key)
        if local is None:
            local = self._local_universe[key] = _universe(job_ad) in (LOCAL_UNIVERSE, SCHEDULER_UNIVERSE)
        return local

    def slot_ad(self, claim: Claim) -> ClassAd | None:
        """The ad of the slot ``claim`` holds (a partitionable slot's own), for ``$$()`` expansion;
        None for the local universe, which matches no slot."""
        if claim.local:
            return None
        return next((slot.ad for slot in self._slots if slot.defn.slot_id == claim.slot_id), None)

    def slot_ads(self) -> list[ClassAd]:
        """The current slot ads (static and partitionable; a dynamic slot is described by its claim)."""
        return [slot.ad for slot in self._slots]

    def claim(self, job_ad: ClassAd, sig: tuple[object, ...] | None = None) -> Claim | None:
        """Grant ``job_ad`` the best-ranked fitting slot, or None if none is free now (non-blocking).

        ``sig`` is ``signature(job_ad)`` when the caller has it already.
        """
        if self.is_local(job_ad):
            return self._claim_local(job_ad)
        if self.saturated:
            return None
        if sig is None and self._start is _TRUE:
            sig = signature(job_ad)
        best: tuple[float, _Slot, tuple[int, int, int]] | None = None
        for slot in self._slots:
            if slot.usable:
                rank, fit = self._match(job_ad, slot, sig)
                if fit is not None and (best is None or rank > best[0]):
                    best = (rank, slot, fit)
        if best is None:
            return None
        self._claims_total += 1
        return self._grant(job_ad, best[1], best[2])

    def _match(self, job_ad: ClassAd, slot: _Slot,
               sig: tuple[object, ...] | None) -> tuple[float, tuple[int, int, int] | None]:
        """(rank, fit) of ``job_ad`` on ``slot``, memoized per signature and slot state."""
        key = (sig, slot.defn.slot_id, slot.cpus, slot.memory, slot.disk)
        if sig is not None:
            hit = self._matches.get(key)
            if hit is not None:
                return hit
        fit = self._fit(job_ad, slot.ad)
        result = (_rank(job_ad, slot.ad) if fit is not None else 0.0, fit)
        if sig is not None:
            if len(self._matches) >= _CACHE_LIMIT:
                self._matches.clear()
            self._matches[key] = result
        return result

    def _fit(self, job_ad: ClassAd, slot_ad: ClassAd) -> tuple[int, int, int] | None:
        requests = self._requests(job_ad, slot_ad)
        if requests is None:
            return None
        cpus, memory, disk = requests
        if cpus > slot_ad["Cpus"] or memory > slot_ad["Memory"] or disk > slot_ad["Disk"]:
            return None
        if self._start is not _TRUE and self._start.evaluate_in(slot_ad, job_ad) is not True:
            return None
        if "Requirements" in job_ad and job_ad.eval("Requirements", slot_ad) is not True:
            return None
        return requests

    def _requests(self, job_ad: ClassAd, slot_ad: ClassAd) -> tuple[int, int, int] | None:
        """The job's (cpus, memory MB, disk KiB) against ``slot_ad``; None if one is not a number."""
        defaults = (1, self._default_memory, self._default_disk)
        values: list[int] = []
        for name, default in zip(_REQUEST_ATTRS, defaults, strict=True):
            value = job_ad.eval(name, slot_ad) if name in job_ad else default
            if not classad.usable_request(value):  # not a number, negative, infinite, NaN, > 64 bits
                return None
            values.append(int(-(-value // 1)))  # HTCondor rounds a fractional request up
        return values[0], values[1], values[2]

    def _grant(self, job_ad: ClassAd, slot: _Slot, fit: tuple[int, int, int]) -> Claim:
        cpus, memory, disk = fit
        limit = memory if "RequestMemory" in job_ad else None
        if not slot.defn.partitionable:
            slot.claimed = True
            self._idle_static -= 1
            pinned = frozenset(slot.defn.cpu_ids) if self.enforce_affinity else None
            return Claim(slot.name, slot.defn.cpus, slot.defn.memory, slot.defn.disk, pinned,
                         limit if limit is not None else slot.defn.memory, slot_id=slot.defn.slot_id)
        sub_id = next(i for i in range(1, len(slot.children) + 2) if i not in slot.children)
        slot.children.add(sub_id)
        cpus = max(cpus, 1)
        taken, slot.free_cpu_ids = slot.free_cpu_ids[:cpus], slot.free_cpu_ids[cpus:]
        self._resize(slot, -cpus, -memory, -disk)
        self._dynamic_total += 1
        pinned = frozenset(taken) if self.enforce_affinity and taken else None
        return Claim(self._slot_name(slot.defn.slot_id, sub_id), cpus, memory, disk, pinned,
                     limit if limit is not None else memory, slot_id=slot.defn.slot_id, sub_id=sub_id,
                     assigned=tuple(taken))

    def _resize(self, slot: _Slot, cpus: int, memory: int, disk: int) -> None:
        slot.cpus += cpus
        slot.memory += memory
        slot.disk += disk
        slot.ad["Cpus"], slot.ad["Memory"], slot.ad["Disk"] = slot.cpus, slot.memory, slot.disk

    def _claim_local(self, job_ad: ClassAd) -> Claim | None:
        scope = ClassAd({"TotalLocalJobsRunning": self._local_running,
                         "TotalSchedulerJobsRunning": self._local_running})
        if self._start_local.evaluate_in(scope, job_ad) is not True:
            return None
        self._local_running += 1
        self._claims_total += 1
        return Claim(None, 0, 0, 0, None, None, local=True)

    def release(self, claim: Claim) -> None:
        """Give the claim's resources back (a dynamic slot merges into its parent)."""
        if claim.local:
            self._local_running = max(0, self._local_running - 1)
            return
        slot = self._slots[claim.slot_id - 1]
        if not slot.defn.partitionable:
            if slot.claimed:
                slot.claimed = False
                self._idle_static += 1
            return
        if claim.sub_id not in slot.children:
            return
        slot.children.discard(claim.sub_id)
        slot.free_cpu_ids = sorted({*slot.free_cpu_ids, *claim.assigned})
        self._resize(slot, claim.cpus, claim.memory, claim.disk)

    # -- diagnosis -----------------------------------------------------------------------------------

    def unrunnable(self, job_ad: ClassAd, sig: tuple[object, ...] | None = None) -> str | None:
        """Why ``job_ad`` could never run here, even with every slot free; None if it could."""
        if self.is_local(job_ad):
            idle = ClassAd({"TotalLocalJobsRunning": 0, "TotalSchedulerJobsRunning": 0})
            if self._start_local.evaluate_in(idle, job_ad) is True:
                return None
            return f"START_LOCAL_UNIVERSE = {self._start_local} is not true even with no local job running"
        if self._start is not _TRUE:
            return self._diagnose(job_ad)
        key = sig if sig is not None else signature(job_ad)
        if key in self._unrunnable_cache:
            return self._unrunnable_cache[key]
        reason = self._diagnose(job_ad)
        if len(self._unrunnable_cache) >= _CACHE_LIMIT:
            self._unrunnable_cache.clear()
        self._unrunnable_cache[key] = reason
        return reason

    def _diagnose(self, job_ad: ClassAd) -> str | None:
        if not self._pristine:
            return "the pool has no slots"
        for name in _REQUEST_ATTRS:
            expr = job_ad.get_expr(name)
            if expr is None:
                continue
            value = job_ad.eval(name, self._pristine[0])
            if not classad.usable_request(value):
                return (f"{name} = {expr} evaluates to {value!r}, "
                        "not a non-negative number (finite, within 64 bits)")
        if any(self._fit(job_ad, ad) is not None for ad in self._pristine):
            return None
        asked = self._requests(job_ad, self._pristine[0]) or (0, 0, 0)
        biggest = max(self._pristine, key=lambda ad: (ad["Cpus"], ad["Memory"]))
        return (f"no slot can ever match: the job asks for {asked[0]} cpus, {asked[1]} MB memory, "
                f"{asked[2]} KiB disk (largest slot: {biggest['Cpus']} cpus, {biggest['Memory']} MB, "
                f"{biggest['Disk']} KiB), requirements {job_ad.get_expr('Requirements') or 'true'}")

    def statistics(self) -> dict[str, int]:
        """Slot and claim counts, and the free resources, now."""
        static = [s for s in self._slots if not s.defn.partitionable]
        partitionable = [s for s in self._slots if s.defn.partitionable]
        return {
            "slots": len(self._slots),
            "static_claimed": sum(1 for s in static if s.claimed),
            "dynamic_slots": sum(len(s.children) for s in partitionable),
            "free_cpus": sum(s.cpus for s in partitionable)
            + sum(s.defn.cpus for s in static if not s.claimed),
            "free_memory": sum(s.memory for s in partitionable)
            + sum(s.defn.memory for s in static if not s.claimed),
            "local_running": self._local_running,
            "claims_total": self._claims_total,
            "dynamic_total": self._dynamic_total,
        }


def _constant(job_ad: ClassAd, name: str) -> object:
    """The attribute's value (``ad[name]`` is the value itself when it is a constant)."""
    value = job_ad.get(name)
    return job_ad.eval(name) if isinstance(value, classad.Expr) else value


def _universe(job_ad: ClassAd) -> int:
    value = _constant(job_ad, "JobUniverse")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    name = _constant(job_ad, "Universe")
    if isinstance(name, str):
        return _UNIVERSES.get(name.lower(), 5)
    return 5


def _rank(job_ad: ClassAd, slot_ad: ClassAd) -> float:
    if "Rank" not in job_ad:
        return 0.0
    value = job_ad.eval("Rank", slot_ad)
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else 0.0
