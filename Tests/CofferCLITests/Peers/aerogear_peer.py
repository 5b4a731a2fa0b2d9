#!/usr/bin/env python3
"""What an AeroGear "Xmas" app left on a phone, made independently of Coffer:
plistlib for the store and the defaults (XML or binary), hashlib for
AGPBKDF2 (with its password quirk), pyca/cryptography for AES-128-CBC
(AeroGear-Crypto 0.1.0 - 0.2.1) and PyNaCl (libsodium) for secretbox
(0.2.2 and later).

  aerogear_peer.py make GENERATION FORMAT IVKEY COUNT DIR
      GENERATION cbc|secretbox, FORMAT xml|binary, IVKEY IV|iv|nonce.
      Writes DIR/xmas (the store), DIR/defaults.plist, DIR/password and
      DIR/expected.json (the records as the app's user typed them).
  aerogear_peer.py damage DIR NUMBER      flips one byte of record NUMBER's description
  aerogear_peer.py value DIR NUMBER OUT   writes record NUMBER's sealed description to OUT
  aerogear_peer.py defaults DIR KIND      rewrites DIR/defaults.plist (no-salt, both, salt-text)
  aerogear_peer.py hostile DIR KIND       writes a hostile DIR/xmas (see HOSTILE)
"""
import hashlib
import json
import os
import plistlib
import random
import struct
import sys
import uuid

import nacl.bindings as sodium
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PASSWORDS = ["xmas", "Père Noël 🎅", "日本語のパスワード", "naïve café"]
PEOPLE = ["Grandma", "Sam", "Zoë", "陽菜", "Ana María"]
THINGS = ["a knitted scarf", "a red kite", "jasmine tea", "un écharpe", "折り紙の本", "🎁 a surprise", ""]


