"""What the reference dumps decide before they import torch (this module needs none).

Importing torch takes seconds and a missing torch, torchvision or transformers, or no
CUDA GPU, means "cannot write the reference here", which the CTest fixture reports as
a skip (exit code SKIP, SKIP_RETURN_CODE in tests/CMakeLists.txt), not a failure. So
the dumps first check whether the file they would write is up to date, then import.

Up to date: the file exists, is newer than every source it was made from (the dump
script and tensorfile.py), and its __metadata__ records the same model and the same
arguments (batch, seed, seq). Anything else (older, other arguments, unreadable, not a
gpuvs reference) is rewritten. A newer torch does not make a file stale: --force
rewrites it.
"""
import json
import os
import struct
import sys

SKIP = 77  # "cannot here": the fixture's SKIP_RETURN_CODE
HEADER_LIMIT = 64 << 20  # a header is a few hundred KB; a larger length is not one


def cannot(script, why):
    """Says why the reference cannot be written here and exits with SKIP."""
    print(f"{script}: not written: {why}", flush=True)
    sys.exit(SKIP)


def import_error_reason(error, purpose):
    """'transformers is not importable by /usr/bin/python3 (No module named ...)'."""
    name = getattr(error, "name", None) or "a module"
    return f"{name} is not importable by {sys.executable} ({error}); {purpose}"


def metadata(path):
    """The __metadata__ of a gpuvs reference file, or None when it is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                return None
            (n,) = struct.unpack("<Q", head)
            if n > HEADER_LIMIT:
                return None
            header = json.loads(f.read(n))
    except (OSError, ValueError):
        return None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != "gpuvs.ref":
        return None
    return meta


def stale_reason(path, expect, sources):
    """None when `path` is up to date (see the module's docstring), else why not."""
    if not os.path.exists(path):
        return "no file yet"
    mtime = os.path.getmtime(path)
    newer = [s for s in sources if os.path.getmtime(s) >= mtime]
    if newer:
        return f"{os.path.basename(newer[0])} is newer than the file"
    meta = metadata(path)
    if meta is None:
        return "not a readable gpuvs reference file"
    for key, value in expect.items():
        if meta.get(key) != str(value):
            return f"made with {key} {meta.get(key)}, asked for {value}"
    return None


def skip_if_up_to_date(script, path, expect, sources, force):
    """Exits 0 (saying so) when `path` is up to date and not `force`; returns else."""
    if force:
        return
    why = stale_reason(path, expect, sources)
    if why is None:
        print(f"{script}: {path} is up to date (same arguments, newer than the scripts; "
              "--force rewrites it)", flush=True)
        sys.exit(0)
    if why != "no file yet":
        print(f"{script}: rewriting {path}: {why}", flush=True)
