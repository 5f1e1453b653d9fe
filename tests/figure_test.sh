#!/usr/bin/env bash
# tools/figure.sh: --list names every figure, an unknown one exits 2 with one line, and
# a shrunk seed 000 Figure 13 (--set passed to the sweep) writes its CSV, PNG and table.
# Usage: figure_test.sh SOURCE_DIR T3SIM_BINARY
set -euo pipefail

src=${1:?usage: figure_test.sh SOURCE_DIR T3SIM_BINARY}
export T3SIM=${2:?usage: figure_test.sh SOURCE_DIR T3SIM_BINARY}
script="$src/tools/figure.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$script" --list > "$tmp/list" || fail "--list failed"
for f in seed000-fig8 seed000-fig13 seed001 t3-fig16 seed003-fig8 seed003-h200; do
  grep -q "^$f " "$tmp/list" || fail "--list lacks $f"
done

set +e
"$script" seed000-fig99 "$tmp/x" 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown figure exited $rc, expected 2"
grep -qF "unknown figure 'seed000-fig99'" "$tmp/err" || fail "no message for an unknown figure"
[ ! -e "$tmp/x" ] || fail "an unknown figure created its directory"

"$script" seed000-fig13 "$tmp/out" -j 1 --set workload.batch=64 --set workload.tables=2 --set workload.rows=1000 \
  > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "figure failed"; }
[ "$(tail -n +2 "$tmp/out/embedding_a2a_occupancy_mi210.csv" | grep -c ',ok,')" = 7 ] || fail "expected 7 ok points"
head -c 8 "$tmp/out/seed000-fig13.png" | grep -q PNG || fail "no PNG"
[ "$(grep -c '^| embedding_a2a_occupancy_mi210 4 GPUs, grid=' "$tmp/out/seed000-fig13.md")" = 7 ] || fail "table rows"
echo "figure_test: ok"
