#!/usr/bin/env python3
"""Generates the CofferStore v1 test vectors (docs/store.md) with an
implementation independent of Coffer's: Python's cryptography (AESGCMSIV,
HKDF, HMAC) and unicodedata.

    python3 scripts/make-store-vectors.py > Tests/CofferStoreTests/Resources/store-v1/vectors.json

Keys, ids and nonces come from SHA-256 of fixed labels, so running it again
gives the same file. The tests open every sealed cell (and reseal it from its
nonce byte for byte), refuse it under a changed context, and compute every
blind index value.
"""
import hashlib
import struct
import hmac
import json
import unicodedata

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def derived(label, size):
    return hashlib.sha256(label.encode()).digest()[:size]


def value(kind, payload):
    """StoreValue encoding: tag byte then payload."""
    if kind == "text":
        return b"t" + payload.encode()
    if kind == "integer":
        return b"i" + payload.to_bytes(8, "big", signed=True)
    if kind == "bytes":
        return b"b" + bytes.fromhex(payload)
    if kind == "double":
        return b"f" + struct.pack(">d", payload)
    if kind == "date":  # milliseconds since 1970
        return b"d" + payload.to_bytes(8, "big", signed=True)
    return b"n"


def context(parts):
    """SealingContext: "SC1" then each part length-prefixed (4 bytes, big-endian)."""
    return b"SC1" + b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def seal(key, key_id, nonce, plaintext, aad_context):
    header = bytes([1]) + key_id.to_bytes(4, "big")
    return header + nonce + AESGCMSIV(key).encrypt(nonce, plaintext, header + aad_context)


def transform(name, text):
    if text is None:
        return None
    if name == "nfc":
        return unicodedata.normalize("NFC", text)
    if name == "nfkc":
        return unicodedata.normalize("NFKC", text)
    if name == "lowercase":
        return text.lower()
    if name == "trim":
        return text.strip()
    if name == "digits":
        digits = "".join(c for c in text if "0" <= c <= "9")
        return digits or None
    if name == "email-domain":
        return text[text.rindex("@") + 1:] if "@" in text else None
    kind, count = name.split(":")
    return text[:int(count)] if kind == "first" else text[-int(count):]


store_id = derived("coffer store v1 store id", 16)
key = derived("coffer store v1 cell key", 32)
key_id = int.from_bytes(derived("coffer store v1 cell key id", 4), "big") or 1

cells = []
cell_cases = [
    ("a sealed description bound to its clear recipient", "presents", "description", ("integer", 42),
     [("to", ("text", "Grandma"))], ("text", "a knitted scarf, blue")),
    ("a sealed e-mail, text primary key, nothing bound", "users", "email", ("text", "u-7f3a"), [],
     ("text", "Alice@Example.COM")),
    ("a sealed integer", "accounts", "balance", ("integer", -1), [], ("integer", -123456789)),
    ("sealed bytes bound to two fields", "files", "blob", ("bytes", "00ff"),
     [("owner", ("text", "ünïcode")), ("size", ("integer", 3))], ("bytes", "deadbeef")),
    ("a sealed null", "presents", "description", ("integer", 7), [("to", ("null", None))], ("null", None)),
    ("a sealed double bound to a clear date", "readings", "score", ("integer", 9),
     [("taken", ("date", 1795867200250))], ("double", -0.1)),
    ("a sealed date before 1970", "people", "born", ("text", "p-1"), [], ("date", -86400001)),
]
for index, (title, table, column, pk, bound, plain) in enumerate(cell_cases):
    life = derived(f"coffer store v1 row life {index}", 16)
    parts = [b"coffer store v1", store_id, table.encode(), column.encode(), value(*pk), life]
    for name, bound_value in bound:
        parts += [name.encode(), value(*bound_value)]
    ctx = context(parts)
    nonce = derived(f"coffer store v1 cell nonce {index}", 12)
    cells.append({
        "title": title, "table": table, "column": column,
        "primary_key": {"kind": pk[0], "value": pk[1]},
        "life_hex": life.hex(),
        "bound": [{"name": n, "kind": v[0], "value": v[1]} for n, v in bound],
        "plaintext": {"kind": plain[0], "value": plain[1]},
        "context_hex": ctx.hex(),
        "sealed_hex": seal(key, key_id, nonce, value(*plain), ctx).hex(),
    })

roots = {1: derived("coffer store v1 index root 1", 32), 2: derived("coffer store v1 index root 2", 32)}


