#!/usr/bin/env python3
"""Python cryptography (pyca, with its own OpenSSL) as an independent peer
for Coffer's public-key interop tests.

  crypto_peer.py agree PRIVATE.pem PEER.pem HASH SIZE [SHARED_INFO_FILE]
      ECDH, then X963KDF(HASH, SIZE, shared info); prints hex
  crypto_peer.py rsa-oaep-encrypt PUBLIC.pem HASH    (message on stdin, ciphertext on stdout)
  crypto_peer.py aesgcm-open-b64 KEYHEX              (base64 nonce‖ciphertext‖tag on stdin, plaintext on stdout)
  crypto_peer.py mldsa-keygen PRIVATE.pem PUBLIC.pem
  crypto_peer.py mldsa-sign PRIVATE.pem MESSAGE SIGNATURE
  crypto_peer.py mldsa-verify PUBLIC.pem MESSAGE SIGNATURE   (exit 0 when valid)
"""
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
import base64

from cryptography.hazmat.primitives.asymmetric import ec, mldsa, padding, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

HASHES = {"sha1": hashes.SHA1, "sha224": hashes.SHA224, "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512}


def load_private(path):
    return serialization.load_pem_private_key(open(path, "rb").read(), None)


def load_public(path):
    return serialization.load_pem_public_key(open(path, "rb").read())


def agree(private_path, peer_path, hash_name, size, info_path=None):
    private, peer = load_private(private_path), load_public(peer_path)
    if isinstance(private, x25519.X25519PrivateKey):
        secret = private.exchange(peer)
    else:
        secret = private.exchange(ec.ECDH(), peer)
    info = open(info_path, "rb").read() if info_path else None
    key = X963KDF(algorithm=HASHES[hash_name](), length=int(size), sharedinfo=info).derive(secret)
    print(key.hex())


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "agree":
        agree(*args)
    elif command == "rsa-oaep-encrypt":
        algorithm = HASHES[args[1]]()
        oaep = padding.OAEP(mgf=padding.MGF1(algorithm=algorithm), algorithm=algorithm, label=None)
        sys.stdout.buffer.write(load_public(args[0]).encrypt(sys.stdin.buffer.read(), oaep))
    elif command == "aesgcm-open-b64":
        box = base64.b64decode(sys.stdin.buffer.read())
        sys.stdout.buffer.write(AESGCM(bytes.fromhex(args[0])).decrypt(box[:12], box[12:], None))
    elif command == "mldsa-keygen":
        key = mldsa.MLDSA65PrivateKey.generate()
        open(args[0], "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))
        open(args[1], "wb").write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                serialization.PublicFormat.SubjectPublicKeyInfo))
    elif command == "mldsa-sign":
        open(args[2], "wb").write(load_private(args[0]).sign(open(args[1], "rb").read()))
    elif command == "mldsa-verify":
        try:
            load_public(args[0]).verify(open(args[2], "rb").read(), open(args[1], "rb").read())
        except InvalidSignature:
            sys.exit(1)
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
