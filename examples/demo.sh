#!/usr/bin/env bash
# `make demo`: validate, plan (horizontal clustering) and run the bundled blackdiamond example.
#
# demo-run/ at the top of the repository (gitignored) is the base of the submit directories: as with
# pegasus-plan, each plan goes to a new demo-run/<user>/pegasus/blackdiamond/runNNNN, which sheaf plan
# prints last.  Jobs run in its scratch/condorpool, where f.a is staged in and f.d appears.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="$ROOT/demo-run"
SHEAF="$ROOT/.venv/bin/sheaf"

step() { printf '\n==> %s\n' "$*"; }

mkdir -p "$RUN"
cd "$ROOT/examples/blackdiamond"   # catalogs and pegasus.properties are found here, bin/keg from here

step "sheaf validate workflow.yml"
"$SHEAF" validate workflow.yml

step "sheaf plan workflow.yml --dir $RUN --cluster horizontal --input-dir input -v"
"$SHEAF" plan workflow.yml --dir "$RUN" --cluster horizontal --input-dir input -v | tee "$RUN/plan.out"
PLAN="$(sed -n 's/^submit directory: //p' "$RUN/plan.out")"

step "the DAG that HTCondor DAGMan (or sheaf run) executes: $PLAN/blackdiamond.dag"
cat "$PLAN/blackdiamond.dag"

step "sheaf run $PLAN"
"$SHEAF" run "$PLAN"

step "sheaf status $PLAN"
"$SHEAF" status "$PLAN"

step "the workflow's output: $PLAN/scratch/condorpool/f.d"
cat "$PLAN/scratch/condorpool/f.d"
