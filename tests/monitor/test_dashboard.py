"""The dashboard in headless Chromium (Debian's, installed by scripts/system-deps.sh): the page's DOM
shows a running workflow's counts change, and a screenshot of a run's page is not blank."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from matplotlib import image
from tests.monitor.conftest import BIN, slow_workflow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/system-deps.sh installs it "
                                                          "as root (Debian's package)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]


def _chromium(*args: str, tmp: Path) -> str:
    done = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.stdout


def _row(dom: str, run_dir: Path) -> dict[str, str]:
    match = re.search(rf'<tr class="run" data-dir="{re.escape(str(run_dir))}">(.*?)</tr>', dom)
    assert match, dom[:2000]
    return dict(re.findall(r'<td class="(?:state )?(\w+)">(\w+)</td>', match.group(1)))


@pytest.fixture
def dashboard() -> object:
    server = subprocess.Popen([str(BIN / "sheaf"), "dashboard", "--port", "0"], stdout=subprocess.PIPE,
                              text=True)
    assert server.stdout is not None
    url = server.stdout.readline().split()[2]
    yield url
    server.terminate()
    server.wait(timeout=30)


def test_the_page_shows_a_running_workflow_progress(tmp_path: Path, dashboard: str) -> None:
    gate = tmp_path / "gate"  # the jobs wait for it: the page is seen once before they can finish
    run_dir = slow_workflow(tmp_path, 40, gate)
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", str(run_dir)], stdout=subprocess.DEVNULL)
    try:
        seen: list[dict[str, str]] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            dom = _chromium("--dump-dom", dashboard, tmp=tmp_path)
            if f'data-dir="{run_dir}"' in dom:
                seen.append(_row(dom, run_dir))
                gate.touch()
                if seen[-1].get("succeeded") or (engine.poll() is not None and len(seen) > 2):
                    break
            time.sleep(0.5)
    finally:
        gate.touch()
        assert engine.wait(timeout=120) == 0
    dom = _chromium("--dump-dom", dashboard, tmp=tmp_path)
    seen.append(_row(dom, run_dir))
    done = [int(row["done"]) for row in seen]
    assert done == sorted(done) and done[-1] == int(seen[-1]["total"]) == 41, seen  # 40 jobs and create_dir
    assert len(set(done)) >= 2, seen  # the page followed the run: its counts moved
    assert "succeeded" in seen[-1]


def test_a_screenshot_of_a_run_page_is_not_blank(blackdiamond: Path, tmp_path: Path, dashboard: str) -> None:
    shot = tmp_path / "run.png"
    page = f"{dashboard}run?dir={blackdiamond}"
    _chromium(f"--screenshot={shot}", "--window-size=1000,700", page, tmp=tmp_path)
    pixels = image.imread(str(shot))
    assert pixels.shape[0] == 700 and pixels.std() > 0.02  # not one colour
    dom = _chromium("--dump-dom", page, tmp=tmp_path)
    assert '<span class="state succeeded">succeeded</span>' in dom and dom.count("<svg") == 3
