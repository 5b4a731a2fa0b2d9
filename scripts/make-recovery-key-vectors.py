#!/usr/bin/env python3
"""Writes Tests/CofferTests/Resources/recovery-key-v1/vectors.json: recovery
keys (docs/key-slots.md, "Recovery keys") made with Python's hashlib and
base64 alone, no Coffer code, so that Coffer's RecoveryKey is checked
against an independent reading of the format.

text = RFC 4648 base32 of (key || SHA-256("coffer recovery key v1" || key)[:2]),
without padding, in groups of five joined by "-".
"""
import base64
import hashlib
import json
import os
import sys

LABEL = b"coffer recovery key v1"


def text(key: bytes) -> str:
    check = hashlib.sha256(LABEL + key).digest()[:2]
    symbols = base64.b32encode(key + check).decode().rstrip("=")
    assert len(symbols) == 55
    return "-".join(symbols[i:i + 5] for i in range(0, 55, 5))


def main() -> None:
    keys = [bytes(32), bytes(range(32)), bytes([0xFF] * 32)]
    keys += [bytes.fromhex(h) for h in (
        "5f3c2e1d0a9b8c7d6e5f40312213041506f7e8d9cabbac9d8e7f605142332415",
        "a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff00",
    )]
    vectors = [{"key": k.hex(), "text": text(k)} for k in keys]
    out = {
        "source": "scripts/make-recovery-key-vectors.py (Python hashlib and base64, no Coffer code)",
        "vectors": vectors,
    }
    path = os.path.join(os.path.dirname(__file__), "..", "Tests", "CofferTests", "Resources", "recovery-key-v1",
                        "vectors.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