def index_value(table, index_name, bits, version, texts):
    info = context([b"coffer store v1 index key", table.encode(), index_name.encode()])
    index_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=store_id, info=info).derive(roots[version])
    mac = hmac.new(index_key, context([value("text", t) for t in texts]), hashlib.sha256).digest()
    truncated = bytearray(mac[:(bits + 7) // 8])
    spare = len(truncated) * 8 - bits
    if spare:
        truncated[-1] &= (0xFF << spare) & 0xFF
    return version.to_bytes(2, "big") + bytes(truncated)


indexes = []
index_cases = [
    ("trim and lowercase, 16 bits", "users", "email_exact", ["trim", "lowercase"], 16, 1,
     [("text", "  Alice@Example.COM ")]),
    ("e-mail domain, 12 bits (a partial byte)", "users", "email_domain", ["trim", "lowercase", "email-domain"], 12,
     2, [("text", "bob@Example.org")]),
    ("digits only, last 4, 9 bits", "cards", "pan_last4", ["digits", "last:4"], 9, 1,
     [("text", "4111 1111-1111 1234")]),
    ("NFKC then NFC of full-width digits, 64 bits", "users", "phone", ["nfkc", "nfc"], 64, 1,
     [("text", "０１２３")]),
    ("first 3 of a name, 1 bit", "people", "name_prefix", ["first:3"], 1, 2, [("text", "Zoë Smith")]),
    ("compound: name and integer birth year, 20 bits", "people", "name_year", ["lowercase"], 20, 1,
     [("text", "Zoë"), ("integer", 1990)]),
    ("no @: not indexed", "users", "email_domain", ["email-domain"], 12, 1, [("text", "no-at-sign")]),
    ("null: not indexed", "users", "email_exact", ["trim"], 16, 1, [("null", None)]),
]
for title, table, index_name, transforms, bits, version, values in index_cases:
    texts = []
    for kind, payload in values:
        text = payload if kind == "text" else (str(payload) if kind == "integer" else None)
        for name in transforms:
            text = transform(name, text)
        texts.append(text)
    entry = {
        "title": title, "table": table, "index": index_name, "transforms": transforms, "bits": bits,
        "version": version, "values": [{"kind": k, "value": v} for k, v in values],
    }
    if any(t is None for t in texts):
        entry["texts"] = None
        entry["index_hex"] = None
    else:
        entry["texts"] = texts
        entry["index_hex"] = index_value(table, index_name, bits, version, texts).hex()
    indexes.append(entry)



def split_tokens(mode, text):
    if mode == "words":
        runs, current = [], ""
        for c in text:
            if c.isalpha() or c.isnumeric():
                current += c
            elif current:
                runs.append(current)
                current = ""
        return runs + ([current] if current else [])
    return text.split(mode[len("split:"):])


# Token indexes: split, transform each token (dropping None and ""), the
# distinct tokens' index values, distinct and sorted.
tokens = []
token_cases = [
    ("words, nfkc and lowercase", "notes", "body_words", "words", ["nfkc", "lowercase"], 16, 2,
     "Smith-Jones met \uff34\uff25\uff21 and tea, 42 times!"),
    ("tags split by a comma, trimmed, an empty one dropped", "notes", "tag_set", "split:,", ["trim"], 12, 1,
     " red, blue ,,red"),
    ("digits of words; words without digits dropped", "notes", "numbers", "words", ["digits"], 9, 1,
     "call 555-0100 or 0800 now"),
    ("two bits: tokens collide into fewer entries", "notes", "tiny", "split:;", [], 2, 1, "a;b;c;d;e;f;g;h"),
]
for title, table, index_name, mode, transforms, bits, version, text in token_cases:
    kept = set()
    for token in split_tokens(mode, text):
        for name in transforms:
            token = transform(name, token)
        if token:
            kept.add(token)
    entries = sorted({index_value(table, index_name, bits, version, [t]) for t in kept})
    tokens.append({
        "title": title, "table": table, "index": index_name, "tokens": mode, "transforms": transforms,
        "bits": bits, "version": version, "value": text, "tokens_out": sorted(kept),
        "entries_hex": [e.hex() for e in entries],
    })

print(json.dumps({
    "format": "coffer store v1",
    "generator": "scripts/make-store-vectors.py (Python cryptography AESGCMSIV, HKDF; hmac; unicodedata)",
    "store_id_hex": store_id.hex(),
    "cell_key": {"id": key_id, "key_hex": key.hex()},
    "index_roots": {str(v): r.hex() for v, r in roots.items()},
    "cells": cells,
    "indexes": indexes,
    "tokens": tokens,
}, indent=2, ensure_ascii=False))
