from __future__ import annotations

import os

# the official bindings (an oracle for the HTCondor files) read no pool configuration
os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
