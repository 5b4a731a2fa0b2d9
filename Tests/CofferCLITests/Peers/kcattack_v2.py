"""The security review's kcattack.py (../shared/reviews/repro), redone for
file keychain version 2 (docs/keychain.md, docs/key-slots.md) with Python's
cryptography and no Coffer code: unwrap the data key of an OLD copy of a
keychain with the OLD passphrase, print what the old copy holds (proof that
the format is read right), then try that data key on the NEW file. After a
passphrase change the last step must fail with InvalidTag.

    python kcattack_v2.py OLD_COPY NEW_FILE OLD_PASSPHRASE_FILE
"""
import base64
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

LABEL = b"coffer key slot v1"
BINDING = b"CKC1\x02"


def parse(data):
    assert data[:4] == b"CKC1" and data[4] == 2, "not a version 2 keychain"
    count, offset, slots = data[13], 14, []
    for _ in range(count):
        kind = data[offset]
        size = 1 + {0: 0, 1: 3, 2: 4}[kind] + 16 + 60
        slots.append(data[offset:offset + size])
        offset += size
    return data[:offset], slots, data[offset:]


def unwrap(slot, password):
    kind = slot[0]
    count = {0: 0, 1: 3, 2: 4}[kind]
    parameters, salt, sealed = slot[1:1 + count], slot[1 + count:17 + count], slot[17 + count:]
    if kind == 1:
        base = Scrypt(salt=salt, length=32, n=1 << parameters[0], r=parameters[1], p=parameters[2]).derive(password)
    elif kind == 2:
        rounds = int.from_bytes(parameters, "big")
        base = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=rounds).derive(password)
    else:
        raise SystemExit("a key slot, not a passphrase slot")
    wrapping = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=LABEL).derive(base)
    aad = LABEL + bytes([len(BINDING)]) + BINDING + slot[:17 + count]
    return AESGCMSIV(wrapping).decrypt(sealed[:12], sealed[12:], aad)


def items(header, body, data_key):
    return json.loads(AESGCMSIV(data_key).decrypt(body[:12], body[12:], header))["entries"]


old = open(sys.argv[1], "rb").read()
new = open(sys.argv[2], "rb").read()
password = open(sys.argv[3], "rb").read().rstrip(b"\n")
old_header, old_slots, old_body = parse(old)
data_key = unwrap(old_slots[0], password)
for entry in items(old_header, old_body, data_key):
    print("old copy:", entry["item"].get("account"), "=>", base64.b64decode(entry["data"]).decode())
new_header, _, new_body = parse(new)
for entry in items(new_header, new_body, data_key):
    print("new file:", entry["item"].get("account"), "=>", base64.b64decode(entry["data"]).decode())
