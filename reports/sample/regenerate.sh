#!/bin/sh
# Regenerates the sample reports: the catalogue over 5 seeds (reports/sample/catalogue.{html,md,json})
# the failover comparison of leader election across families, over the seeds its files
# declare (reports/sample/failover.{html,md,json}, from scenarios/failover/), and the comparison
# of every family's lock design and Chubby's under the same pause and partition over 50 seeds
# (reports/sample/compare.{html,md,json}, from scenarios/compare/), and the scheduled jobs of
# scenarios/cron/ over the seeds their files declare (reports/sample/cron.{html,md,json}),
# lock granularity over many keys, scenarios/keys/ (reports/sample/keys.{html,md,json}), and
# readers and writers of read-write locks, scenarios/read-write/
# (reports/sample/read-write.{html,md,json}), and the design review of reviews/designs.toml over 40
# seeds per cell (reports/sample/review.{html,md,json}).
# Run from anywhere; the paths in the report are relative to the repository, so the files are
# the same on every machine. A test (tests/it/report.rs) fails when they are not current.
set -eu
cd "$(dirname "$0")/../.."
cargo build --release --quiet
for ext in html md json; do
    ./target/release/lockstep report scenarios/catalogue --seeds 5 --out "reports/sample/catalogue.$ext" > /dev/null
    ./target/release/lockstep report scenarios/failover --out "reports/sample/failover.$ext" > /dev/null
    ./target/release/lockstep report scenarios/compare --seeds 50 --out "reports/sample/compare.$ext" > /dev/null
    ./target/release/lockstep report scenarios/cron --out "reports/sample/cron.$ext" > /dev/null
    ./target/release/lockstep report scenarios/keys --out "reports/sample/keys.$ext" > /dev/null
    ./target/release/lockstep report scenarios/read-write --out "reports/sample/read-write.$ext" > /dev/null
    ./target/release/lockstep review reviews/designs.toml --seeds 40 --out "reports/sample/review.$ext" > /dev/null
done
echo "wrote reports/sample/catalogue, failover, compare, cron, keys, read-write and review .html, .md and .json"
