#!/bin/sh
# fuzz/run.sh [SECONDS]: build every fuzz target with clang (libFuzzer,
# AddressSanitizer, UndefinedBehaviorSanitizer) and run each for SECONDS
# (default 60); exit 1 if any of them crashed, leaked or tripped a sanitizer.
#
#   - A target is a file fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput;
#     its committed seeds are fuzz/corpus/NAME/ (read, never written).
#   - The code under test is compiled once with coverage instrumentation
#     into one archive: every module (lib, readers, the portable kernels,
#     detectors, storage, alerts, core, fleet, daemon and cli but the two main()s, the web
#     pages) and the generated code (protobuf-c, gw_config.h and
#     web_assets.c as meson makes them).  A target links what it uses from
#     it; the libraries that needs beyond the readers' it names in its
#     header comment, and any extra sources (lines may repeat):
#         * fuzz-libs: -lhttp_parser -luv
#         * fuzz-sources: some/other.c
#     Those sources are compiled the same way, each once per run of this
#     script however many targets name it.
#   - Everything goes to $FUZZ_BUILD (default build-fuzz/): objects, the
#     target binaries, the inputs each run found (work/NAME/, kept between
#     runs) and crash reproducers (crash-NAME-*).  Replay one with
#         build-fuzz/fuzz_NAME build-fuzz/crash-NAME-...
#   - A dictionary fuzz/NAME.dict (libFuzzer's format), if there is one, is
#     used.
#   - FUZZ_TARGETS="csv tfevents" limits the run to those targets.
#
# Needs clang and libclang-rt-*-dev (libFuzzer), protoc-c and the build
# dependencies of the readers and the fleet (Debian: clang libclang-rt-14-dev
# protobuf-c-compiler libprotobuf-c-dev libcsv-dev libjansson-dev zlib1g-dev
# libzstd-dev libpq-dev).
set -eu
cd "$(dirname "$0")/.."

secs=${1:-60}
out=${FUZZ_BUILD:-build-fuzz}
cc=${CC_FUZZ:-clang}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
# -Werror=conditional-uninitialized: clang sees a variable set on some paths
# only (gcc does not); one such rc rejected good lines at random
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Werror=conditional-uninitialized $san"
incs="-Ilib -Ireaders -Ikernels -Idetectors -Istorage -Ialerts -Icore -Ifleet -Idaemon -Icli -Iweb -I$out/gen $(pkg-config --cflags libpq)"
libs="-lprotobuf-c -lcsv -ljansson -lz -lzstd -lm $(pkg-config --libs libpq)"

mkdir -p "$out/gen" "$out/obj"
protoc-c --proto_path=readers/proto --c_out="$out/gen" readers/proto/tbevent.proto
version=$(sed -n "s/^ *version: '\([^']*\)'.*/\1/p" meson.build | head -n 1)
printf '#define GW_VERSION "%s"\n#define GW_SYSCONFDIR "/usr/local/etc"\n#define GW_FAULT_HOOKS 0\n' "$version" \
	>"$out/gen/gw_config.h"
# the web pages compiled in, as web/meson.build does (needs npm ci --prefix web)
uplot=web/node_modules/uplot/dist
if [ ! -f "$uplot/uPlot.iife.min.js" ]; then
	echo "fuzz: $uplot is missing: run npm ci --prefix web (./dev.sh deps does)" >&2
	exit 2
fi
# every file of web/src by its name (embed.py says which one it misses)
web_args=""
for f in web/src/*; do
	web_args="$web_args $(basename "$f")=$f"
done
# shellcheck disable=SC2086  # the names have no spaces: one word each
python3 web/embed.py "$out/gen/web_assets.c" "uPlot.iife.min.js=$uplot/uPlot.iife.min.js" \
	"uPlot.min.css=$uplot/uPlot.min.css" $web_args

# obj_of SRC: the object file of a source under $out/obj
obj_of() {
	echo "$out/obj/$(echo "$1" | tr / _ | sed 's/\.c$/.o/')"
}

# the code under test, instrumented for coverage, in one archive; compiled
# on every core (a source and its object per line, for xargs)
objs=""
pairs=""
for src in lib/*.c readers/*.c kernels/kern_dispatch.c kernels/kern_scalar.c detectors/*.c \
           storage/*.c alerts/*.c core/*.c fleet/*.c daemon/*.c cli/*.c web/report_page.c "$out"/gen/*.c; do
	case "$src" in
	daemon/main.c|cli/gradwatch.c) continue ;;   # main() of the binaries
	esac
	obj=$(obj_of "$src")
	objs="$objs $obj"
	pairs="$pairs$src $obj
"
done
printf '%s' "$pairs" | FZ_CC=$cc FZ_FLAGS="$cflags -fsanitize=fuzzer-no-link $incs" \
	xargs -n 2 -P "$(nproc 2>/dev/null || echo 2)" sh -c '$FZ_CC $FZ_FLAGS -c "$0" -o "$1"'
rm -f "$out/libgw-fuzz.a"
ar rcs "$out/libgw-fuzz.a" $objs

failed=""
built=" "
for harness in fuzz/fuzz_*.c; do
	name=$(basename "$harness" .c)
	name=${name#fuzz_}
	if [ -n "${FUZZ_TARGETS:-}" ] && ! echo " $FUZZ_TARGETS " | grep -q " $name "; then
		continue
	fi
	extra_src=$(sed -n 's/^ \* fuzz-sources: //p' "$harness" | tr '\n' ' ')
	extra_libs=$(sed -n 's/^ \* fuzz-libs: //p' "$harness" | tr '\n' ' ')
	extra_objs=""
	for src in $extra_src; do
		obj=$(obj_of "$src")
		case "$built" in
		*" $src "*) ;;
		*) "$cc" $cflags -fsanitize=fuzzer-no-link $incs -c "$src" -o "$obj"
		   built="$built$src " ;;
		esac
		extra_objs="$extra_objs $obj"
	done
	bin="$out/fuzz_$name"
	"$cc" $cflags -fsanitize=fuzzer $incs "$harness" $extra_objs "$out/libgw-fuzz.a" \
		$libs $extra_libs -o "$bin"
	mkdir -p "$out/work/$name" "fuzz/corpus/$name"
	dict=""
	[ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
	echo "fuzz: $name for ${secs}s (seeds: fuzz/corpus/$name/)"
	# the target's temporary files (a database, token files) in a
	# directory of its own, removed afterwards even if it crashed
	tmp="$out/tmp/$name"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# the first corpus directory receives what the run finds; the committed
	# seeds are only read
	if TMPDIR="$(cd "$tmp" && pwd)" \
	   ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
	   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	   "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
	          -print_final_stats=1 -artifact_prefix="$out/crash-$name-" $dict \
	          "$out/work/$name" "fuzz/corpus/$name" >"$out/$name.log" 2>&1; then
		grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' \
			"$out/$name.log" | sed "s/^/fuzz: $name: /" || true
	else
		echo "fuzz: $name FAILED; the end of $out/$name.log:" >&2
		tail -n 40 "$out/$name.log" >&2
		failed="$failed $name"
	fi
	rm -rf "$tmp"
done

if [ -n "$failed" ]; then
	echo "fuzz: crashed:$failed" >&2
	exit 1
fi
echo "fuzz: no crash"
