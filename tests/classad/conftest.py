"""The oracle worker module is imported by path in the hypothesis test (it is also a script)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
sys.path.insert(0, os.path.dirname(__file__))
