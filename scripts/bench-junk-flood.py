#!/usr/bin/env python3
"""How much a flood of junk tokens from one client slows another user's key
fetch (security review 3, G7; target: at most 3x).

    swift build -c release --traits Server --product coffer-server
    .venv/bin/python scripts/bench-junk-flood.py [--seconds 10] [--connections 64] [--bin .build/release]

For each server setting (no address limit; --address-rate-limit 20000/60), an
honest client on 127.0.0.2 fetches its key in a loop, first alone, then while
wrk floods POST /v1/keys/notes from 127.0.0.1 with `Authorization: Bearer
x.y.z` (64 connections, beside the server on the same cores). The server
logs to a file, as deployed. Prints the honest client's median and p99 in
both runs and their ratio.
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile, threading, time

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from requests.adapters import HTTPAdapter


class From127002(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = ("127.0.0.2", 0)
        super().init_poolmanager(*args, **kwargs)


def b64url(number):
    import base64
    return base64.urlsafe_b64encode(number.to_bytes(32, "big")).rstrip(b"=").decode()


def start(binary, folder, key, extra):
    numbers = key.public_key().public_numbers()
    with open(os.path.join(folder, "jwks.json"), "w") as out:
        json.dump({"keys": [{"kty": "EC", "crv": "P-256", "x": b64url(numbers.x), "y": b64url(numbers.y),
                             "kid": "bench", "alg": "ES256", "use": "sig"}]}, out)
    passphrase = os.path.join(folder, "kek.pass")
    with open(passphrase, "w") as out:
        out.write("a benchmark passphrase\n")
    os.chmod(passphrase, 0o600)
    # A new key server, as an operator makes one.
    subprocess.run(
        [os.path.join(binary, "coffer-server"), "kek", "init", "--data", os.path.join(folder, "data"),
         "--kek-passphrase-file", passphrase], check=True, stdout=subprocess.DEVNULL)
    server = subprocess.Popen(
        [os.path.join(binary, "coffer-server"), "serve", "--listen", "127.0.0.1:0", "--data",
         os.path.join(folder, "data"), "--kek-passphrase-file", passphrase, "--issuer", "https://issuer.bench",
         "--audience", "bench", "--jwks-file", os.path.join(folder, "jwks.json"), *extra],
        stdout=subprocess.PIPE, stderr=open(os.path.join(folder, "server.log"), "ab"), text=True)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    return server, f"http://127.0.0.1:{port}"


def honest(url, token, seconds):
    session = requests.Session()
    session.mount("http://", From127002())
    latencies, statuses, end = [], {}, time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.perf_counter()
        status = session.post(url + "/v1/keys/notes", headers={"Authorization": "Bearer " + token}).status_code
        latencies.append(time.perf_counter() - began)
        statuses[status] = statuses.get(status, 0) + 1
    latencies.sort()
    return latencies, statuses


def summary(latencies):
    return 1000 * latencies[len(latencies) // 2], 1000 * latencies[int(len(latencies) * 0.99)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--bin", default=".build/release")
    options = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench-junk-flood: wrk is not on PATH")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"bench-junk-flood: {os.cpu_count()} cores ({cpu}), wrk -c{options.connections}, {options.seconds} s per run")
    key = ec.generate_private_key(ec.SECP256R1())
    now = int(time.time())
    token = jwt.encode({"iss": "https://issuer.bench", "aud": "bench", "sub": "alice", "iat": now, "exp": now + 3600},
                       key, algorithm="ES256", headers={"kid": "bench"})
    for extra in [[], ["--address-rate-limit", "20000/60"]]:
        folder = tempfile.mkdtemp(prefix="coffer-flood-")
        server, url = start(options.bin, folder, key, extra)
        try:
            lua = os.path.join(folder, "junk.lua")
            with open(lua, "w") as out:
                out.write('wrk.method = "POST"\nwrk.headers["Authorization"] = "Bearer x.y.z"\n')
            honest(url, token, 1)  # the key made, the connection warm
            alone, _ = honest(url, token, options.seconds)
            result = {}
            flood = threading.Thread(target=lambda: result.update(out=subprocess.run(
                ["wrk", "-t2", f"-c{options.connections}", f"-d{options.seconds}s", "-s", lua, url + "/v1/keys/notes"],
                capture_output=True, text=True).stdout))
            flood.start()
            during, statuses = honest(url, token, options.seconds)
            flood.join()
            rate = re.search(r"Requests/sec:\s+([\d.]+)", result["out"]).group(1)
            (m0, p0), (m1, p1) = summary(alone), summary(during)
            setting = " ".join(extra) or "no address limit"
            print(f"{setting:>34}: alone median {m0:.2f} ms p99 {p0:.2f} ms ({len(alone)} fetches); "
                  f"under a {float(rate):.0f} req/s junk flood median {m1:.2f} ms p99 {p1:.2f} ms "
                  f"({len(during)} fetches, {statuses}); {m1 / m0:.2f}x (target <= 3x)")
        finally:
            server.terminate()
            server.wait(20)
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
