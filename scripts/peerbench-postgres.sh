#!/usr/bin/env bash
# Runs ../shared/peerbench with Switchyard in cluster mode: the gateway on a
# throwaway PostgreSQL (fsync off) instead of its bbolt file, to compare
# with a run on bbolt (docs/performance.md). Extra arguments and the
# environment (ROUNDS, SCALE, HOLD, …) go to peerbench's run.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PB="${PEERBENCH:-$ROOT/../shared/peerbench}"
BIN="$(mktemp -d)"
trap 'kill "${PG_PID:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$BIN"' EXIT
(cd "$ROOT" && go build -o "$BIN/pgserve" ./host/store/pgtest/pgserve)
"$BIN/pgserve" >"$BIN/dsn" &
PG_PID=$!
for _ in $(seq 1 300); do [ -s "$BIN/dsn" ] && break; sleep 0.1; done
[ -s "$BIN/dsn" ] || { echo "peerbench-postgres: PostgreSQL did not start (make deps)" >&2; exit 1; }
export SY_BENCH_DSN="$(head -1 "$BIN/dsn")"
cd "$ROOT"
SWCONF="$ROOT/bench/peerbench-postgres.yaml" bash "$PB/run.sh" "$@"
