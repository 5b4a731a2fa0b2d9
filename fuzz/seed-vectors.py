#!/usr/bin/env python3
"""Copies the test suites' vectors into the fuzz corpora, one folder per
target: fuzz/seed-vectors.py CORPUS. (Coffer's own writers add well-formed
inputs with `coffer-fuzz --seeds CORPUS`.)"""
import base64, json, os, pathlib, sys

root = pathlib.Path(__file__).resolve().parent.parent
corpus = pathlib.Path(sys.argv[1])
count = {}

def put(target, name, data):
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    count[target] = count.get(target, 0) + 1

def walk(value, path=""):
    """Every (member name, string) in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item, path)
    elif isinstance(value, str):
        yield path, value

def members(path, wanted, decode):
    document = json.loads((root / path).read_text())
    for number, (name, text) in enumerate(walk(document)):
        if name in wanted:
            try:
                yield f"{pathlib.Path(path).parent.name}-{name}-{number}", decode(text)
            except ValueError:
                pass

unhex = bytes.fromhex
b64 = base64.b64decode
tests = "Tests/CofferTests/Resources"
compat = "Tests/CofferCompatTests/Resources"
store = "Tests/CofferStoreTests/Resources/store-v1"

# The age test kit's uncompressed files: the body after the first blank line.
for vector in sorted((root / tests / "age-cctv").iterdir()):
    data = vector.read_bytes()
    if vector.name == "LICENSE" or b"\ncompressed:" in data.split(b"\n\n", 1)[0]:
        continue
    put("age", vector.name, data.split(b"\n\n", 1)[1] if b"\n\n" in data else data)
for name, data in members(f"{tests}/sealed-v1/vectors.json", {"sealed_hex"}, unhex):
    put("sealed", name, data)
for name, data in members(f"{tests}/sealed-v1/vectors.json", {"text"}, str.encode):
    put("sealed", name, data)
for name, data in members(f"{tests}/key-slots-v1/vectors.json", {"file_hex", "slot_hex", "sealed_hex"}, unhex):
    put("sealed", name, data)
for kind in ("key", "password", "kdf"):
    for line in (root / compat / "rncryptor-v3" / kind).read_text().splitlines():
        if line.startswith("ciphertext_hex:"):
            put("rncryptor", f"{kind}-{count.get('rncryptor', 0)}", unhex(line.split(":", 1)[1].strip().replace(" ", "")))
for path in ("apple-seckey/jedda_ECIES_macos_vectors.json", "apple-seckey/apple_security_si44_known_ciphertext.json"):
    for name, data in members(f"{compat}/{path}", {"ciphertext_b64", "private_key_sec1_der_b64",
                                                   "private_key_external_b64", "public_key_external_b64"}, b64):
        put("seckey", name, data)
for name, data in members(f"{compat}/aerogear/aerogear_crypto_spec_vectors.json", {"ciphertext"}, unhex):
    put("recipe", name, data)
for name, data in members(f"{store}/vectors.json", {"value", "tokens"}, str.encode):
    put("store-records", name, json.dumps({"id": 1, "description": data.decode(), "email": data.decode()}).encode())
for name, data in members(f"{store}/vectors.json", {"transforms"}, str.encode):
    put("store-schema", name, data)
print(" ".join(f"{target}: {number}" for target, number in sorted(count.items())))
