"""The braindump of a plan: what pegasus-plan records about a submit directory, in its own keys.

pegasus-plan writes ``braindump.yml`` into every submit directory, and with ``--json`` prints the same
record (plus ``message`` and ``pegasus-run``, the command that starts the run) on stdout;
``Pegasus.api``'s ``wf.plan()`` reads ``submit_dir`` from that JSON and then loads ``braindump.yml``
(``Pegasus.braindump``, which accepts only its own keys).  sheaf writes both with the keys of
Pegasus 5's ``Braindump`` record that mean something here; ``planner`` names the ``sheaf`` program.
The YAML is written inside the plan's atomic write (an ``extra_files`` entry), so a submit directory
never lacks it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Sequence

from sheaf import __version__

#: pegasus-plan's closing words, which --json carries as ``message``
SUCCESS_MESSAGE = "\n\nI have concluded the planning, and here is the run command."


def braindump(*, workflow: str, workflow_file: str, base: str, submit_dir: str, dag: str, user: str,
              argv: Sequence[str], wf_uuid: str | None = None) -> dict[str, object]:
    """The braindump record of a plan about to be written into ``submit_dir``."""
    wf_uuid = wf_uuid or str(uuid.uuid4())
    return {
        "user": user,
        "grid_dn": None,
        "submit_hostname": socket.gethostname(),
        "root_wf_uuid": wf_uuid,
        "wf_uuid": wf_uuid,
        "dax": os.path.abspath(workflow_file),
        "dax_label": workflow,
        "dax_index": "0",
        "dax_version": "5.0",
        "pegasus_wf_name": f"{workflow}-0",
        "timestamp": time.strftime("%Y%m%dT%H%M%S%z"),
        "basedir": os.path.abspath(base),
        "submit_dir": submit_dir,
        "planner": os.path.join(os.path.dirname(sys.executable), "sheaf"),
        "planner_version": __version__,
        "planner_arguments": " ".join(argv),
        "pegasus_build": f"sheaf {__version__}",
        "rundir": os.path.basename(submit_dir),
        "bindir": os.path.dirname(sys.executable),
        "vogroup": "pegasus",
        "uses_pmc": False,
        "dag": os.path.basename(dag),
        "condor_log": os.path.join(submit_dir, os.path.basename(dag).removesuffix(".dag") + ".log"),
        "type": "dag",
    }


def yaml_text(record: dict[str, object]) -> str:
    """``braindump.yml``: one ``key: value`` line each, values as JSON scalars (valid YAML)."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in record.items())


def json_text(record: dict[str, object]) -> str:
    """What ``pegasus-plan --json`` prints: the braindump, the message and the run command."""
    shown = {**record, "message": SUCCESS_MESSAGE,
             "pegasus-run": f"pegasus-run --json {record['submit_dir']}"}
    return json.dumps(shown, indent=2)