def password_bytes(password):
    # CCKeyDerivationPBKDF got the UTF-8 bytes and [password length], which
    # counts UTF-16 code units.
    return password.encode("utf-8")[:len(password.encode("utf-16-le")) // 2]


def seal(generation, key, iv, text):
    data = text.encode("utf-8")
    if generation == "cbc":
        padder = padding.PKCS7(128).padder()
        encryptor = Cipher(algorithms.AES(key[:16]), modes.CBC(iv)).encryptor()
        return encryptor.update(padder.update(data) + padder.finalize()) + encryptor.finalize()
    return sodium.crypto_secretbox(data, iv, key)


def make(generation, form, iv_key, count, directory):
    rng = random.Random(f"{generation}{form}{iv_key}{count}")
    password = PASSWORDS[rng.randrange(len(PASSWORDS))]
    salt = os.urandom(16)
    iv = os.urandom(16 if generation == "cbc" else 24)
    key = hashlib.pbkdf2_hmac("sha1", password_bytes(password), salt, 20000, 160 if generation == "cbc" else 32)
    records, expected = [], []
    for _ in range(count):
        gift = {"id": str(uuid.uuid4()).upper(), "toWhom": rng.choice(PEOPLE),
                "description": rng.choice(THINGS) + " #" + str(rng.randrange(1000))}
        expected.append(gift)
        records.append(dict(gift, description=seal(generation, key, iv, gift["description"])))
    fmt = plistlib.FMT_XML if form == "xml" else plistlib.FMT_BINARY
    with open(os.path.join(directory, "xmas"), "wb") as out:
        out.write(plistlib.dumps(records, fmt=fmt))
    # NSUserDefaults keeps other keys beside the app's own.
    defaults = {"xmas.salt": salt, "xmas." + iv_key: iv, "AppleLanguages": ["en"], "NSInterfaceStyle": "macintosh"}
    with open(os.path.join(directory, "defaults.plist"), "wb") as out:
        out.write(plistlib.dumps(defaults, fmt=plistlib.FMT_BINARY))
    with open(os.path.join(directory, "password"), "w", encoding="utf-8") as out:
        out.write(password + "\n")
    with open(os.path.join(directory, "expected.json"), "w", encoding="utf-8") as out:
        json.dump(expected, out, ensure_ascii=False)


def damage(directory, number):
    path = os.path.join(directory, "xmas")
    with open(path, "rb") as handle:
        data = handle.read()
    fmt = plistlib.FMT_XML if data.startswith(b"<?xml") else plistlib.FMT_BINARY
    records = plistlib.loads(data)
    sealed = bytearray(records[number - 1]["description"])
    sealed[len(sealed) // 2] ^= 0x01
    records[number - 1]["description"] = bytes(sealed)
    with open(path, "wb") as out:
        out.write(plistlib.dumps(records, fmt=fmt))


def value(directory, number, out):
    with open(os.path.join(directory, "xmas"), "rb") as handle:
        records = plistlib.loads(handle.read())
    with open(out, "wb") as handle:
        handle.write(records[number - 1]["description"])


def defaults(directory, kind):
    path = os.path.join(directory, "defaults.plist")
    with open(path, "rb") as handle:
        values = plistlib.loads(handle.read())
    if kind == "no-salt":
        del values["xmas.salt"]
    elif kind == "both":
        values["xmas.IV"], values["xmas.nonce"] = os.urandom(16), os.urandom(24)
    elif kind == "salt-text":
        values["xmas.salt"] = "not data"
    with open(path, "wb") as out:
        out.write(plistlib.dumps(values, fmt=plistlib.FMT_XML))


def binary_plist(objects, top=0):
    """A binary property list from already-encoded objects (4-byte refs)."""
    data, offsets = b"bplist00", []
    for item in objects:
        offsets.append(len(data))
        data += item
    table = len(data)
    for offset in offsets:
        data += struct.pack(">I", offset)
    return data + b"\0" * 6 + bytes([4, 4]) + struct.pack(">QQQ", len(objects), top, table)


def hostile(directory, kind):
    good = plistlib.dumps([{"id": "A", "toWhom": "Sam", "description": b"\x00" * 32}], fmt=plistlib.FMT_BINARY)
    if kind == "truncated":
        data = good[: len(good) - 9]
    elif kind == "truncated-xml":
        data = plistlib.dumps([{"id": "A", "toWhom": "Sam"}])[:-30]
    elif kind == "deep-xml":
        data = b'<?xml version="1.0"?><plist version="1.0">' + b"<array>" * 100000 + b"</array>" * 100000 + b"</plist>"
    elif kind == "deep-binary":
        depth = 100000
        objects = [bytes([0xA1]) + struct.pack(">I", index + 1) for index in range(depth - 1)] + [bytes([0xA0])]
        data = binary_plist(objects)
    elif kind == "huge-count":
        # An array that claims 2^40 elements.
        data = binary_plist([bytes([0xAF, 0x13]) + struct.pack(">Q", 1 << 40)])
    elif kind == "many-references":
        # 2,000,000 references to one record: more than the import reads.
        count = 2_000_000
        record = bytes([0xD0])
        data = binary_plist([bytes([0xAF, 0x12]) + struct.pack(">I", count) + struct.pack(">I", 1) * count, record])
    elif kind == "reference-bomb":
        # 24 levels of arrays, each holding the next 16 times, over one
        # record: 1.6 KB that Foundation would expand to 16**24 records.
        levels = [bytes([0xAF, 0x12]) + struct.pack(">I", 16) + struct.pack(">I", level + 1) * 16 for level in range(24)]
        data = binary_plist(levels + [bytes([0xD0])])
    elif kind == "not-a-plist":
        data = b"\x89PNG\r\n\x1a\n" + os.urandom(64)
    elif kind == "dictionary":
        data = plistlib.dumps({"toWhom": "Sam"}, fmt=plistlib.FMT_BINARY)
    elif kind == "encrypted-store":
        data = plistlib.dumps({"A": os.urandom(40), "B": os.urandom(40)}, fmt=plistlib.FMT_BINARY)
    elif kind == "not-a-record":
        data = plistlib.dumps([{"id": "A", "toWhom": "Sam"}, "just text"], fmt=plistlib.FMT_BINARY)
    elif kind == "nested-value":
        data = plistlib.dumps([{"id": "A", "toWhom": {"first": "Sam"}}], fmt=plistlib.FMT_XML)
    elif kind == "oversized":
        data = plistlib.dumps([{"id": "A", "toWhom": "x" * (17 << 20)}], fmt=plistlib.FMT_BINARY)
    else:
        sys.exit("unknown kind " + kind)
    with open(os.path.join(directory, "xmas"), "wb") as out:
        out.write(data)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
    elif mode == "damage":
        damage(sys.argv[2], int(sys.argv[3]))
    elif mode == "value":
        value(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "defaults":
        defaults(sys.argv[2], sys.argv[3])
    elif mode == "hostile":
        hostile(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown mode " + mode)
