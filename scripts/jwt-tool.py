#!/usr/bin/env python3
"""Sign-in tokens for coffer-server's tests, made by an independent
implementation (PyJWT 2.10 and pyca/cryptography), never by Coffer.

  jwt-tool.py keys DIR          writes DIR/jwks.json (the issuer's public keys:
                                kids "es" P-256, "rs" RSA-2048, "ed" Ed25519),
                                DIR/issuer.json (their private keys) and an
                                unlisted P-256 key "stranger" of another issuer
  jwt-tool.py mint DIR < SPECS  reads a JSON list of token specs, prints a JSON
                                list of tokens; a spec is {"key": kid,
                                "claims": {...}, "alg"?: …, "kid"?: …,
                                "headers"?: {...}, "attack"?: "none" |
                                "hs256-public-key"}
  jwt-tool.py rotate DIR        adds kid "es2" to the JWKS (the issuer's key rotation)
  jwt-tool.py proof DIR < SPECS DPoP proofs (RFC 9449): reads a JSON list of
                                specs {"device": name, "htm", "htu", "token"?,
                                "nonce"?, "iat"?, "jti"?, "typ"?, "signer"?:
                                another device's name (the attack: jwk of one
                                key, signature of another)}; prints a JSON list
                                of {"proof", "jkt"}. Device keys (P-256) are made
                                on first use and kept in DIR/devices.json.
"""
import base64, hashlib, hmac, json, os, sys, time
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

ALGS = {"es": "ES256", "es2": "ES256", "rs": "RS256", "ed": "EdDSA", "stranger": "ES256"}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def public_jwk(kid, key):
    jwk = json.loads(jwt.algorithms.get_default_algorithms()[ALGS[kid]].to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig", "alg": ALGS[kid]})
    return jwk


def write_keys(folder, keys, listed):
    with open(os.path.join(folder, "issuer.json"), "w") as f:
        json.dump({kid: pem(key) for kid, key in keys.items()}, f)
    with open(os.path.join(folder, "jwks.json.tmp"), "w") as f:
        json.dump({"keys": [public_jwk(kid, keys[kid]) for kid in listed]}, f)
    os.replace(os.path.join(folder, "jwks.json.tmp"), os.path.join(folder, "jwks.json"))


def load(folder):
    with open(os.path.join(folder, "issuer.json")) as f:
        return {kid: serialization.load_pem_private_key(text.encode(), None) for kid, text in json.load(f).items()}


def mint(keys, spec):
    kid = spec["key"]
    headers = {"kid": spec.get("kid", kid), **spec.get("headers", {})}
    if spec.get("kid", "") is None:
        del headers["kid"]
    attack = spec.get("attack")
    if attack == "none":
        head = b64(json.dumps({"alg": "none", "typ": "JWT", **headers}).encode())
        return head + "." + b64(json.dumps(spec["claims"]).encode()) + "."
    if attack == "hs256-public-key":
        # The classic confusion: HMAC keyed with the issuer's public key.
        public = keys[kid].public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        head = b64(json.dumps({"alg": "HS256", "typ": "JWT", **headers}).encode())
        body = b64(json.dumps(spec["claims"]).encode())
        mac = hmac.new(public, (head + "." + body).encode(), hashlib.sha256).digest()
        return head + "." + body + "." + b64(mac)
    return jwt.encode(spec["claims"], keys[kid], algorithm=spec.get("alg", ALGS[kid]), headers=headers)


def device_key(folder, name):
    path = os.path.join(folder, "devices.json")
    devices = {}
    if os.path.exists(path):
        with open(path) as f:
            devices = json.load(f)
    if name not in devices:
        devices[name] = pem(ec.generate_private_key(ec.SECP256R1()))
        with open(path, "w") as f:
            json.dump(devices, f)
    return serialization.load_pem_private_key(devices[name].encode(), None)


def ec_jwk(key):
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")),
            "y": b64(numbers.y.to_bytes(32, "big"))}


def thumbprint(jwk):
    # RFC 7638: the required members, in lexicographic order, no whitespace.
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64(hashlib.sha256(canonical.encode()).digest())


def proof(folder, spec):
    key = device_key(folder, spec["device"])
    jwk = ec_jwk(key)
    signer = device_key(folder, spec["signer"]) if "signer" in spec else key
    claims = {"jti": spec.get("jti") or b64(os.urandom(16)), "htm": spec["htm"], "htu": spec["htu"],
              "iat": spec.get("iat", int(time.time()))}
    if "token" in spec:
        claims["ath"] = b64(hashlib.sha256(spec["token"].encode()).digest())
    if spec.get("nonce"):
        claims["nonce"] = spec["nonce"]
    headers = {"typ": spec.get("typ", "dpop+jwt"), "jwk": jwk}
    return {"proof": jwt.encode(claims, signer, algorithm="ES256", headers=headers), "jkt": thumbprint(jwk)}


def main():
    command, folder = sys.argv[1], sys.argv[2]
    if command == "keys":
        keys = {"es": ec.generate_private_key(ec.SECP256R1()),
                "rs": rsa.generate_private_key(public_exponent=65537, key_size=2048),
                "ed": ed25519.Ed25519PrivateKey.generate(),
                "stranger": ec.generate_private_key(ec.SECP256R1())}
        write_keys(folder, keys, ["es", "rs", "ed"])
    elif command == "rotate":
        keys = load(folder)
        keys["es2"] = ec.generate_private_key(ec.SECP256R1())
        write_keys(folder, keys, ["es", "rs", "ed", "es2"])
    elif command == "mint":
        keys = load(folder)
        json.dump([mint(keys, spec) for spec in json.load(sys.stdin)], sys.stdout)
    elif command == "proof":
        json.dump([proof(folder, spec) for spec in json.load(sys.stdin)], sys.stdout)
    else:
        sys.exit("unknown command " + command)


main()
