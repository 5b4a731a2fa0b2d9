#!/usr/bin/env bash
# Fuzzes each of Coffer's parsers of untrusted input (coffer-fuzz --list
# names them) with libFuzzer under AddressSanitizer, SECONDS each (default
# 60), FUZZ_JOBS targets at a time (default 1); all targets when none is
# named. Each corpus starts from the test suites' vectors
# (fuzz/seed-vectors.py), inputs made by Coffer's own writers (coffer-fuzz
# --seeds) and key files made by openssl and ssh-keygen, and is kept in
# .build-fuzz/corpus/TARGET between runs. A finding is left in
# .build-fuzz/findings/TARGET/ and fails the run; every target's line says
# how many inputs it ran, how fast, and the coverage it reached.
#   fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
jobs="${FUZZ_JOBS:-1}"
swift build -c release --product coffer-fuzz --scratch-path .build-fuzz --traits Server \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DCOFFER_LIBFUZZER -Xswiftc -use-ld=lld
fuzzer=.build-fuzz/release/coffer-fuzz
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("$fuzzer" --list | cut -f1)
corpus=.build-fuzz/corpus
# Leaks are checked per input while fuzzing, not at this step's exit.
ASAN_OPTIONS=detect_leaks=0 "$fuzzer" --seeds "$corpus" >/dev/null
python3 fuzz/seed-vectors.py "$corpus" >/dev/null
# Key files in each format the key parsers read, when the tools are here.
if command -v openssl >/dev/null 2>&1; then
  for spec in "RSA -pkeyopt rsa_keygen_bits:2048" "EC -pkeyopt ec_paramgen_curve:P-256" "ed25519" "X25519"; do
    name=$(echo "$spec" | tr -c 'A-Za-z0-9' _)
    [ -e "$corpus/key-files/key-$name.pem" ] && continue
    openssl genpkey -algorithm $spec -out "$corpus/key-files/key-$name.pem" 2>/dev/null || continue
    openssl pkey -in "$corpus/key-files/key-$name.pem" -outform DER -out "$corpus/key-files/key-$name.der" 2>/dev/null || true
    openssl pkey -in "$corpus/key-files/key-$name.pem" -pubout -out "$corpus/key-files/pub-$name.pem" 2>/dev/null || true
  done
fi
if command -v ssh-keygen >/dev/null 2>&1; then
  for type in ed25519 ecdsa; do
    [ -e "$corpus/key-files/ssh-$type" ] && continue
    ssh-keygen -q -t "$type" -N "" -C fuzz -f "$corpus/key-files/ssh-$type" || true
  done
fi
logs=.build-fuzz/logs
mkdir -p "$logs"
fuzz_one() {
  local target=$1 findings=.build-fuzz/findings/$1
  mkdir -p "$findings"
  COFFER_FUZZ_TARGET="$target" LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    "$fuzzer" "$corpus/$target" -max_total_time="$seconds" -max_len=200000 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$logs/$target.log" 2>&1
}
failed=0
running=0
declare -A pids
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids[$target]=$!
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
for target in "${targets[@]}"; do
  wait "${pids[$target]}" && status=0 || status=$?
  log="$logs/$target.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  coverage=$({ grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" || true; } | tail -1)
  if [ "$status" = 0 ]; then
    echo "fuzz/run.sh: $target: ${runs:-?} runs in ${seconds} s (${speed:-?}/s), ${coverage:-no coverage line}, no finding"
  else
    echo "fuzz/run.sh: $target: FINDING (exit $status; $log, .build-fuzz/findings/$target/)" >&2
    tail -40 "$log" >&2
    failed=1
  fi
done
exit "$failed"
