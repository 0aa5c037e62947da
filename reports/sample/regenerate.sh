#!/bin/sh
# Regenerates the sample report of the catalogue (reports/sample/catalogue.{html,md,json}).
# Run from anywhere; the paths in the report are relative to the repository, so the files are
# the same on every machine. A test (tests/it/report.rs) fails when they are not current.
set -eu
cd "$(dirname "$0")/../.."
cargo build --release --quiet
for ext in html md json; do
    ./target/release/lockstep report scenarios/catalogue --seeds 5 --out "reports/sample/catalogue.$ext" > /dev/null
done
echo "wrote reports/sample/catalogue.html, .md and .json"
