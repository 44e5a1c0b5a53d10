#!/usr/bin/env python3
"""Validates what gpuvs writes against the JSON Schemas of docs/schema/ (CTest's
schema_run test, tests/CMakeLists.txt):
 - every bundled gpuvs.run/1 file (data/reference/, tests/data/runs/; the foreign and
   newer-version fixtures are not run files of this version) against
   gpuvs.run-1.schema.json, and a copy that breaks one rule per kind, which must fail,
   so that the check itself is seen to work;
 - with GPUVS, the output of `gpuvs --json compare` (catalogue GPUs, bundled run files,
   a claims file, both) and the compare.json / claims.json that --out writes, against
   gpuvs.compare-1 and gpuvs.claims-1.

  python3 tests/cpu/validate_schemas.py SOURCE_DIR [GPUVS]

Exit 0 when every file validates, 1 naming each that does not, 77 (CTest's skip) when
this Python has no jsonschema module (Debian: python3-jsonschema)."""
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print(f"skip: {sys.executable} has no jsonschema module (Debian: python3-jsonschema)")
    sys.exit(77)


def main(source, gpuvs):
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
    if gpuvs:
        failures += check_outputs(source, gpuvs)
    print(f"{checked} run files, {failures} failure(s)")
    return 1 if failures else 0


def load_schema(source, name):
    with open(os.path.join(source, "docs/schema", name)) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_outputs(source, gpuvs):
    compare = load_schema(source, "gpuvs.compare-1.schema.json")
    claims = load_schema(source, "gpuvs.claims-1.schema.json")
    ref = os.path.join(source, "data/reference")
    claims_file = os.path.join(source, "data/claims/a100-vs-h200-96gb-article.csv")
    failures = 0

    def judge(what, validator, doc):
        errors = list(validator.iter_errors(doc))
        if errors:
            e = errors[0]
            print(f"FAIL {what}: {len(errors)} error(s), first at "
                  f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}")
            return 1
        print(f"ok   {what}")
        return 0

    def run(args):
        out = subprocess.run([gpuvs, "--json", "-q", *args], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"gpuvs {' '.join(args)}: exit {out.returncode}: {out.stderr}")
        return json.loads(out.stdout)

    cases = [
        ["compare", "H200-SXM", "A100-SXM4-80GB"],
        ["compare", os.path.join(ref, "h200-sxm-run.json"), "A100-SXM4-80GB"],
        ["compare", os.path.join(ref, "h200-model-llama-1b-bf16-train-batch8.json"),
         os.path.join(ref, "h200-model-llama-8b-bf16-infer-batch1.json")],
        ["compare", os.path.join(ref, "h200x2-collectives.json"), "H100-SXM"],
    ]
    for args in cases:
        failures += judge("gpuvs --json " + " ".join(os.path.basename(a) for a in args), compare,
                          run(args))
    failures += judge("gpuvs --json compare --claims", claims, run(["compare", "--claims",
                                                                     claims_file]))
    both = run(["compare", os.path.join(ref, "h200-sxm-run.json"), "--claims", claims_file])
    failures += judge("compare with claims: comparison", compare, both["comparison"])
    failures += judge("compare with claims: claims", claims, both["claims"])
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([gpuvs, "-q", "--out", out, "compare", "H200-SXM", "A100-SXM4-80GB",
                        "--claims", claims_file], check=True, capture_output=True)
        for name, validator in (("compare.json", compare), ("claims.json", claims)):
            with open(os.path.join(out, name)) as f:
                failures += judge("--out " + name, validator, json.load(f))
    return failures


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
