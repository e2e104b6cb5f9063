#!/bin/sh
# dev.sh: set up, build, demo and test gradwatch on Debian 12.
#
#   ./dev.sh demo   install the build dependencies, build, start gradwatchd on
#                   its default ports with a fresh database in ./demo/ (it
#                   stops if they are taken), feed it the bundled example trace,
#                   show the alerts it raised, and replay the same trace offline
#   ./dev.sh test   install everything the tests need, build (normal and
#                   ASan+UBSan, both with the test hooks: -Dfault_hooks=true),
#                   run the unit suite in both builds and the integration
#                   suite in the ASan+UBSan build beside two busy loops
#                   (tests/load.sh), the AArch64 kernels under qemu, then
#                   every fuzz target for FUZZ_SECONDS each (fuzz/run.sh)
#   ./dev.sh deps | test-deps | build    the steps on their own
#
# Installing packages needs root (or sudo).  Nothing here reaches anything but
# Debian's package archive and the npm registry (npm ci --prefix web, from the
# committed lock file).
set -eu
cd "$(dirname "$0")"

# (readers) protobuf-c for TensorBoard event files, libcsv, zlib and zstd
BUILD_DEPS="gcc pkg-config meson ninja-build libuv1-dev libsqlite3-dev libcurl4-openssl-dev \
libjansson-dev check libhttp-parser-dev libssl-dev python3 sqlite3 curl ca-certificates \
libprotobuf-c-dev protobuf-c-compiler libcsv-dev zlib1g-dev libzstd-dev libpq-dev"
# what the test suites use beyond the build: the AArch64 cross toolchain and
# qemu for the kernel tests, real Alertmanager and Prometheus servers,
# PyTorch for the end-to-end training test, systemd-analyze for the units;
# (sidecar) a venv with pip and setuptools to pip-install contrib/python
# offline, man-db for systemd-analyze verify's man-page check; (probes)
# clang and its libFuzzer runtime for fuzz/run.sh; (fleet) a real PostgreSQL
# the fleet tests initdb in a temporary directory, and its psql
TEST_DEPS="postgresql postgresql-client gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
prometheus-alertmanager prometheus python3-torch systemd chromium \
python3-venv python3-pip python3-setuptools man-db clang libclang-rt-14-dev"

# seconds per fuzz target in `./dev.sh test` (and CI): 9 targets, about 3
# minutes in all with the build on 2 cores (10 s, down from 20, paid for the
# integration suite's run beside busy loops); longer runs: FUZZ_SECONDS=600
FUZZ_SECONDS=${FUZZ_SECONDS:-10}

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "dev.sh: need root to run: $*" >&2; exit 1; fi
}

install_pkgs() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "dev.sh: installing$missing"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# shellcheck disable=SC2086
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# The web view's uPlot (and puppeteer-core for the browser tests) from the
# committed web/package-lock.json; nodejs and npm from Debian when there is
# no npm yet.
web_deps() {
	command -v npm >/dev/null || install_pkgs nodejs npm
	[ -d web/node_modules/uplot ] && [ -d web/node_modules/puppeteer-core ] || npm ci --prefix web --no-audit --no-fund
}

# Options after the name (-Dfault_hooks=true for the test builds: the test
# hooks of lib/fault.h, never in a daemon for use) apply to a build
# directory that is there already, too.
build() {
	web_deps
	[ -d build ] || meson setup build --werror >/dev/null
	[ $# -eq 0 ] || meson configure build "$@" >/dev/null
	meson compile -C build
}

build_asan() {
	[ -d build-asan ] || meson setup build-asan --werror -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	[ $# -eq 0 ] || meson configure build-asan "$@" >/dev/null
	meson compile -C build-asan
}

demo() {
	install_pkgs $BUILD_DEPS
	build -Dfault_hooks=false
	mkdir -p demo
	if [ -f demo/gradwatchd.pid ] && kill -0 "$(cat demo/gradwatchd.pid)" 2>/dev/null; then
		kill "$(cat demo/gradwatchd.pid)"; sleep 1
	fi
	# a fresh database each time, so the demo shows what it shows the first time
	rm -f demo/gradwatch.db demo/gradwatch.db-wal demo/gradwatch.db-shm
	(cd demo && exec ../build/daemon/gradwatchd --state-dir . --socket gradwatch.sock >gradwatchd.log 2>&1) &
	echo $! > demo/gradwatchd.pid
	# ready (its own log says so), or gone: then say why and stop, rather than
	# feed the trace to whatever else answers on 127.0.0.1:7471
	for _ in $(seq 1 50); do
		grep -q ' ready$' demo/gradwatchd.log 2>/dev/null && break
		kill -0 "$(cat demo/gradwatchd.pid)" 2>/dev/null || break
		sleep 0.2
	done
	if ! grep -q ' ready$' demo/gradwatchd.log 2>/dev/null; then
		echo "dev.sh: gradwatchd did not start; its log (demo/gradwatchd.log):" >&2
		sed 's/^/   /' demo/gradwatchd.log >&2
		echo "dev.sh: another gradwatchd (or another program) on 127.0.0.1:7470/7471? stop it and run ./dev.sh demo again" >&2
		exit 1
	fi
	echo "== gradwatchd is running in demo/ (pid $(cat demo/gradwatchd.pid)):"
	echo "   socket demo/gradwatch.sock, tcp/udp 127.0.0.1:7470, http 127.0.0.1:7471, database demo/gradwatch.db"
	echo "== sending examples/resume-without-optimizer.jsonl to it (gradwatch send):"
	./build/cli/gradwatch send examples/resume-without-optimizer.jsonl || true
	echo "== alerts the daemon raised (gradwatch alerts):"
	./build/cli/gradwatch alerts || true
	echo "== the same trace replayed offline (gradwatch replay):"
	./build/cli/gradwatch replay examples/resume-without-optimizer.jsonl || true
	echo "== see it: http://127.0.0.1:7471/ (the run's page with the alerts on its charts:"
	echo "   http://127.0.0.1:7471/runs/example-gpt-1b); offline: ./build/cli/gradwatch report \\"
	echo "   examples/resume-without-optimizer.jsonl -o demo/report.html"
	echo "== gradwatchd keeps running; stop it with: kill $(cat demo/gradwatchd.pid)"
}

run_tests() {
	install_pkgs $BUILD_DEPS $TEST_DEPS
	build -Dfault_hooks=true
	meson test -C build --print-errorlogs --no-suite integration
	build_asan -Dfault_hooks=true
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	meson test -C build-asan --print-errorlogs --no-suite integration
	# the integration suite once, under the sanitizers and on a busy
	# machine: two busy loops beside it (tests/load.sh), so a wait that is
	# a sleep or a timing assert fails here and not on someone's loaded
	# laptop.  (Once, not in both builds: CI stays under 20 minutes.)
	tests/load.sh meson test -C build-asan --print-errorlogs --suite integration
	if [ -x .ci/kernels-aarch64.sh ]; then .ci/kernels-aarch64.sh; fi
	# every fuzz target for a bounded time (docs/reliability.md); fails on
	# a crash, a leak or a sanitizer report
	sh fuzz/run.sh "$FUZZ_SECONDS"
}

case "${1:-}" in
deps) install_pkgs $BUILD_DEPS ;;
test-deps) install_pkgs $BUILD_DEPS $TEST_DEPS ;;
build) install_pkgs $BUILD_DEPS; build ;;
demo) demo ;;
test) run_tests ;;
*) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
