"""How the machine is cut into slots: HTCondor's startd slot-type knobs, applied to this machine.

The machine (``Machine.detect``): CPUs are the ones this process may run on
(``os.sched_getaffinity``), or ``NUM_CPUS``; memory is the physical memory in MB (``sysconf``), or
``MEMORY``, minus ``RESERVED_MEMORY``; disk is the free space (KiB) of the execute directory, or
``DISK`` (KiB, a sheaf extension: HTCondor measures it only), minus ``RESERVED_DISK`` (MB, as in
HTCondor); swap is the machine's swap in KiB.

Slots (``layout``):

- ``MAX_SLOT_TYPES`` (default 10, HTCondor's) bounds N in ``SLOT_TYPE_N``,
  ``NUM_SLOTS_TYPE_N`` (default 0) and ``SLOT_TYPE_N_PARTITIONABLE`` (default False).
- Counts are bounded by ``MAX_SLOTS`` (4096): ``NUM_CPUS``, ``MAX_SLOT_TYPES``, ``NUM_SLOTS`` and the
  sum of the ``NUM_SLOTS_TYPE_N``; a larger one is a ``FormatError`` (slots are built one by one).
- ``SLOT_TYPE_N`` is a comma-separated list of ``resource=amount``; the first letter of a resource
  name tells which it is, case-insensitively, as in HTCondor: ``cpus`` (``c``, ``cpu``), ``ram``
  (``r``, ``m``, ``mem``, ``memory``), ``swap`` (``s``, ``v``, ``virt``, ``VirtualMemory``), ``disk``
  (``d``).  An amount is ``auto``, a percentage (``50%``), a fraction (``1/4``, or a decimal below 1
  such as ``0.25``), or an absolute amount: CPUs, memory in MB, disk and swap in KiB, each
  optionally with a unit suffix ``K``, ``M``, ``G`` or ``T`` (``ram=2G``; HTCondor itself takes
  only shares for disk and swap).  An item without ``=`` is a *blanket* share for every resource
  the list does not name (``SLOT_TYPE_1 = 1/4``; ``cpus=1, disk=auto, 50%``).  A resource given no
  amount is ``auto``.
- Fractions and percentages are of the whole machine; ``auto`` shares what the explicit amounts
  leave, evenly among the slots that ask for ``auto`` (a CPU count never below 1).
- When no ``NUM_SLOTS_TYPE_N`` is set (or all are 0), the machine gets ``NUM_SLOTS`` (default: the
  number of CPUs) static slots of type 0, all amounts ``auto``: the HTCondor default of one slot per
  CPU with an even share of memory, swap and disk.
- Slots are numbered 1, 2, ... in type order (type 1's slots first, then type 2's, type 0 last).
- CPU ids: ``SLOTn_CPU_AFFINITY = 0,2`` (ranges ``0-3`` allowed) gives slot n's CPUs; otherwise the
  machine's CPU ids are dealt out in slot order (wrapping around when CPUs are over-committed).
  They are applied to jobs only with ``ENFORCE_CPU_AFFINITY = True``.

Invariant: the explicit amounts of all slots never exceed the machine (a ``FormatError`` located at
the offending ``SLOT_TYPE_N`` otherwise); every slot has at least one CPU.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import dataclass
from fractions import Fraction

from sheaf.backends._slotconfig import PoolConfig

__all__ = ["Machine", "SlotDef", "layout", "parse_cpu_list"]

RESOURCES = ("cpus", "memory", "swap", "disk")
# As in HTCondor, the first letter of a resource's name tells which one it is.
_ALIASES = {"c": "cpus", "r": "memory", "m": "memory", "s": "swap", "v": "swap", "d": "disk"}
# Absolute amounts: memory counts MB, disk and swap count KiB; a suffix names the unit instead.
_BASE_KIB = {"cpus": 0, "memory": 1024, "swap": 1, "disk": 1}
_UNIT_KIB = {"K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}
_ABSOLUTE = re.compile(r"^(\d+)\s*([KMGT])?B?$", re.IGNORECASE)
_DEFAULT_MAX_TYPES = 10
MAX_SLOTS = 4096  # slots (and CPUs) of one machine: each is built one by one, so the count is bounded

Amount = Fraction | int | None  # a share of the machine, an absolute amount, or None for auto


@dataclass(frozen=True, slots=True)
class Machine:
    """What there is to share: CPUs (and their ids), memory MB, disk KiB, swap KiB."""

    cpus: int
    memory: int
    disk: int
    swap: int
    cpu_ids: tuple[int, ...]
    hostname: str = "localhost"
    arch: str = "X86_64"
    opsys: str = "LINUX"

    @classmethod
    def detect(cls, config: PoolConfig, execute_dir: str | None = None) -> Machine:
        cpu_ids = tuple(sorted(os.sched_getaffinity(0)))
        cpus = config.integer("NUM_CPUS", len(cpu_ids), minimum=1, maximum=MAX_SLOTS)
        memory = config.integer("MEMORY", _physical_mb(), minimum=1)
        memory -= config.integer("RESERVED_MEMORY", 0)
        disk = config.integer("DISK", _free_kib(execute_dir or os.getcwd()), minimum=0)
        disk -= config.integer("RESERVED_DISK", 0) * 1024
        swap = _swap_kib()
        if memory < 1:
            raise config.error("RESERVED_MEMORY", "leaves no memory", "RESERVED_MEMORY < MEMORY")
        return cls(cpus, memory, max(disk, 0), swap, cpu_ids, _hostname(), _arch(), "LINUX")


@dataclass(frozen=True, slots=True)
class SlotDef:
    """One configured slot: what a static slot offers, or a partitionable slot's whole size."""

    slot_id: int
    type_id: int
    partitionable: bool
    cpus: int
    memory: int
    disk: int
    swap: int
    cpu_ids: tuple[int, ...]


