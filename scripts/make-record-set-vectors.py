#!/usr/bin/env python3
"""Generates CofferStore's record-set vectors (docs/store.md, "The record
set") with an implementation independent of Coffer's: Python's hmac,
hashlib and cryptography (HKDF, AES-GCM-SIV).

    python3 scripts/make-record-set-vectors.py > Tests/CofferStoreTests/Resources/store-v1/record-set.json

Keys, ids and nonces come from SHA-256 of fixed labels, so running it again
gives the same file. The tests compute every element and the sum of a
table's elements, and open the sealed shard.
"""
import hashlib
import hmac
import json
import struct

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def derived(label, size):
    return hashlib.sha256(label.encode()).digest()[:size]


def context(parts):
    """SealingContext: "SC1" then each part length-prefixed (4 bytes, big-endian)."""
    return b"SC1" + b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def part(kind, value):
    """A column value as an element part: tag, 4-byte length, bytes."""
    if kind == "null":
        tag, data = b"n", b""
    elif kind == "integer":
        tag, data = b"i", value.to_bytes(8, "big", signed=True)
    elif kind == "real":
        tag, data = b"d", struct.pack(">d", value)
    elif kind == "text":
        tag, data = b"t", value.encode()
    else:
        tag, data = b"b", bytes.fromhex(value)
    return tag + len(data).to_bytes(4, "big") + data


ROOT = derived("record set root", 32)
STORE_ID = derived("record set store id", 16)
MODULUS = 1 << 256


def table_key(table):
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=STORE_ID,
        info=context([b"coffer store v1 record set", table.encode()]),
    ).derive(ROOT)


def element(table, row):
    message = part(*row["key"]) + part(*row["life"])
    for name, kind, value in row["cells"]:
        if kind == "null":
            continue
        message += part("bytes", name.encode().hex()) + part(kind, value)
    return hmac.new(table_key(table), message, hashlib.sha256).digest()


def life(label):
    return derived("life " + label, 16).hex()


def cell(label, size):
    return hashlib.sha256(("cell " + label).encode()).digest()[:size].hex()


ROWS = [
    {"key": ["integer", 1], "life": ["bytes", life("1")],
     "cells": [["email", "bytes", cell("1 email", 45)], ["ssn", "bytes", cell("1 ssn", 40)]]},
    {"key": ["integer", 2], "life": ["bytes", life("2")],
     "cells": [["email", "bytes", cell("2 email", 47)], ["ssn", "null", None]]},
    {"key": ["integer", -7], "life": ["bytes", life("3")],
     "cells": [["email", "bytes", cell("3 email", 33)], ["ssn", "bytes", cell("3 ssn", 41)]]},
    # A row of an adopted table whose field is being migrated: no life yet,
    # and its clear value is not part of the element (the caller leaves it out).
    {"key": ["integer", 4], "life": ["null", None], "cells": []},
    {"key": ["text", "ann@example.com"], "life": ["bytes", life("5")],
     "cells": [["note", "bytes", cell("5 note", 60)]]},
]


def main():
    elements = [element("people", row) for row in ROWS]
    total = sum(int.from_bytes(e, "big") for e in elements) % MODULUS
    # Removing the second record: the sum less its element, mod 2^256.
    without_second = (total - int.from_bytes(elements[1], "big")) % MODULUS
    # One shard sealed as the store seals it: count, sum, sequence (big-endian),
    # under key id 0x01020304 with a fixed nonce.
    shard_key = derived("record set shard key", 32)
    key_id = 0x01020304
    nonce = derived("record set shard nonce", 12)
    plaintext = (len(ROWS)).to_bytes(8, "big") + total.to_bytes(32, "big") + (9).to_bytes(8, "big")
    aad_context = context([b"coffer store v1 record set shard", STORE_ID, b"people", (3).to_bytes(2, "big")])
    header = bytes([1]) + key_id.to_bytes(4, "big")
    sealed = header + nonce + AESGCMSIV(shard_key).encrypt(nonce, plaintext, header + aad_context)
    print(json.dumps({
        "source": "scripts/make-record-set-vectors.py (Python hmac, hashlib, cryptography)",
        "root_hex": ROOT.hex(), "store_id_hex": STORE_ID.hex(), "table": "people",
        "table_key_hex": table_key("people").hex(),
        "rows": [dict(row, element_hex=e.hex()) for row, e in zip(ROWS, elements)],
        "sum_hex": total.to_bytes(32, "big").hex(),
        "sum_without_second_hex": without_second.to_bytes(32, "big").hex(),
        "shard": {"key_hex": shard_key.hex(), "key_id": key_id, "number": 3, "count": len(ROWS), "sequence": 9,
                  "context_hex": aad_context.hex(), "sealed_hex": sealed.hex()},
    }, indent=1))


main()
