#!/usr/bin/env bash
# Two builds of `annals` side by side on the same work, interleaved: a format change's cost.
#
#   OLD=path/to/old/annals NEW=target/release/annals benches/format_cost.sh [RECORDS] [ROUNDS]
#
# For each build in turn, each round: `demo` of RECORDS records (one command per durable
# commit), `export` of it and `import` into a new file (the bulk path: large transactions),
# and `verify` of the import; it prints wall and user seconds of each and, at the end, the
# median of each build and the median of the per-round ratios NEW / OLD with their range.
# Logs go under target/format_cost on the real disk (an fsync on tmpfs costs nothing). Build
# both with `cargo build --release -p annals-cli` (the old one in a worktree of its commit).
set -euo pipefail
: "${OLD:?set OLD to the old build's annals binary}"
: "${NEW:?set NEW to the new build's annals binary}"
RECORDS=${1:-100000}
ROUNDS=${2:-5}
cd "$(dirname "$0")/.."
DIR=target/format_cost
rm -rf "$DIR"
mkdir -p "$DIR"
RESULTS="$DIR/results.txt"
timed() {
    /usr/bin/time -f "%e %U" -o "$DIR/time" "$@" >/dev/null 2>&1
    cat "$DIR/time"
}
for round in $(seq 1 "$ROUNDS"); do
    for build in old new; do
        binary=$OLD
        [ "$build" = new ] && binary=$NEW
        log="$DIR/$build.redb" export="$DIR/$build.export" copy="$DIR/$build.copy.redb"
        rm -f "$log" "$export" "$copy"
        demo=$(timed "$binary" demo "$log" --records "$RECORDS")
        "$binary" export "$log" "$export" >/dev/null
        import=$(timed "$binary" import "$export" "$copy")
        verify=$(timed "$binary" verify "$copy")
        echo "$round $build $demo $import $verify $(stat -c %s "$copy")" | tee -a "$RESULTS"
    done
done
python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = ["demo wall", "demo user", "import wall", "import user", "verify wall", "verify user"]
by = {build: [list(map(float, r[2:8])) for r in rows if r[1] == build] for build in ("old", "new")}
for i, name in enumerate(names):
    old = [r[i] for r in by["old"]]
    new = [r[i] for r in by["new"]]
    ratios = [n / o for o, n in zip(old, new)]
    print(f"{name:12} old {statistics.median(old):8.2f} s  new {statistics.median(new):8.2f} s  "
          f"new/old {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})")
PY
