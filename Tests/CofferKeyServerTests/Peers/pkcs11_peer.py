"""An independent check, outside Coffer, of a KEK ring sealed in an HSM.

Usage: pkcs11_peer.py MODULE TOKEN PIN_FILE KEY_LABEL KEK_RING

Through python-pkcs11 (not Coffer's own PKCS#11 code) it finds the AES
key KEY_LABEL in TOKEN and prints its attributes as JSON; then it reads
KEK_RING as docs/key-slots.md describes it ("CKR3" ring id, generation,
slots), opens the kind 3 slot with AES-256-GCM inside the token, and opens
the ring's body with the data key (AES-256-GCM-SIV, from the cryptography
package). It prints the body's length; it exits non-zero on any failure.
"""
import json
import sys

import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV

module, token_label, pin_file, key_label, ring_path = sys.argv[1:6]
pin = open(pin_file, "rb").read().rstrip(b"\r\n").decode()
lib = pkcs11.lib(module)
token = lib.get_token(token_label=token_label)
with token.open(user_pin=pin) as session:
    keys = list(session.get_objects({Attribute.CLASS: ObjectClass.SECRET_KEY, Attribute.LABEL: key_label}))
    assert len(keys) == 1, f"{len(keys)} keys labelled {key_label}"
    key = keys[0]
    attributes = {
        name: bool(key[attribute])
        for name, attribute in [
            ("token", Attribute.TOKEN), ("sensitive", Attribute.SENSITIVE), ("extractable", Attribute.EXTRACTABLE),
            ("alwaysSensitive", Attribute.ALWAYS_SENSITIVE), ("neverExtractable", Attribute.NEVER_EXTRACTABLE),
        ]
    }
    attributes["keyType"] = "AES" if key[Attribute.KEY_TYPE] == KeyType.AES else str(key[Attribute.KEY_TYPE])
    attributes["bytes"] = key[Attribute.VALUE_LEN]
    try:
        key[Attribute.VALUE]
        attributes["valueReadable"] = True
    except pkcs11.exceptions.PKCS11Error:
        attributes["valueReadable"] = False

    ring = open(ring_path, "rb").read()
    assert ring[:4] == b"CKR3", "not a version 3 key ring"
    ring_id = ring[4:20]
    count = ring[28]
    offset = 29
    data_key = None
    for _ in range(count):
        kind = ring[offset]
        parameters = {0: 0, 1: 3, 2: 4, 3: 0}[kind]
        salt = ring[offset + 1 + parameters:offset + 17 + parameters]
        sealed = ring[offset + 17 + parameters:offset + 77 + parameters]
        if kind == 3:
            binding = b"CKR3" + ring_id
            aad = b"coffer key slot v1" + bytes([len(binding)]) + binding + bytes([3]) + salt
            data_key = key.decrypt(
                sealed[12:], mechanism=Mechanism.AES_GCM, mechanism_param=pkcs11.GCMParams(sealed[:12], aad, 128))
        offset += 77 + parameters
    assert data_key is not None and len(data_key) == 32, "no kind 3 slot opened"
    body = AESGCMSIV(data_key).decrypt(ring[offset:offset + 12], ring[offset + 12:], ring[:offset])
    attributes["ringBody"] = len(body)
print(json.dumps(attributes, sort_keys=True))
