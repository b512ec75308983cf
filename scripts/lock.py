#!/usr/bin/env python3
"""Reads a data lock (workloads/README.md describes the format) for the fetch
scripts, so that no shell script parses TOML by hand.

  lock.py files LOCK [KIND]     one line per copied (not generated) file
                                whose source is of that kind (default: any):
                                path<TAB>sha256<TAB>bytes<TAB>from
  lock.py source LOCK ID KEY    a field of the source with that id
  lock.py file LOCK NAME KEY    a field of the file with that name
"""
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    sys.exit(f"error: scripts/lock.py needs Python 3.11 or newer (tomllib); this is {sys.version.split()[0]}")


def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def one(items, key, value, lock):
    found = [i for i in items if i.get(key) == value]
    if len(found) != 1:
        sys.exit(f"error: {lock} has {len(found)} entries with {key} = {value!r}")
    return found[0]


def field(entry, key, lock):
    if key not in entry:
        sys.exit(f"error: {lock}: no {key} in {entry.get('id') or entry.get('name')}")
    return entry[key]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, lock = argv[0], argv[1]
    data = load(lock)
    if cmd == "files" and len(argv) in (2, 3):
        kinds = {s["id"]: s["kind"] for s in data["sources"]}
        for f in data["files"]:
            if "generated_by" in f or (len(argv) == 3 and kinds[f["source"]] != argv[2]):
                continue
            print("\t".join([f["path"], f["sha256"], str(f["bytes"]), f["from"]]))
    elif cmd == "source" and len(argv) == 4:
        print(field(one(data["sources"], "id", argv[2], lock), argv[3], lock))
    elif cmd == "file" and len(argv) == 4:
        print(field(one(data["files"], "name", argv[2], lock), argv[3], lock))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
