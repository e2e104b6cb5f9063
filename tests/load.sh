#!/bin/sh
# tests/load.sh: run a test command on a busy machine.  Starts LOAD_LOOPS
# busy loops (default 2: one per core of a 2-core CI machine), runs the
# command beside them at the same priority, stops the loops however the
# command ends, and exits with the command's status.  The tests must hold
# with the machine this busy (issue 20): every wait a poll on a condition
# with a generous deadline, no timing asserts.
#
#   tests/load.sh                  the integration suite of ./build
#   tests/load.sh COMMAND ARGS...  any command, e.g.
#       tests/load.sh meson test -C build --print-errorlogs alerts-ack
set -eu
cd "$(dirname "$0")/.."

loops=${LOAD_LOOPS:-2}
pids=""
stop_loops() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	pids=""
}
trap stop_loops EXIT
trap 'stop_loops; exit 130' INT
trap 'stop_loops; exit 143' TERM

i=0
while [ "$i" -lt "$loops" ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
echo "load.sh: $loops busy loop(s) running (pids$pids)"

[ $# -gt 0 ] || set -- meson test -C build --suite integration --print-errorlogs
start=$(date +%s)
rc=0
"$@" || rc=$?
echo "load.sh: '$*' took $(($(date +%s) - start)) s beside $loops busy loop(s), exit $rc"
exit "$rc"
