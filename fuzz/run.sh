#!/usr/bin/env bash
# Fuzzes Coffer's decryptor and key-file parsers with libFuzzer for SECONDS
# (default 60), seeded with the bodies of the age test kit's uncompressed
# vectors and with key files made by openssl and ssh-keygen.
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
# Key files in each format the key parsers read, when the tools are here.
if command -v openssl >/dev/null 2>&1; then
  for spec in "RSA -pkeyopt rsa_keygen_bits:2048" "EC -pkeyopt ec_paramgen_curve:P-256" "ed25519" "X25519"; do
    name=$(echo "$spec" | tr -c 'A-Za-z0-9' _)
    openssl genpkey -algorithm $spec -out "$corpus/key-$name.pem" 2>/dev/null || continue
    openssl pkey -in "$corpus/key-$name.pem" -outform DER -out "$corpus/key-$name.der" 2>/dev/null || true
    openssl pkey -in "$corpus/key-$name.pem" -pubout -out "$corpus/pub-$name.pem" 2>/dev/null || true
  done
fi
if command -v ssh-keygen >/dev/null 2>&1; then
  for type in ed25519 ecdsa; do
    rm -f "$corpus/ssh-$type" "$corpus/ssh-$type.pub"
    ssh-keygen -q -t "$type" -N "" -C fuzz -f "$corpus/ssh-$type" || true
  done
fi
LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
  .build-fuzz/release/coffer-fuzz "$corpus" -max_total_time="$seconds" -max_len=200000 -timeout=10 -rss_limit_mb=4096
