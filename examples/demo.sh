#!/usr/bin/env bash
# `make demo`: validate, plan (horizontal clustering) and run the bundled blackdiamond example.
#
# Everything lands in demo-run/ at the top of the repository (gitignored): the catalogs for this
# checkout (they name absolute paths), the plan (demo-run/plan, replaced with --force each time)
# and the condorpool site's shared scratch directory, where the jobs run and f.d appears.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXAMPLE="$ROOT/examples/blackdiamond"
RUN="$ROOT/demo-run"
BIN="$ROOT/.venv/bin"
SHEAF="$BIN/sheaf"

step() { printf '\n==> %s\n' "$*"; }

mkdir -p "$RUN"
rm -rf "$RUN/scratch"
step "catalogs for this checkout -> $RUN"
"$BIN/python" "$EXAMPLE/generate.py" --catalogs "$RUN" --scratch "$RUN/scratch"

cd "$EXAMPLE"   # ./pegasus.properties is read from here
CATALOGS=(--tc "$RUN/transformations.yml" --sc "$RUN/sites.yml")

step "sheaf validate workflow.yml"
"$SHEAF" validate workflow.yml "${CATALOGS[@]}"

step "sheaf plan workflow.yml -d $RUN/plan --cluster horizontal --input-dir input --force -v"
"$SHEAF" plan workflow.yml -d "$RUN/plan" --cluster horizontal --input-dir input --force -v "${CATALOGS[@]}"

step "the DAG DAGMan (or sheaf run) executes"
cat "$RUN/plan/blackdiamond.dag"

step "sheaf run $RUN/plan"
"$SHEAF" run "$RUN/plan"

step "sheaf status $RUN/plan"
"$SHEAF" status "$RUN/plan" || true

step "the workflow's output: $RUN/scratch/f.d"
cat "$RUN/scratch/f.d"
