#!/usr/bin/env bash
# run.sh — runs the fuzz harnesses built by `make fuzz-build`, one after another, each for
# FUZZ_SECONDS, and prints per target: executions, exec/s, coverage (cov = edges, ft = features),
# corpus size, and the findings with the command that reproduces each. Exit status 1 when any
# target found something (a crash, leak, UB report, timeout, out-of-memory) or did not run.
#
# Usage: fuzz/run.sh [TARGET...]   (default: every fuzz/fuzz_*.c)
# Environment: FUZZ_BUILD (build-fuzz), FUZZ_SECONDS (60), FUZZ_TIMEOUT (10: seconds one input
# may take), FUZZ_RSS_MB (2048: memory limit, also for one malloc), FUZZ_ARGS (more libFuzzer flags).
# Per target: the corpus grows in BUILD/corpus/<t> (kept between runs), seeds are rebuilt in
# BUILD/seeds/<t> (fuzz/corpus.sh), findings go to BUILD/findings/<t>/, the log to BUILD/logs/<t>.log.
# The dictionary of a target is the concatenation of the fuzz/dict/*.dict files its harness names on
# its `fuzz-dict:` line.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS=${FUZZ_RSS_MB:-2048}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls fuzz/fuzz_*.c | sed 's|^fuzz/fuzz_||; s|\.c$||'))
for t in "${targets[@]}"; do
    [ -x "$BUILD/fuzz_$t" ] || { echo "run.sh: $BUILD/fuzz_$t is not built (make fuzz-build)" >&2; exit 1; }
done
fuzz/corpus.sh "$BUILD" "${targets[@]}" > "$BUILD/seeds.log" 2>&1 || { cat "$BUILD/seeds.log" >&2; exit 1; }

# scratch files of the harnesses: memory-backed when possible
scratch_root=/dev/shm
[ -d "$scratch_root" ] && [ -w "$scratch_root" ] || scratch_root=${TMPDIR:-/tmp}

failed=0
rows=()
printf '%-22s %10s %8s %7s %7s %7s  %s\n' target execs exec/s cov ft corpus findings
for t in "${targets[@]}"; do
    corpus="$BUILD/corpus/$t" findings="$BUILD/findings/$t" log="$BUILD/logs/$t.log"
    mkdir -p "$corpus" "$findings" "$BUILD/logs" "$BUILD/dict"
    dict_args=()
    dicts=$(sed -n 's|^/\* fuzz-dict: \(.*\) \*/$|\1|p' "fuzz/fuzz_$t.c")
    if [ -n "$dicts" ]; then
        : > "$BUILD/dict/$t.dict"
        for d in $dicts; do cat "fuzz/dict/$d.dict" >> "$BUILD/dict/$t.dict"; done
        dict_args=(-dict="$BUILD/dict/$t.dict")
    fi
    before=$(ls "$findings" | grep -v '^slow-unit' | wc -l)
    scratch=$(mktemp -d "$scratch_root/fastlora-fuzz.XXXXXX")
    TMPDIR=$scratch ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$BUILD/fuzz_$t" -max_total_time="$SECS" -timeout="$TIMEOUT" -rss_limit_mb="$RSS" -malloc_limit_mb="$RSS" \
        -print_final_stats=1 -artifact_prefix="$findings/" "${dict_args[@]}" ${FUZZ_ARGS:-} \
        "$corpus" "$BUILD/seeds/$t" > "$log" 2>&1
    rc=$?
    rm -rf "$scratch"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
    # slow-unit-* files are inputs over 10 s (-report_slow_units), not findings
    new=$(ls -t "$findings" | grep -v '^slow-unit' | head -n $(( $(ls "$findings" | grep -v '^slow-unit' | wc -l) - before )))
    what="none"
    if [ $rc -ne 0 ] || [ -n "$new" ]; then
        failed=1
        kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+|runtime error: .*|fuzz: .*' "$log" | head -c 120)
        what="FOUND (rc $rc) ${kind:-see $log}"
    fi
    printf '%-22s %10s %8s %7s %7s %7s  %s\n' "$t" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "${corp:--}" "$what"
    for f in $new; do echo "    reproduce: $BUILD/fuzz_$t $findings/$f   (log: $log)"; done
done
exit $failed
