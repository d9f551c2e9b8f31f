#!/usr/bin/env bash
# Writes gofabric's performance report (issue 22): runs the Go-vs-C
# comparisons (scripts/bench-compare.sh for tcp msg, tcp rdm, shm rdm and
# udp dgram; scripts/bench-compare.sh bw), the Go scale benchmarks and the
# C scale probe (scripts/scaleprobe), then writes docs/perf-report.md and
# its SVG plots under docs/perf/. Not part of the tests; run it on a quiet
# machine (the full run takes a long while).
#
#   scripts/bench-report.sh [--quick] [-rounds N] [-quiet SECS] [-sizes LIST] ...
#
# --quick: one round, a few sizes, small counts, no quiet gate: about a
# minute, to try the tool (its report says so). Every option:
#   scripts/bench-report.sh -h
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/benchreport "$@"
