#!/usr/bin/env python3
"""Independent peers for Coffer's compatibility formats.

  compat_peer.py rncryptor-encrypt PASSWORD_FILE IN OUT    (PyPI rncryptor)
  compat_peer.py rncryptor-decrypt PASSWORD_FILE IN OUT
  compat_peer.py legacy-make cbc|ecb PASSWORD_FILE IN OUT json|xml|binary
      the CommonCrypto recipe's dictionary: PBKDF2-HMAC-SHA512 (hashlib,
      14,271 rounds, 8-byte salt) and AES-256 by `openssl enc`
  compat_peer.py cryptokit-seal aesgcm|chachapoly KEY IN OUT   (nonce ‖ ciphertext ‖ tag)
  compat_peer.py cryptokit-open aesgcm|chachapoly KEY IN OUT
"""
import base64
import hashlib
import json
import os
import plistlib
import subprocess
import sys

PASSWORD_ROUNDS = 14271


def password(path):
    data = open(path, "rb").read()
    return data.rstrip(b"\n").rstrip(b"\r")


def rncryptor_peer():
    import rncryptor

    class BytesRNCryptor(rncryptor.RNCryptor):
        # The package's decrypt returns text; keep the bytes.
        def post_decrypt_data(self, data):
            return data[:-data[-1]]

    return BytesRNCryptor()


def legacy_make(mode, password_path, in_path, out_path, form):
    salt, iv = os.urandom(8), os.urandom(16)
    key = hashlib.pbkdf2_hmac("sha512", password(password_path), salt, PASSWORD_ROUNDS, 32)
    command = ["openssl", "enc", "-aes-256-" + mode, "-K", key.hex(), "-in", in_path]
    if mode == "cbc":
        command += ["-iv", iv.hex()]
    data = subprocess.run(command, check=True, capture_output=True).stdout
    fields = {"EncryptionData": data, "EncryptionIV": iv, "EncryptionSalt": salt}
    with open(out_path, "wb") as out:
        if form == "json":
            out.write(json.dumps({k: base64.b64encode(v).decode() for k, v in fields.items()}).encode())
        else:
            out.write(plistlib.dumps(fields, fmt=plistlib.FMT_XML if form == "xml" else plistlib.FMT_BINARY))


def cryptokit(cipher, key):
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    return AESGCM(key) if cipher == "aesgcm" else ChaCha20Poly1305(key)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    read = lambda path: open(path, "rb").read()
    if command == "rncryptor-encrypt":
        open(args[2], "wb").write(rncryptor_peer().encrypt(read(args[1]), password(args[0])))
    elif command == "rncryptor-decrypt":
        open(args[2], "wb").write(rncryptor_peer().decrypt(read(args[1]), password(args[0])))
    elif command == "legacy-make":
        legacy_make(*args)
    elif command == "cryptokit-seal":
        nonce = os.urandom(12)
        open(args[3], "wb").write(nonce + cryptokit(args[0], read(args[1])).encrypt(nonce, read(args[2]), None))
    elif command == "cryptokit-open":
        data = read(args[2])
        open(args[3], "wb").write(cryptokit(args[0], read(args[1])).decrypt(data[:12], data[12:], None))
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
