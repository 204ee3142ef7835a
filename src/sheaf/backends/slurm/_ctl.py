"""The Slurm backend's one choke point to the controller: ``sbatch``, ``squeue``, ``scancel``, ``sdiag``.

Every call goes through :class:`SlurmCommands` (argv lists, never a shell; ``SLURM_CONF`` and the
rest of the environment given once), which counts the calls by command so tests and the benchmark
can see what the backend costs the controller.  ``sbatch``'s refusals are sorted into kinds
(:func:`classify`), because each asks for a different answer:

- ``transient``: the controller is busy or unreachable (socket time-outs, "Resource temporarily
  unavailable", "Unable to contact slurm controller"): back off and submit again;
- ``limit``: a QOS/association limit on submitted jobs (``MaxSubmitJobs``...): the attempt goes back
  in the queue and the backend lowers its cap of queued jobs to what the controller accepted;
- ``error``: anything else (an unknown partition, an impossible request): the attempt can never run
  as submitted, reported ``Held`` with sbatch's message.

:class:`RateLimit` is the bounded submission rate: a token bucket (``rate`` per second, ``burst``
tokens) with an injected clock, a non-blocking :meth:`RateLimit.try_acquire` and ``statistics()``.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Kind", "RateLimit", "SlurmCommands", "Submitted", "classify"]

Kind = Literal["ok", "transient", "limit", "error"]

_TRANSIENT = re.compile(r"socket timed out|temporarily unavailable|unable to contact slurm controller|"
                        r"zero bytes were transmitted|connection refused|slurm_receive_msg|"
                        r"communication connection failure|try again|controller.*(busy|not responding)",
                        re.IGNORECASE)
_LIMIT = re.compile(r"maxsubmit|qosmaxsubmit|assocmaxsubmit|job violates accounting/qos policy|"
                    r"submit limit|maxjobcount|max_job_count", re.IGNORECASE)
_CALL_TIMEOUT = 120.0
_CHUNK = 500  # job ids per scancel/squeue call


def classify(returncode: int, stderr: str) -> Kind:
    if returncode == 0:
        return "ok"
    if _LIMIT.search(stderr):
        return "limit"
    if _TRANSIENT.search(stderr):
        return "transient"
    return "error"


@dataclass(frozen=True, slots=True)
class Submitted:
    kind: Kind
    job: str = ""       # the Slurm job id when ok
    message: str = ""   # sbatch's stderr otherwise


class RateLimit:
    """A token bucket: at most ``burst`` submissions at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float = 50.0, burst: int = 100,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate must be > 0 and burst >= 1 (got {rate}, {burst})")
        self.rate, self.burst, self._clock = rate, burst, clock
        self._tokens, self._last = float(burst), clock()
        self.granted = self.refused = 0

    def try_acquire(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            self.granted += 1
            return True
        self.refused += 1
        return False

    def statistics(self) -> dict[str, float]:
        return {"rate": self.rate, "burst": self.burst, "tokens": self._tokens, "granted": self.granted,
                "refused": self.refused}


class SlurmCommands:
    """Runs the Slurm client commands with ``env`` (see the module docstring)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env) if env is not None else None
        self.calls: Counter[str] = Counter()

    def _run(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls[argv[0]] += 1
        try:
            return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=False,
                                  timeout=_CALL_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(list(argv), 1, "", f"{argv[0]}: socket timed out (no answer)")
        except OSError as exc:
            return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: {exc.strerror}")

    def sbatch(self, argv: Sequence[str]) -> Submitted:
        done = self._run(argv)
        kind = classify(done.returncode, done.stderr)
        if kind == "ok":
            job = done.stdout.strip().split(";")[0]
            if job.isdigit():
                return Submitted("ok", job=job)
            return Submitted("error", message=f"sbatch answered {done.stdout.strip()!r}")
        return Submitted(kind, message=done.stderr.strip() or f"sbatch exited with {done.returncode}")

    def squeue(self, fields: str = "%i %T") -> list[list[str]] | None:
        """This user's jobs, one list of fields each (``None`` when squeue could not answer)."""
        done = self._run(["squeue", "--noheader", "--me", "--states=all", f"--format={fields}"])
        if done.returncode != 0:
            return None
        return [line.split(None, fields.count("%") - 1) for line in done.stdout.splitlines() if line.strip()]

    def scancel(self, jobs: Iterable[str]) -> None:
        ids = list(jobs)
        for start in range(0, len(ids), _CHUNK):
            self._run(["scancel", *ids[start:start + _CHUNK]])

    def sdiag_rpcs(self) -> dict[str, int]:
        """Controller RPC counts by message type (``sdiag``), for the benchmark."""
        done = self._run(["sdiag"])
        counts: dict[str, int] = {}
        for match in re.finditer(r"^\s*(REQUEST_\w+|MESSAGE_\w+|RESPONSE_\w+)\s+\(\s*\d+\)\s+count:(\d+)",
                                 done.stdout, re.MULTILINE):
            counts[match.group(1)] = counts.get(match.group(1), 0) + int(match.group(2))
        return counts
