#!/usr/bin/env bash
# Fuzzes Coffer's decryptor with libFuzzer for SECONDS (default 60), seeded
# with the bodies of the age test kit's uncompressed vectors.
#   fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
swift build -c release --product coffer-fuzz --scratch-path .build-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DCOFFER_LIBFUZZER -Xswiftc -use-ld=lld
corpus=.build-fuzz/corpus
mkdir -p "$corpus"
for vector in Tests/CofferTests/Resources/age-cctv/*; do
  name=$(basename "$vector")
  [ "$name" = LICENSE ] && continue
  grep -aq '^compressed:' "$vector" && continue
  # The file starts after the first blank line.
  awk 'found { print; next } /^$/ { found = 1 }' ORS='\n' "$vector" | head -c -1 > "$corpus/$name" || true
done
.build-fuzz/release/coffer-fuzz "$corpus" -max_total_time="$seconds" -max_len=200000 -timeout=10 -rss_limit_mb=4096
