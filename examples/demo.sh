#!/usr/bin/env bash
# `make demo`: validate, plan (horizontal clustering) and run the bundled blackdiamond example.
#
# The plan goes to demo-run/plan at the top of the repository (gitignored; replaced with --force on
# every run).  Jobs run in demo-run/plan/scratch/condorpool, where f.a is staged in and f.d appears.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="$ROOT/demo-run"
SHEAF="$ROOT/.venv/bin/sheaf"

step() { printf '\n==> %s\n' "$*"; }

mkdir -p "$RUN"
cd "$ROOT/examples/blackdiamond"   # catalogs and pegasus.properties are found here, bin/keg from here

step "sheaf validate workflow.yml"
"$SHEAF" validate workflow.yml

step "sheaf plan workflow.yml -d $RUN/plan --cluster horizontal --input-dir input --force -v"
"$SHEAF" plan workflow.yml -d "$RUN/plan" --cluster horizontal --input-dir input --force -v

step "the DAG that HTCondor DAGMan (or sheaf run) executes: $RUN/plan/blackdiamond.dag"
cat "$RUN/plan/blackdiamond.dag"

step "sheaf run $RUN/plan"
"$SHEAF" run "$RUN/plan"

step "sheaf status $RUN/plan"
"$SHEAF" status "$RUN/plan"

step "the workflow's output: $RUN/plan/scratch/condorpool/f.d"
cat "$RUN/plan/scratch/condorpool/f.d"
