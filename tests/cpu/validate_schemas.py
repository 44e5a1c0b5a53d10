#!/usr/bin/env python3
"""Validates every bundled gpuvs.run/1 file against docs/schema/gpuvs.run-1.schema.json
(CTest's schema_run test, tests/CMakeLists.txt): the run files under data/reference/
and tests/data/runs/ whose "schema" is gpuvs.run/1 (the foreign and newer-version
fixtures are not), and a file that breaks one rule per kind, which must fail, so that
the check itself is seen to work.

  python3 tests/cpu/validate_schemas.py SOURCE_DIR

Exit 0 when every file validates, 1 naming each that does not, 77 (CTest's skip) when
this Python has no jsonschema module (Debian: python3-jsonschema)."""
import copy
import glob
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print(f"skip: {sys.executable} has no jsonschema module (Debian: python3-jsonschema)")
    sys.exit(77)


def main(source):
    with open(os.path.join(source, "docs/schema/gpuvs.run-1.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(glob.glob(os.path.join(source, "data/reference/*.json")) +
                   glob.glob(os.path.join(source, "tests/data/runs/*.json")))
    failures, checked, example = 0, 0, None
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("schema") != "gpuvs.run/1":
            continue
        checked += 1
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        name = os.path.relpath(path, source)
        if errors:
            failures += 1
            e = errors[0]
            print(f"FAIL {name}: {len(errors)} error(s), first at "
                  f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}")
        else:
            print(f"ok   {name}")
            if example is None and doc.get("results"):
                example = doc
    if checked < 10:
        print(f"FAIL only {checked} run files found under {source}")
        failures += 1
    # Each of these breaks what the reader refuses: the schema must refuse it too.
    if example is not None:
        broken = [
            ("a key the writer does not write", lambda d: d["results"][0].update(extra=1)),
            ("a required field missing", lambda d: d["meta"].pop("host")),
            ("an unknown status", lambda d: d["results"][0].update(status="great")),
            ("a negative sample count", lambda d: d["results"][0]["stats"].update(samples=-1)),
            ("a string for an integer", lambda d: d["system"]["gpus"][0].update(sm_count="8")
             if d["system"]["gpus"] else d["system"].update(os=1)),
        ]
        for what, change in broken:
            doc = copy.deepcopy(example)
            change(doc)
            if validator.is_valid(doc):
                print(f"FAIL the schema accepts {what}")
                failures += 1
            else:
                print(f"ok   the schema refuses {what}")
    print(f"{checked} run files, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
