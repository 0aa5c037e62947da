#!/usr/bin/env bash
# Speed of two revisions side by side, in one session (issue 13: seeds per CPU-second of each
# family's chaos scenario within 3% of the binary before the change, or better).
#
#   benches/side-by-side.sh [--instructions] OLD_REV [NEW_REV]
#
# Builds both revisions: OLD_REV (and NEW_REV, if given) in temporary git worktrees, removed on
# exit; NEW_REV defaults to the working tree, uncommitted changes included. Then:
#   default         runs the two `cargo bench` binaries alternately ROUNDS times (default 5; the
#                   order flips each round: old new, new old, ...) and prints per family the
#                   median and best seeds/CPU-s of each, new/old of both, and the range of
#                   new/old over the rounds (each round's pair ran back to back). CPU time
#                   swings by 10-20% while others load the machine: run it when idle.
#   --instructions  counts instructions per seed under valgrind (cachegrind) of
#                   `lockstep sweep FILE --seeds SEEDS --from 1 --jobs 1` (SEEDS default 100) for
#                   each family's chaos scenario: steady to about 0.05% even on a busy machine.
# Raw outputs are kept under target/side-by-side/ (ignored by git); nothing is committed.
set -euo pipefail

mode=cpu
if [[ ${1:-} == --instructions ]]; then mode=instructions; shift; fi
[[ $# -ge 1 && $# -le 2 ]] || { sed -n '4,17p' "$0"; exit 2; }
rounds=${ROUNDS:-5} seeds=${SEEDS:-100}
families=(redis redlock etcd zookeeper)

root=$(git rev-parse --show-toplevel)
out=$root/target/side-by-side/$(date +%Y%m%d-%H%M%S)
tmp=$(mktemp -d /tmp/side-by-side.XXXXXX)
mkdir -p "$out" "$tmp/bin"

cleanup() {
  for w in "$tmp/old" "$tmp/new"; do
    if [[ -d $w ]]; then git -C "$root" worktree remove --force "$w" || true; fi
  done
  rm -rf "$tmp"
  git -C "$root" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The tree of each side: a temporary worktree of the revision, or the working tree.
declare -A tree
checkout() { # SIDE REV
  git -C "$root" rev-parse --verify --quiet "$2^{commit}" >/dev/null || { echo "no such revision: $2" >&2; exit 2; }
  git -C "$root" worktree add --quiet --detach "$tmp/$1" "$2"
  tree[$1]=$tmp/$1
}
checkout old "$1"
if [[ $# -eq 2 ]]; then checkout new "$2"; else tree[new]=$root; fi
echo "old: $1 ($(git -C "${tree[old]}" rev-parse --short HEAD))   new: ${2:-working tree} ($(git -C "${tree[new]}" rev-parse --short HEAD))" | tee "$out/revisions"

# Each temporary worktree builds in a target directory of its own side, kept between runs for
# the dependencies; the working tree builds in its usual one. Never one directory for two trees
# checked out before either is built: cargo judges freshness by mtimes and paths relative to the
# workspace, so it would take the first tree's binaries for the second's. A bench binary reads
# its scenarios from its own tree (CARGO_MANIFEST_DIR), which stays until exit.
for side in old new; do
  echo "building $side ..." >&2
  dir=${CARGO_TARGET_DIR:-$root/target}
  [[ ${tree[$side]} == "$root" ]] || dir=$root/target/side-by-side/build-$side
  exe=$(cd "${tree[$side]}" && CARGO_TARGET_DIR=$dir cargo bench --no-run --bench throughput \
    --message-format=json | sed -n 's/.*"executable":"\([^"]*\/throughput-[0-9a-f]*\)".*/\1/p')
  [[ -x $exe ]] || { echo "no bench binary built for $side" >&2; exit 1; }
  (cd "${tree[$side]}" && CARGO_TARGET_DIR=$dir cargo build --release --quiet --bin lockstep)
  cp "$exe" "$tmp/bin/$side-bench"
  cp "$dir/release/lockstep" "$tmp/bin/$side-lockstep"
done

if [[ $mode == instructions ]]; then
  command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  declare -A ir
  printf '%-10s %14s %14s %8s   (instructions per seed, seeds 1..%s)\n' family old new new/old "$seeds"
  for fam in "${families[@]}"; do
    for side in old new; do
      log=$out/$side-$fam.cachegrind
      # Exit 1 only says a verdict differs from the scenario's [expect]: the count still holds.
      valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --log-file="$log" \
        "$tmp/bin/$side-lockstep" sweep "${tree[$side]}/scenarios/chaos/$fam-unfenced.toml" \
        --seeds "$seeds" --from 1 --jobs 1 >/dev/null || [[ $? -eq 1 ]]
      ir[$side]=$(awk '/I +refs/ { gsub(",", "", $NF); print $NF }' "$log")
      [[ -n ${ir[$side]} ]] || { echo "no instruction count in $log" >&2; exit 1; }
    done
    awk -v f="$fam" -v o="${ir[old]}" -v n="${ir[new]}" -v s="$seeds" \
      'BEGIN { printf "%-10s %14.0f %14.0f %8.4f\n", f, o / s, n / s, n / o }'
  done | tee "$out/instructions"
  exit 0
fi

# Rounds: seeds/CPU-s lines of each run as "round side family value".
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" | tee "$out/load"
for ((r = 1; r <= rounds; r++)); do
  order=(old new); ((r % 2 == 0)) && order=(new old)
  for side in "${order[@]}"; do
    echo "round $r/$rounds: $side" >&2
    "$tmp/bin/$side-bench" >"$out/$side-$r.txt"
    awk -v r="$r" -v s="$side" '/seeds\/CPU-s/ {
      for (i = 2; i <= NF; i++) if ($i == "seeds/CPU-s") v = $(i - 1)
      sub(":", "", $1); print r, s, $1, v }' "$out/$side-$r.txt" >>"$out/figures"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load"

# Per family: median and best (highest) of each side with new/old of each, and min..max of each
# round's new/old. Other work only slows a run down, so on a shared machine the best is the
# steadier figure; a per-round range wider than a few percent means the machine was too busy.
awk -v rounds="$rounds" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  !($3 in seen) { seen[$3]; fams[++nf] = $3 }
  { all[$3, $2] = all[$3, $2] " " $4; v[$3, $2, $1] = $4; if ($4 > best[$3, $2]) best[$3, $2] = $4 }
  END {
    printf "%-10s %21s %21s %21s   %s\n", "", "median", "best", "new/old", "new/old per round"
    printf "%-10s %10s %10s %10s %10s %10s %10s   %s\n", "family", "old", "new", "old", "new", "median", "best", "min..max"
    for (k = 1; k <= nf; k++) {
      f = fams[k]; lo = 1e9; hi = 0
      for (r = 1; r <= rounds; r++) if (v[f, "old", r] > 0 && v[f, "new", r] > 0) {
        q = v[f, "new", r] / v[f, "old", r]; if (q < lo) lo = q; if (q > hi) hi = q }
      o = median(all[f, "old"]); n = median(all[f, "new"]); bo = best[f, "old"]; bn = best[f, "new"]
      printf "%-10s %10.1f %10.1f %10d %10d %10.3f %10.3f   %.3f..%.3f\n", f, o, n, bo, bn, n / o, bn / bo, lo, hi
    }
    print "(seeds/CPU-s over " rounds " rounds of `cargo bench`)"
  }' "$out/figures" | tee "$out/summary"
echo "raw outputs: $out" >&2
