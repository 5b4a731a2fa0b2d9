#!/usr/bin/env python3
"""Independent age implementations driven for Coffer's interop tests.

  peer.py pyrage-encrypt (--recipient R | --passphrase-file F) [--armor] IN OUT
  peer.py pyrage-decrypt (--identity-file K | --passphrase-file F) IN OUT
  peer.py age-passphrase (encrypt [--armor] | decrypt) --passphrase-file F IN OUT

pyrage is rage (Rust) behind Python. The age CLI reads passphrases only from
a terminal, so age-passphrase runs it on a pseudo-terminal and answers its
prompts.
"""
import argparse
import os
import pty
import sys


def read_passphrase(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.rstrip(b"\n").rstrip(b"\r").decode()


def pyrage_encrypt(args):
    import pyrage
    data = open(args.input, "rb").read()
    if args.passphrase_file:
        out = pyrage.passphrase.encrypt(data, read_passphrase(args.passphrase_file), armored=args.armor)
    elif args.recipient.startswith("age1tagpq1"):
        out = pyrage.encrypt(data, [pyrage.tagpq.Recipient.from_str(args.recipient)], armored=args.armor)
    elif args.recipient.startswith("age1tag1"):
        out = pyrage.encrypt(data, [pyrage.tag.Recipient.from_str(args.recipient)], armored=args.armor)
    else:
        out = pyrage.encrypt(data, [pyrage.x25519.Recipient.from_str(args.recipient)], armored=args.armor)
    open(args.output, "wb").write(out)


def pyrage_decrypt(args):
    import pyrage
    data = open(args.input, "rb").read()
    if args.passphrase_file:
        out = pyrage.passphrase.decrypt(data, read_passphrase(args.passphrase_file))
    else:
        lines = [l.strip() for l in open(args.identity_file) if l.strip() and not l.startswith("#")]
        out = pyrage.decrypt(data, [pyrage.x25519.Identity.from_str(l) for l in lines])
    open(args.output, "wb").write(out)


def age_passphrase(args):
    passphrase = read_passphrase(args.passphrase_file).encode()
    if args.mode == "encrypt":
        argv = ["age", "-p"] + (["-a"] if args.armor else []) + ["-o", args.output, args.input]
    else:
        argv = ["age", "-d", "-o", args.output, args.input]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    transcript = b""
    answered = 0
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        transcript += chunk
        # Answer each "passphrase" prompt once (encrypt asks twice).
        if transcript.lower().count(b"passphrase") > answered:
            answered = transcript.lower().count(b"passphrase")
            os.write(fd, passphrase + b"\n")
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(transcript.decode(errors="replace"))
    sys.exit(code)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    enc = sub.add_parser("pyrage-encrypt")
    enc.add_argument("--recipient")
    enc.add_argument("--passphrase-file")
    enc.add_argument("--armor", action="store_true")
    enc.add_argument("input")
    enc.add_argument("output")
    dec = sub.add_parser("pyrage-decrypt")
    dec.add_argument("--identity-file")
    dec.add_argument("--passphrase-file")
    dec.add_argument("input")
    dec.add_argument("output")
    ap = sub.add_parser("age-passphrase")
    ap.add_argument("mode", choices=["encrypt", "decrypt"])
    ap.add_argument("--passphrase-file", required=True)
    ap.add_argument("--armor", action="store_true")
    ap.add_argument("input")
    ap.add_argument("output")
    args = parser.parse_args()
    {"pyrage-encrypt": pyrage_encrypt, "pyrage-decrypt": pyrage_decrypt, "age-passphrase": age_passphrase}[args.command](args)


if __name__ == "__main__":
    main()
