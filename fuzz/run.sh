#!/usr/bin/env bash
# Runs one fuzz target for a time and reports executions and coverage.
#
#   fuzz/run.sh <target> <seconds>
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The committed
# corpus fuzz/corpus/<target>/ is read, never written: new inputs go to fuzz/work/<target>/
# (ignored by git). A crash is saved under fuzz/artifacts/<target>/; fix it, then commit
# the input under fuzz/corpus/<target>/ so the stable test replays it forever.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 <target> <seconds>" >&2
    echo "targets: decode_record commands_vs_model storage_faults cli_input" >&2
    exit 2
fi
target=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
mkdir -p "fuzz/work/$target"
log="fuzz/work/$target.log"

# No sanitizer: the crate forbids unsafe code; debug assertions stay on (-a).
status=0
cargo +nightly fuzz run --sanitizer none -a "$target" "fuzz/work/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 -max_len=4096 2>&1 | tee "$log" || status=$?

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
per_second=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
corpus=$(find "fuzz/work/$target" -type f | wc -l)
echo "== $target: ${seconds}s, ${executions:-?} executions (${per_second:-?}/s), coverage ${coverage:-?} edges, ${features:-?} features, work corpus ${corpus} inputs, exit ${status}"
exit "$status"
