#!/usr/bin/env bash
# expect_failure.sh [--any-status] REGEX... -- COMMAND...
# Passes when COMMAND exits non-zero and its output (stdout and stderr)
# matches every extended regular expression. --any-status skips the exit
# status check: Open MPI's mpirun exits 0 under --enable-recovery even after
# MPI_Abort, so there the output is all there is to check.
set -uo pipefail
check_status=1
if [ "${1:-}" = --any-status ]; then
  check_status=0
  shift
fi
regexes=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  regexes+=("$1")
  shift
done
shift # --
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$check_status" -eq 1 ] && [ "$status" -eq 0 ]; then
  echo "expect_failure: the command succeeded; a failure was expected" >&2
  exit 1
fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" <<<"$output"; then
    echo "expect_failure: exit $status, but no line matches: $regex" >&2
    exit 1
  fi
done
echo "expect_failure: exit $status and the expected messages"
