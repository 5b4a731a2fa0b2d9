#!/usr/bin/env python3
"""Generates the sealed value v1 test vectors (docs/sealed-values.md) with an
implementation independent of Coffer's: Python's cryptography (AESGCMSIV).

    python3 scripts/make-sealed-vectors.py > Tests/CofferTests/Resources/sealed-v1/vectors.json

Keys, nonces and key ids come from SHA-256 of fixed labels, so running it
again gives the same file. The test suite opens every vector on every run,
and reproduces each one byte for byte from its nonce.
"""
import base64
import hashlib
import json

from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

VERSION = 1
PREFIX = "cs1."


def derived(label, size):
    return hashlib.sha256(label.encode()).digest()[:size]


def seal(key, key_id, nonce, context, plaintext):
    header = bytes([VERSION]) + key_id.to_bytes(4, "big")
    return header + nonce + AESGCMSIV(key).encrypt(nonce, plaintext, header + context)


def text(sealed):
    return PREFIX + base64.urlsafe_b64encode(sealed).decode().rstrip("=")


cases = [
    ("empty plaintext, empty context", b"", b""),
    ("a password", b"correct horse battery staple", b"users/7/password"),
    ("a token in a JSON column", b'{"token":"abc123"}', b"sessions/9f2c/token"),
    ("binary context", bytes(range(64)), bytes([0, 255, 1, 254])),
    ("one block", b"0123456789abcdef", b"notes/42/description"),
    ("1 KiB", bytes((i * 7) & 0xFF for i in range(1024)), b"files/1/chunk"),
]
vectors = []
for index, (title, plaintext, context) in enumerate(cases):
    key = derived(f"coffer sealed v1 key {index}", 32)
    key_id = int.from_bytes(derived(f"coffer sealed v1 key id {index}", 4), "big") or 1
    nonce = derived(f"coffer sealed v1 nonce {index}", 12)
    sealed = seal(key, key_id, nonce, context, plaintext)
    vectors.append({
        "title": title,
        "key_hex": key.hex(),
        "key_id": key_id,
        "context_hex": context.hex(),
        "plaintext_hex": plaintext.hex(),
        "sealed_hex": sealed.hex(),
        "text": text(sealed),
    })
print(json.dumps({"format": "coffer sealed value v1", "generator": "scripts/make-sealed-vectors.py (Python cryptography AESGCMSIV)",
                  "vectors": vectors}, indent=2))
