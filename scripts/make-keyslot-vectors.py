#!/usr/bin/env python3
"""Generates the key slot v1 and key ring v3 test vectors (docs/key-slots.md,
docs/sealed-values.md) with an implementation independent of Coffer's:
Python's cryptography (AESGCMSIV, HKDF, Scrypt, PBKDF2HMAC).

    python3 scripts/make-keyslot-vectors.py > Tests/CofferTests/Resources/key-slots-v1/vectors.json

Secrets, salts, nonces and keys come from SHA-256 of fixed labels, so running
it again gives the same file. The tests unwrap every slot, reproduce each one
byte for byte from its salt and nonce, and open every key ring file with each
of its secrets, then a sealed value under its primary key.
"""
import hashlib
import json

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

LABEL = b"coffer key slot v1"


def derived(label, size):
    return hashlib.sha256(label.encode()).digest()[:size]


def parameters(kdf):
    if kdf is None:
        return b""
    if kdf[0] == "scrypt":
        return bytes(kdf[1:])
    return kdf[1].to_bytes(4, "big")


def kind(kdf):
    return 0 if kdf is None else (1 if kdf[0] == "scrypt" else 2)


def base_key(secret, kdf, salt):
    if kdf is None:
        return secret
    if kdf[0] == "scrypt":
        return Scrypt(salt=salt, length=32, n=1 << kdf[1], r=kdf[2], p=kdf[3]).derive(secret)
    return PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=kdf[1]).derive(secret)


def slot(data_key, secret, kdf, salt, nonce, binding):
    header = bytes([kind(kdf)]) + parameters(kdf) + salt
    wrapping = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=LABEL).derive(base_key(secret, kdf, salt))
    aad = LABEL + bytes([len(binding)]) + binding + header
    return header + nonce + AESGCMSIV(wrapping).encrypt(nonce, data_key, aad)


def kdf_json(kdf):
    if kdf is None:
        return {"kind": "key"}
    if kdf[0] == "scrypt":
        return {"kind": "scrypt", "logN": kdf[1], "r": kdf[2], "p": kdf[3]}
    return {"kind": "pbkdf2-sha256", "rounds": kdf[1]}


slot_cases = [
    ("a 32-byte KEK, bound to a key ring", None, "key", b"CKR3" + derived("ring id 0", 16)),
    ("a passphrase, scrypt N=2^10", ("scrypt", 10, 8, 1), "correct horse battery staple", b"CKC1\x02"),
    ("a passphrase, PBKDF2-SHA-256 1000 rounds", ("pbkdf2", 1000), "hunter2", b"CKC1\x02"),
    ("a non-ASCII passphrase, scrypt N=2^11 r=4 p=2", ("scrypt", 11, 4, 2), "пароль 密码", b"app"),
    ("an empty binding", None, "key", b""),
]
slots = []
for index, (title, kdf, secret_kind, binding) in enumerate(slot_cases):
    secret = derived(f"coffer key slot v1 kek {index}", 32) if kdf is None else secret_kind.encode()
    salt = derived(f"coffer key slot v1 salt {index}", 16)
    nonce = derived(f"coffer key slot v1 nonce {index}", 12)
    data_key = derived(f"coffer key slot v1 data key {index}", 32)
    slots.append({
        "title": title,
        "kdf": kdf_json(kdf),
        "secret_hex": secret.hex(),
        "salt_hex": salt.hex(),
        "nonce_hex": nonce.hex(),
        "binding_hex": binding.hex(),
        "data_key_hex": data_key.hex(),
        "slot_hex": slot(data_key, secret, kdf, salt, nonce, binding).hex(),
    })

# A key ring file, version 3, with two slots (a passphrase and a KEK) and two keys.
ring_id = derived("coffer key ring v3 ring id", 16)
generation = 7
data_key = derived("coffer key ring v3 data key", 32)
passphrase = b"ring passphrase"
kek = derived("coffer key ring v3 kek", 32)
binding = b"CKR3" + ring_id
ring_slots = [
    slot(data_key, passphrase, ("scrypt", 10, 8, 1), derived("ring salt 0", 16), derived("ring nonce 0", 12), binding),
    slot(data_key, kek, None, derived("ring salt 1", 16), derived("ring nonce 1", 12), binding),
]
keys = [
    (0x0A0B0C0D, 2, 1_700_000_000, derived("ring key old", 32)),  # active
    (0x11223344, 1, 1_800_000_000, derived("ring key new", 32)),  # primary
]
body = len(keys).to_bytes(2, "big") + b"".join(
    key_id.to_bytes(4, "big") + bytes([state]) + created.to_bytes(8, "big") + key for key_id, state, created, key in keys
)
header = b"CKR3" + ring_id + generation.to_bytes(8, "big") + bytes([len(ring_slots)]) + b"".join(ring_slots)
body_nonce = derived("ring body nonce", 12)
ring_file = header + body_nonce + AESGCMSIV(data_key).encrypt(body_nonce, body, header)

# A sealed value (docs/sealed-values.md) under the primary key, to prove the
# ring's keys are the ones written.
sealed_header = bytes([1]) + keys[1][0].to_bytes(4, "big")
sealed_nonce = derived("ring sealed nonce", 12)
context = b"notes/1/body"
plaintext = b"opened through a Python-made key ring"
sealed = sealed_header + sealed_nonce + AESGCMSIV(keys[1][3]).encrypt(sealed_nonce, plaintext, sealed_header + context)

print(json.dumps({
    "format": "coffer key slot v1; coffer key ring v3",
    "generator": "scripts/make-keyslot-vectors.py (Python cryptography: AESGCMSIV, HKDF, Scrypt, PBKDF2HMAC)",
    "slots": slots,
    "key_rings": [{
        "title": "two slots (scrypt passphrase, KEK), two keys, generation 7",
        "file_hex": ring_file.hex(),
        "passphrase_hex": passphrase.hex(),
        "kek_hex": kek.hex(),
        "ring_id_hex": ring_id.hex(),
        "generation": generation,
        "key_ids": [key_id for key_id, _, _, _ in keys],
        "primary_id": keys[1][0],
        "sealed_hex": sealed.hex(),
        "context_hex": context.hex(),
        "plaintext_hex": plaintext.hex(),
    }],
}, indent=2, ensure_ascii=False))
