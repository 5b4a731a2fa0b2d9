#!/usr/bin/env python3
"""A small independent reference of Apple SecKey's ECIES and RSA-OAEP +
AES-GCM constructions, written for Coffer's tests from the published
facts (not from Coffer's code), on Python's cryptography.

  apple_ref.py keygen-ec CURVE PRIVATE_OUT PUBLIC_OUT     (04‖X‖Y‖D and 04‖X‖Y)
  apple_ref.py keygen-rsa BITS PRIVATE_OUT PUBLIC_OUT     (PKCS#1 DER)
  apple_ref.py ecies-encrypt PUBLIC HASH VARIABLE_IV IN OUT
  apple_ref.py ecies-decrypt PRIVATE HASH VARIABLE_IV IN OUT
  apple_ref.py rsa-encrypt PUBLIC HASH IN OUT
  apple_ref.py rsa-decrypt PRIVATE HASH IN OUT

ECIES: ephemeral key on the recipient's curve; Z = ECDH x-coordinate;
X9.63(hash, Z, sharedinfo = ephemeral 04‖X‖Y) gives the AES key (16 bytes
on P-256, 32 on P-384/P-521) plus, for VariableIV, a 16-byte IV; else the
IV is 16 zero bytes. AES-GCM, no AAD. Output ephemeral ‖ ciphertext ‖ tag.
RSA: a random AES key (16 bytes under 4096-bit moduli, 32 from 4096)
wrapped with OAEP (MGF1 on the same hash), AES-GCM with a 16-byte zero IV
and the PKCS#1 RSAPublicKey DER as AAD. Output wrapped ‖ ciphertext ‖ tag.
"""
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

CURVES = {"P-256": (ec.SECP256R1, 32, 16), "P-384": (ec.SECP384R1, 48, 32), "P-521": (ec.SECP521R1, 66, 32)}
HASHES = {"sha1": hashes.SHA1, "sha224": hashes.SHA224, "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512}


def curve_for_point(length):
    for name, (curve, size, key_size) in CURVES.items():
        if length == 1 + 2 * size:
            return curve, size, key_size
    sys.exit("not a public key of a known curve")


def load_ec_private(data):
    for name, (curve, size, key_size) in CURVES.items():
        if len(data) == 1 + 3 * size:
            d = int.from_bytes(data[1 + 2 * size:], "big")
            return ec.derive_private_key(d, curve()), size, key_size
    sys.exit("not an EC private key in external representation")


def point(public_key):
    return public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def kdf(hash_name, secret, shared_info, length):
    return X963KDF(algorithm=HASHES[hash_name](), length=length, sharedinfo=shared_info).derive(secret)


def ecies_encrypt(public_bytes, hash_name, variable_iv, plaintext):
    curve, size, key_size = curve_for_point(len(public_bytes))
    recipient = ec.EllipticCurvePublicKey.from_encoded_point(curve(), public_bytes)
    ephemeral = ec.generate_private_key(curve())
    ephemeral_bytes = point(ephemeral.public_key())
    secret = ephemeral.exchange(ec.ECDH(), recipient)
    derived = kdf(hash_name, secret, ephemeral_bytes, key_size + (16 if variable_iv else 0))
    iv = derived[key_size:] if variable_iv else bytes(16)
    return ephemeral_bytes + AESGCM(derived[:key_size]).encrypt(iv, plaintext, None)


def ecies_decrypt(private_bytes, hash_name, variable_iv, data):
    private, size, key_size = load_ec_private(private_bytes)
    element = 1 + 2 * size
    ephemeral_bytes = data[:element]
    ephemeral = ec.EllipticCurvePublicKey.from_encoded_point(private.curve, ephemeral_bytes)
    secret = private.exchange(ec.ECDH(), ephemeral)
    derived = kdf(hash_name, secret, ephemeral_bytes, key_size + (16 if variable_iv else 0))
    iv = derived[key_size:] if variable_iv else bytes(16)
    return AESGCM(derived[:key_size]).decrypt(iv, data[element:], None)


def oaep(hash_name):
    algorithm = HASHES[hash_name]()
    return padding.OAEP(mgf=padding.MGF1(algorithm=algorithm), algorithm=algorithm, label=None)


def rsa_encrypt(public_der, hash_name, plaintext):
    public = serialization.load_der_public_key(public_der)
    session = os.urandom(32 if public.key_size >= 4096 else 16)
    aad = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    return public.encrypt(session, oaep(hash_name)) + AESGCM(session).encrypt(bytes(16), plaintext, aad)


def rsa_decrypt(private_der, hash_name, data):
    private = serialization.load_der_private_key(private_der, None)
    k = (private.key_size + 7) // 8
    session = private.decrypt(data[:k], oaep(hash_name))
    aad = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    return AESGCM(session).decrypt(bytes(16), data[k:], aad)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    read = lambda path: open(path, "rb").read()
    if command == "keygen-ec":
        curve, size, _ = CURVES[args[0]]
        key = ec.generate_private_key(curve())
        public = point(key.public_key())
        open(args[1], "wb").write(public + key.private_numbers().private_value.to_bytes(size, "big"))
        open(args[2], "wb").write(public)
    elif command == "keygen-rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=int(args[0]))
        open(args[1], "wb").write(key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL,
                                                    serialization.NoEncryption()))
        open(args[2], "wb").write(key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1))
    elif command == "ecies-encrypt":
        open(args[4], "wb").write(ecies_encrypt(read(args[0]), args[1], args[2] == "1", read(args[3])))
    elif command == "ecies-decrypt":
        open(args[4], "wb").write(ecies_decrypt(read(args[0]), args[1], args[2] == "1", read(args[3])))
    elif command == "rsa-encrypt":
        open(args[3], "wb").write(rsa_encrypt(read(args[0]), args[1], read(args[2])))
    elif command == "rsa-decrypt":
        open(args[3], "wb").write(rsa_decrypt(read(args[0]), args[1], read(args[2])))
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
