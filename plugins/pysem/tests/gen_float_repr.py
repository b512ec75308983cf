#!/usr/bin/env python3
"""Writes tests/float_repr.txt: `bits repr` per line, CPython's repr(float).

Floats from a xorshift64 sequence (any bit pattern, and magnitudes
1e-6..1e17): the first 100 exact ties (the float lies exactly halfway
between two shortest candidates: CPython's dtoa rounds half to even, Rust's
`{:e}` rounds up), the first 200 other ambiguous ones (changing the last
digit by one also reads back as the same float: the closest must win), then
300 of any kind. `src/num.rs` checks `float_repr` against them.

    python3 plugins/pysem/tests/gen_float_repr.py > plugins/pysem/tests/float_repr.txt
"""

import math
import struct
from decimal import Decimal

MASK = (1 << 64) - 1


def floats():
    x = 0x2545_F491_4F6C_DD1D
    while True:
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        scaled = (x >> 11) / float(1 << 53) * 10.0 ** ((x % 24) - 6)
        for f in (struct.unpack("<d", struct.pack("<Q", x))[0], scaled):
            if math.isfinite(f):
                yield f


def neighbours(f):
    """The shortest candidates next to repr(f) that also read back as f."""
    r = repr(abs(f))
    mant, sep, exp = r.partition("e")
    last = mant[-1]
    if not last.isdigit() or mant.endswith(".0"):
        return []
    texts = (mant[:-1] + str(d) + sep + exp for d in (int(last) - 1, int(last) + 1) if 0 <= d <= 9)
    return [t for t in texts if float(t) == abs(f)]


def tie(f):
    exact = Decimal(abs(f))
    return any(abs(Decimal(t) - exact) == abs(Decimal(repr(abs(f))) - exact) for t in neighbours(f))


def main():
    ties, tricky, plain = [], [], []
    for f in floats():
        if neighbours(f) and tie(f):
            if len(ties) < 100:
                ties.append(f)
        elif neighbours(f):
            if len(tricky) < 200:
                tricky.append(f)
        elif len(plain) < 300:
            plain.append(f)
        if (len(ties), len(tricky), len(plain)) == (100, 200, 300):
            break
    for f in ties + tricky + plain:
        print(f"{struct.unpack('<Q', struct.pack('<d', f))[0]:016x} {f!r}")


if __name__ == "__main__":
    main()
