#!/bin/bash
set -e

LAUNCH_DIR=`pwd`
echo "Job Launched in directory $LAUNCH_DIR"
source "$DECAF_ENV_SOURCE"

# copy the json file and the multi-prog configuration for the job into
# the directory where we are going to launch decaf
cp -- 1Kgenome.json merge_cluster1.conf "$PEGASUS_SCRATCH_DIR/"

cd "$PEGASUS_SCRATCH_DIR"
echo "Invoking decaf executable from directory `pwd`"
srun --multi-prog ./merge_cluster1.conf
