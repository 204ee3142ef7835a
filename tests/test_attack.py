"""``scripts/attack.py`` as a test: every case of the attack (the hostile and unlucky inputs of the
reliability and security review, through the real command line) holds.  The script bounds each
command's time itself (a timed-out command is a failed row); the whole run is bounded here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHEAF = Path(sys.executable).with_name("sheaf")


def test_every_case_of_the_attack_holds() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "attack.py"), "--sheaf", str(SHEAF)],
                          capture_output=True, text=True, timeout=900, check=False)
    rows = done.stdout.splitlines()
    failed = [row for row in rows if row.startswith("FAIL")]
    assert not failed, "\n".join(failed) + done.stderr[-2000:]
    assert done.returncode == 0 and rows and rows[-1].endswith(" held, 0 failed"), done.stdout[-2000:]
    assert len(rows) > 30  # every case ran (one row each, the summary last)
