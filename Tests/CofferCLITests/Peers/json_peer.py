"""Python's json module as the independent side of `coffer store put`'s
JSON reader and `coffer store find`'s JSON writer.

  json_peer.py make N SEED OUT   writes N records as JSON lines, with
                                 escapes, surrogate pairs, control
                                 characters, extreme integers and nulls,
                                 spaced and escaped at random
  json_peer.py same IN OUT       exit 0 when OUT (coffer's records, an
                                 "id" added) holds IN's records in order
"""
import json
import random
import sys

PIECES = ['"', '\\', '/', '\b', '\f', '\n', '\r', '\t', '\x00', '\x1f', '\x7f', 'é', 'e\u0301', '\u2028',
          '\u2029', '\ufeff', '\uffff', '한', '😀', '\U0010ffff', 'plain', ' ', '{', '}', ',', ':', '[', ']']


def text(rng):
    return ''.join(rng.choice(PIECES) for _ in range(rng.randrange(0, 12)))


def make(count, seed, out):
    rng = random.Random(seed)
    with open(out, 'w', encoding='utf-8') as handle:
        for _ in range(count):
            record = {}
            for name in ('label', 'secret', 'number'):
                roll = rng.random()
                if roll < 0.15:
                    record[name] = None
                elif roll < 0.25:
                    continue
                elif name == 'number':
                    record[name] = rng.choice([0, -1, 1, 2**63 - 1, -2**63, rng.randrange(-2**40, 2**40)])
                else:
                    record[name] = text(rng)
            items = list(record.items())
            rng.shuffle(items)
            space = rng.choice(['', ' ', '\t', '  '])
            line = json.dumps(dict(items), ensure_ascii=rng.random() < 0.5,
                              separators=(',' + space, ':' + space))
            handle.write(rng.choice(['', ' ']) + line + rng.choice(['', ' ', '\r']) + '\n')


def same(given, printed):
    with open(given, encoding='utf-8') as handle:
        wanted = [json.loads(line) for line in handle if line.strip()]
    with open(printed, encoding='utf-8') as handle:
        got = [json.loads(line) for line in handle if line.strip()]
    if len(wanted) != len(got):
        print(f'{len(wanted)} records given, {len(got)} printed')
        return 1
    for index, (a, b) in enumerate(zip(wanted, got)):
        b = dict(b)
        if b.pop('id') != index + 1:
            print(f'record {index + 1} has the wrong id')
            return 1
        full = {name: a.get(name) for name in ('label', 'secret', 'number')}
        if full != b:
            print(f'record {index + 1} differs: {full!r} != {b!r}')
            return 1
    return 0


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(same(sys.argv[2], sys.argv[3]))