def _physical_mb() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20


def _free_kib(directory: str) -> int:
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize // 1024


def _swap_kib() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("SwapTotal:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _hostname() -> str:
    return socket.gethostname() or "localhost"


def _arch() -> str:
    machine = platform.machine().upper()
    return {"AMD64": "X86_64", "ARM64": "AARCH64"}.get(machine, machine)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0,2,4-6"`` -> ``(0, 2, 4, 5, 6)``; raises ValueError on anything else."""
    ids: list[int] = []
    for part in text.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(part)
        if len(low) > 6 or len(high) > 6 or (dash and int(high) - int(low) > MAX_SLOTS):
            raise ValueError(part)  # no machine has that many CPUs: refuse before listing them
        ids.extend(range(int(low), int(high) + 1) if dash else [int(low)])
    if not ids:
        raise ValueError(text)
    return tuple(dict.fromkeys(ids))


def _amount(resource: str, text: str) -> Amount:
    """One amount of a slot type; raises ValueError when it is not one of the forms."""
    text = text.strip()
    if text.lower() == "auto":
        return None
    if text.endswith("%"):
        share = Fraction(text[:-1].strip())
        if not 0 < share <= 100:
            raise ValueError(text)
        return share / 100
    if "/" in text or "." in text:
        share = Fraction(text.replace(" ", ""))
        if not 0 < share <= 1:
            raise ValueError(text)
        return share
    match = _ABSOLUTE.match(text)
    if match is None:
        raise ValueError(text)
    number, unit = int(match.group(1)), match.group(2)
    if resource == "cpus":
        if unit:
            raise ValueError(text)
        return number
    if unit is None:
        return number
    return number * _UNIT_KIB[unit.upper()] // _BASE_KIB[resource]


def parse_slot_type(config: PoolConfig, name: str) -> dict[str, Amount]:
    """``SLOT_TYPE_N``'s value as ``{resource: amount}`` (every resource present)."""
    text = config[name].strip()
    amounts: dict[str, Amount] = dict.fromkeys(RESOURCES)
    blanket: Amount = None
    named: dict[str, Amount] = {}
    try:
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, equals, value = item.partition("=")
            if not equals:  # a blanket share for every resource not named
                blanket = _share(item)
                continue
            resource = _ALIASES.get(key.strip()[:1].lower())
            if resource is None:
                raise config.error(name, f"unknown resource {key.strip()!r}",
                                   "resources are cpus, ram (memory), swap (virtualmemory), disk", item)
            named[resource] = _amount(resource, value)
    except (ValueError, ZeroDivisionError):
        raise config.error(name, "bad amount", "an amount is auto, N%, a/b, or a number with K/M/G/T",
                           text) from None
    for resource in RESOURCES:
        amounts[resource] = named.get(resource, blanket)
    return amounts


def _share(text: str) -> Amount:
    """A blanket amount: a fraction, a percentage or ``auto`` (never an absolute amount)."""
    share = _amount("memory", text)
    if share is not None and not isinstance(share, Fraction):
        raise ValueError(text)
    return share


@dataclass(slots=True)
class _Planned:
    type_id: int
    partitionable: bool
    amounts: dict[str, Amount]


def _planned_slots(config: PoolConfig, machine: Machine) -> list[_Planned]:
    max_types = config.integer("MAX_SLOT_TYPES", _DEFAULT_MAX_TYPES, minimum=0, maximum=MAX_SLOTS)
    planned: list[_Planned] = []
    for type_id in range(1, max_types + 1):
        count = config.integer(f"NUM_SLOTS_TYPE_{type_id}", 0, maximum=MAX_SLOTS - len(planned))
        if count == 0:
            continue
        name = f"SLOT_TYPE_{type_id}"
        amounts = parse_slot_type(config, name) if name in config else dict.fromkeys(RESOURCES)
        partitionable = config.boolean(f"{name}_PARTITIONABLE", False)
        planned.extend(_Planned(type_id, partitionable, dict(amounts)) for _ in range(count))
    if not planned:
        count = config.integer("NUM_SLOTS", machine.cpus, minimum=1, maximum=MAX_SLOTS)
        planned = [_Planned(0, False, dict.fromkeys(RESOURCES)) for _ in range(count)]
    return planned


def _total(machine: Machine, resource: str) -> int:
    value: int = getattr(machine, resource)
    return value


def _resolve(config: PoolConfig, machine: Machine, planned: list[_Planned], resource: str) -> list[int]:
    """Every slot's amount of one resource: explicit amounts first, ``auto`` shares the rest."""
    total = _total(machine, resource)
    values: list[int | None] = []
    for slot in planned:
        amount = slot.amounts[resource]
        if isinstance(amount, Fraction):
            values.append(int(total * amount))
        else:
            values.append(amount)
    explicit = sum(v for v in values if v is not None)
    if explicit > total and resource in ("cpus", "memory", "disk"):
        culprit = next(s.type_id for s in planned if s.amounts[resource] is not None)
        name = f"SLOT_TYPE_{culprit}" if culprit else "NUM_SLOTS"
        raise config.error(name, f"slots ask for {explicit} {resource}, the machine has {total}",
                           "slot types never exceed the machine", f"{resource}={explicit}")
    autos = sum(1 for v in values if v is None)
    share = (total - explicit) // autos if autos else 0
    floor = 1 if resource == "cpus" else 0
    return [max(v if v is not None else share, floor) for v in values]


def layout(config: PoolConfig, machine: Machine) -> list[SlotDef]:
    """The slots of this machine under ``config`` (see the module docstring)."""
    planned = _planned_slots(config, machine)
    if not planned:
        return []
    resolved = {resource: _resolve(config, machine, planned, resource) for resource in RESOURCES}
    slots: list[SlotDef] = []
    next_cpu = 0
    for index, slot in enumerate(planned):
        slot_id = index + 1
        cpus = resolved["cpus"][index]
        dealt = tuple(machine.cpu_ids[(next_cpu + i) % len(machine.cpu_ids)] for i in range(cpus))
        next_cpu += cpus
        cpu_ids = _affinity(config, machine, slot_id) or dealt
        slots.append(SlotDef(slot_id, slot.type_id, slot.partitionable, cpus, resolved["memory"][index],
                             resolved["disk"][index], resolved["swap"][index], cpu_ids))
    return slots


def _affinity(config: PoolConfig, machine: Machine, slot_id: int) -> tuple[int, ...] | None:
    name = f"SLOT{slot_id}_CPU_AFFINITY"
    if name not in config:
        return None
    try:
        ids = parse_cpu_list(config[name])
    except ValueError:
        raise config.error(name, "not a CPU list", "a CPU list is like 0,2,4-6") from None
    missing = [cpu for cpu in ids if cpu not in machine.cpu_ids]
    if missing:
        raise config.error(name, f"CPU {missing[0]} is not available here (have {machine.cpu_ids})",
                           "CPU ids exist on this machine")
    return ids
