#!/usr/bin/env bash
# Cross-build kernels/ and its unit test for AArch64 and run the test under
# qemu-user: the NEON variant against the scalar reference, for real.
#
# Needs these Debian 12 packages (installed here when missing and run as
# root, e.g. on a fresh CI machine):
#   meson ninja-build gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
# Nothing else: no arm64 multiarch, no Check for arm64.  The kernel test
# builds against tests/unit/minicheck.h when Check is not found, and is
# linked statically, so qemu needs no AArch64 shared libraries.  Builds
# kernels/standalone/meson.build (the kernels alone, without the daemon's
# dependencies) with cross/aarch64-linux-gnu.ini.
#
# Usage: .ci/kernels-aarch64.sh [build-dir]     (default build-aarch64)
set -euo pipefail

cd "$(dirname "$0")/.."
builddir=${1:-build-aarch64}

need=()
command -v meson >/dev/null || need+=(meson)
command -v ninja >/dev/null || need+=(ninja-build)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
		echo "kernels-aarch64: missing packages: ${need[*]}" >&2
		exit 1
	fi
	echo "kernels-aarch64: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if [ -d "$builddir" ]; then
	meson setup --reconfigure "$builddir" kernels/standalone \
		--cross-file cross/aarch64-linux-gnu.ini
else
	meson setup "$builddir" kernels/standalone \
		--cross-file cross/aarch64-linux-gnu.ini
fi
ninja -C "$builddir"
meson test -C "$builddir" --suite unit --print-errorlogs --verbose
