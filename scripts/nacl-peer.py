#!/usr/bin/env python3
"""The independent side of CofferCompat's AeroGear tests: PyNaCl (libsodium)
for secretbox and crypto_box, Python's hashlib for PBKDF2 and pyca/cryptography
for AES-CBC. Each mode prints JSON lines (bytes in hex).

  nacl-peer.py secretbox N     N random secretboxes {key, nonce, message, box}
  nacl-peer.py box N           N random crypto_boxes {senderPublic, recipientPrivate, nonce, message, box}
  nacl-peer.py open            reads {key, nonce, box} lines, prints {opened: hex or null}
  nacl-peer.py aerogear-cbc    reads {password, salt} lines, prints the AeroGear 0.1 key and a CBC value
"""
import hashlib
import json
import os
import random
import sys

import nacl.bindings as sodium
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def lengths(count):
    # Every length 0..199 (short last Poly1305 blocks, the 32-byte first-block
    # split), then longer ones across several Salsa20 blocks.
    for index in range(count):
        yield index if index < 200 else random.randrange(200, 5000)


def secretbox(count):
    for length in lengths(count):
        key, nonce, message = os.urandom(32), os.urandom(24), os.urandom(length)
        box = sodium.crypto_secretbox(message, nonce, key)  # tag, then ciphertext
        print(json.dumps({"key": key.hex(), "nonce": nonce.hex(), "message": message.hex(), "box": box.hex()}))


def box(count):
    for length in lengths(count):
        sender_public, sender_private = sodium.crypto_box_keypair()
        recipient_public, recipient_private = sodium.crypto_box_keypair()
        nonce, message = os.urandom(24), os.urandom(length)
        sealed = sodium.crypto_box(message, nonce, recipient_public, sender_private)
        print(json.dumps({"senderPublic": sender_public.hex(), "recipientPrivate": recipient_private.hex(),
                          "nonce": nonce.hex(), "message": message.hex(), "box": sealed.hex()}))


def open_boxes():
    for line in sys.stdin:
        item = json.loads(line)
        try:
            opened = sodium.crypto_secretbox_open(
                bytes.fromhex(item["box"]), bytes.fromhex(item["nonce"]), bytes.fromhex(item["key"])).hex()
        except Exception:
            opened = None
        print(json.dumps({"opened": opened}))


def aerogear_password_bytes(password):
    # CCKeyDerivationPBKDF was given the UTF-8 bytes and [password length],
    # the count of UTF-16 code units.
    return password.encode("utf-8")[:len(password.encode("utf-16-le")) // 2]


def aerogear_cbc():
    for line in sys.stdin:
        item = json.loads(line)
        salt = bytes.fromhex(item["salt"])
        key = hashlib.pbkdf2_hmac("sha1", aerogear_password_bytes(item["password"]), salt, 20000, 160)
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        data = padder.update(item["text"].encode("utf-8")) + padder.finalize()
        encryptor = Cipher(algorithms.AES(key[:16]), modes.CBC(iv)).encryptor()
        sealed = encryptor.update(data) + encryptor.finalize()
        short = hashlib.pbkdf2_hmac("sha1", aerogear_password_bytes(item["password"]), salt, 20000, 32)
        print(json.dumps({"key160": key.hex(), "key32": short.hex(), "iv": iv.hex(), "sealed": sealed.hex()}))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "secretbox":
        secretbox(int(sys.argv[2]))
    elif mode == "box":
        box(int(sys.argv[2]))
    elif mode == "open":
        open_boxes()
    elif mode == "aerogear-cbc":
        aerogear_cbc()
    else:
        sys.exit("unknown mode " + mode)
