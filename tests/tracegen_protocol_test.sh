#!/usr/bin/env bash
# t3sim-tracegen --protocol (issue 16): an LL ring kernel's remote stores carry `ll`,
# its flag sets are `unfenced` and its slices are LL's 32 KiB steps; a Simple one has
# neither and keeps 1 MiB slices; an explicit --step-bytes wins over the protocol's;
# an unknown protocol exits 2. GEMM kernel options: --cluster-m gives each rank of a
# cluster its share of B, --issue-cycles every compute its issue cycles.
# Usage: tracegen_protocol_test.sh TRACEGEN
set -euo pipefail
gen=${1:?usage: tracegen_protocol_test.sh TRACEGEN}
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--collective ring-rs --gpus 4 --array-bytes 1MiB --channels 1 -o -)

ll=$("$gen" "${common[@]}" --protocol ll)
grep -q ' ll peer=' <<<"$ll" || fail "LL remote stores lack 'll'"
grep -q '^ *set .* unfenced' <<<"$ll" || fail "LL sets are not unfenced"
grep -q '^attr slice_bytes 32768$' <<<"$ll" || fail "LL slices are not 32 KiB"

simple=$("$gen" "${common[@]}" --protocol simple)
! grep -q ' ll peer=\|unfenced' <<<"$simple" || fail "Simple carries LL lines or unfenced sets"
grep -q '^attr slice_bytes 1048576$' <<<"$simple" || fail "Simple slices are not 1 MiB"

explicit=$("$gen" "${common[@]}" --protocol ll --step-bytes 8KiB)
grep -q '^attr slice_bytes 8192$' <<<"$explicit" || fail "--step-bytes did not override LL's step"

rc=0
"$gen" "${common[@]}" --protocol lll >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "an unknown protocol exited $rc, expected 2"
gemm=$("$gen" --m 1024 --n 512 --k 96 --cluster-m 2 --issue-cycles 7 -o -)
grep -q '^program tile_256x128_b1of2$' <<<"$gemm" || fail "--cluster-m 2 made no rank-1 program"
grep -q 'rows=16 stride=1024$' <<<"$gemm" || fail "a cluster rank does not load half of B's K rows"
grep -q ' issue=7$' <<<"$gemm" || fail "--issue-cycles did not reach the computes"
echo "ok"
