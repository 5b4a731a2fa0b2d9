"""A database writer's rewrite of coffer-server's audit chain, done outside
Coffer (security review 4, H8): reads the chain as JSON lines on standard
input (one entry per line, as sqlite3's json_object or PostgreSQL's
json_build_object print it, with `hash` and `link` in hex), drops every
entry about SUBJECT, keeps the entries before the first one it drops as
they are, renumbers the rest and relinks them with SHA-256 as
docs/key-server-audit.md defines links made before they were keyed (all
a writer without the KEK can compute: a keyed link needs the link key),
and prints the SQL that puts the forged chain in place and deletes the
anchors from the first removed entry on. SUBJECT `-` removes nothing and
relinks the whole chain so: a log as a server from before keyed links
wrote it (for the upgrade's test), or a writer's whole rewrite.

    python3 audit-relink.py sqlite|postgres SUBJECT < entries.jsonl | sqlite3 keys.sqlite
"""
import hashlib
import json
import struct
import sys

dialect, subject = sys.argv[1], sys.argv[2]
columns = ["seq", "at", "actor", "action", "realm", "subject", "device", "purpose", "version", "detail"]
entries = [json.loads(line) for line in sys.stdin if line.strip()]
kept = [e for e in entries if e["subject"] != subject]
removed = [e["seq"] for e in entries if e["subject"] == subject]
if subject == "-":
    removed = [0]
elif not removed:
    sys.exit(f"no entry about {subject}")


def field(value):
    data = str(value).encode()
    return struct.pack("!I", len(data)) + data


def text(value):
    return "'" + str(value).replace("'", "''") + "'"


def blob(data):
    return f"X'{data.hex()}'" if dialect == "sqlite" else f"decode('{data.hex()}', 'hex')"


cut = max(min(removed), 1)
before = [e for e in kept if e["seq"] < cut]
previous = bytes.fromhex(before[-1]["hash"]) if before else bytes(32)
rows = []
for number, entry in enumerate([e for e in kept if e["seq"] >= cut and e["seq"] not in removed], cut):
    entry = dict(entry, seq=number)
    previous = hashlib.sha256(
        previous + field("coffer audit v1") + b"".join(field(entry[c]) for c in columns)
    ).digest()
    values = [str(entry["seq"]), str(entry["at"])] + [text(entry[c]) for c in columns[2:8]]
    values += [str(entry["version"]), text(entry["detail"]), blob(previous)]
    rows.append("(" + ", ".join(values) + ")")
print("BEGIN;")
print(f"DELETE FROM audit WHERE seq >= {cut};")
print(f"INSERT INTO audit ({', '.join(columns)}, hash) VALUES")
print(",\n".join(rows) + ";")
print(f"DELETE FROM audit_anchors WHERE seq >= {cut};")
print("COMMIT;")
