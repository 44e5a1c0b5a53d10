#!/usr/bin/env python3
"""Validates what gpuvs writes against the JSON Schemas of docs/schema/ (CTest's
schema_run test, tests/CMakeLists.txt):
 - every bundled gpuvs.run/1 file (data/reference/, tests/data/runs/; the foreign and
   newer-version fixtures are not run files of this version) against
   gpuvs.run-1.schema.json, and a copy that breaks one rule per kind, which must fail,
   so that the check itself is seen to work;
 - with GPUVS, the output of `gpuvs --json compare` (catalogue GPUs, bundled run files,
   a claims file, both) and the compare.json / claims.json that --out writes, against
   gpuvs.compare-1 and gpuvs.claims-1; `gpuvs --json advise` (train and infer, CNN,
   prices, run files, fixed layouts, models that do not fit) against gpuvs.advise-1;
 - the bundled tune results (data/reference/, tests/data/tune/) and what `gpuvs --json
   tune --show FILE` and `--cached` print, against gpuvs.tune-1;
 - the bundled check results (data/reference/h200-check-level*.json) and, with
   FAKE_NVML, `gpuvs --json check --level 1` over scripted GPUs (healthy with every
   reading, faulty, and one NVML reports almost nothing of) against gpuvs.check-1;
 - the bundled monitor timelines (data/reference/h200-monitor-*.json) and, with
   FAKE_NVML (tests/fake_nvml/), a monitored command's timeline and --json summary
   against gpuvs.monitor-1;
 - with GPUVS, the run files `gpuvs import` writes from the fixtures of nccl-tests,
   nvbench and nvbandwidth (tests/data/) against gpuvs.run-1, and what `gpuvs --json
   import` prints against gpuvs.import-1;
 - for advise, tune, check, monitor and import too, copies that break one rule each,
   which must fail.

  python3 tests/cpu/validate_schemas.py SOURCE_DIR [GPUVS [FAKE_NVML]]

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


def main(source, gpuvs, fake_nvml):
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
        failures += refuses("run file", validator, example, broken)
    failures += check_monitor_files(source)
    failures += check_tune(source, gpuvs)
    failures += check_check_files(source)
    if gpuvs:
        failures += check_every_command(source, gpuvs)
        failures += check_outputs(source, gpuvs)
        failures += check_advise(source, gpuvs)
        failures += check_import(source, gpuvs, validator)
        if fake_nvml:
            failures += check_monitor_run(source, gpuvs, fake_nvml)
            failures += check_check(source, gpuvs, fake_nvml)
    print(f"{checked} run files, {failures} failure(s)")
    return 1 if failures else 0


def load_schema(source, name):
    with open(os.path.join(source, "docs/schema", name)) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def judge(what, validator, doc):
    errors = list(validator.iter_errors(doc))
    if errors:
        e = errors[0]
        print(f"FAIL {what}: {len(errors)} error(s), first at "
              f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}")
        return 1
    print(f"ok   {what}")
    return 0


def refuses(what, validator, doc, broken):
    """Each (name, change) of `broken` applied to a copy of doc must be refused."""
    failures = 0
    for name, change in broken:
        bad = copy.deepcopy(doc)
        change(bad)
        if validator.is_valid(bad):
            print(f"FAIL the {what} schema accepts {name}")
            failures += 1
        else:
            print(f"ok   the {what} schema refuses {name}")
    return failures


def gpuvs_json(gpuvs, args, env=None):
    out = subprocess.run([gpuvs, "--json", "-q", *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"gpuvs {' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def check_advise(source, gpuvs):
    advise = load_schema(source, "gpuvs.advise-1.schema.json")
    ref = os.path.join(source, "data/reference")
    cases = [
        ["--model", "llama-2-7b"],
        ["--model", "llama-2-70b", "--prices", "example", "--explain"],
        ["--model", "gpt3-175b", "--max-days", "30"],
        ["--model", "7B", "--gpus", "16", "--tp", "2", "--recompute", "selective"],
        ["--model", "llama-2-70b", "--candidates", "H200-SXM,A100-SXM4-80GB", "--gpus", "1"],
        ["--model", "resnet50", "--precision", "fp16", "--optimizer", "sgd"],
        ["--model", "llama-2-7b", "--run", os.path.join(ref, "h200-sxm-run.json")],
        ["infer", "--model", "llama-2-70b", "--precision", "fp8"],
        ["infer", "--model", "llama-2-7b", "--run",
         os.path.join(ref, "h200-model-llama-8b-bf16-infer-batch1.json")],
    ]
    failures, docs = 0, []
    for args in cases:
        doc = gpuvs_json(gpuvs, ["advise", *args])
        docs.append(doc)
        failures += judge("gpuvs --json advise " + " ".join(os.path.basename(a) for a in args),
                          advise, doc)
    # The cases must reach what the schema tells apart, or it is not seen to work.
    modes = {d["mode"] for d in docs}
    kinds = {d["model"]["kind"] for d in docs}
    unfit = any(not c["fits"] for d in docs for c in d["candidates"])
    priced = any(d["prices"] is not None for d in docs)
    if modes != {"train", "infer"} or kinds != {"transformer", "cnn"} or not unfit or not priced:
        print(f"FAIL the advise cases reach modes {modes}, kinds {kinds}, an unfit candidate "
              f"{unfit}, prices {priced}")
        failures += 1
    train, infer = docs[0], docs[7]
    failures += refuses("advise", advise, train, [
        ("a key the writer does not write", lambda d: d.update(extra=1)),
        ("a candidate without its time", lambda d: d["candidates"][0].pop("time")),
        ("an inference figure in a training advice",
         lambda d: d["candidates"][0].update(inference=None)),
        ("an unknown basis", lambda d: d["candidates"][0].update(basis="guessed")),
        ("a transformer without its layers", lambda d: d["model"].pop("layers")),
        ("an inference request in a training advice", lambda d: d.update(request=infer["request"])),
        ("a string for a count", lambda d: d["candidates"][0].update(count="1")),
    ])
    return failures


def check_import(source, gpuvs, run_validator):
    summary = load_schema(source, "gpuvs.import-1.schema.json")
    data = os.path.join(source, "tests/data")
    cases = [
        ("nccl-tests", sorted(glob.glob(os.path.join(data, "nccl_tests/all_reduce_*.txt")))[:1]),
        ("nccl-tests", [os.path.join(data, "nccl_tests/all_reduce_8gpu_failed_v2.19.6.txt")]),
        ("nccl-tests", [os.path.join(data, "nccl_tests/broadcast_4gpu_allroots_nocheck_2024.txt")]),
        ("nccl-tests", [os.path.join(data, "nccl_tests/sendrecv_2gpu_a100_2021.txt")]),
        ("nvbench", sorted(glob.glob(os.path.join(data, "nvbench/*.json")))),
        ("nvbandwidth", [os.path.join(data, "nvbandwidth/h200x2_v0.8.json")]),
        ("nvbandwidth", [os.path.join(data, "nvbandwidth/a100_pcie_x2_v0.5.json")]),
    ]
    failures, docs = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (tool, files) in enumerate(cases):
            out = os.path.join(tmp, f"import-{k}.json")
            what = f"gpuvs import {tool} " + " ".join(os.path.basename(f) for f in files)
            doc = gpuvs_json(gpuvs, ["import", tool, *files, "--out", out])
            docs.append(doc)
            failures += judge(f"gpuvs --json import ({what})", summary, doc)
            with open(out, encoding="utf-8") as f:
                failures += judge(f"the run file of {what}", run_validator, json.load(f))
    # The cases must reach what the schemas tell apart, or they are not seen to work.
    tools = {d["tool"] for d in docs}
    if tools != {"nccl-tests", "nvbench", "nvbandwidth"} or not any(d["errors"] for d in docs) \
            or not any(f["notes"] for d in docs for f in d["files"]):
        print(f"FAIL the import cases reach tools {tools}, no reported failure or no note")
        failures += 1
    failures += refuses("import", summary, docs[0], [
        ("a key the writer does not write", lambda d: d.update(extra=1)),
        ("a summary without its files", lambda d: d.pop("files")),
        ("an unknown tool", lambda d: d.update(tool="nvbandwidthx")),
        ("a file without its notes", lambda d: d["files"][0].pop("notes")),
        ("a negative count", lambda d: d.update(results=-1)),
    ])
    return failures


def check_tune(source, gpuvs):
    tune = load_schema(source, "gpuvs.tune-1.schema.json")
    files = sorted(glob.glob(os.path.join(source, "data/reference/*.json")) +
                   glob.glob(os.path.join(source, "tests/data/tune/*.json")))
    failures, docs = 0, []
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("schema") != "gpuvs.tune/1":
            continue
        docs.append(doc)
        failures += judge(os.path.relpath(path, source), tune, doc)
        if gpuvs:
            failures += judge("gpuvs --json tune --show " + os.path.basename(path), tune,
                              gpuvs_json(gpuvs, ["tune", "--show", path]))
    if len(docs) < 3:
        print(f"FAIL only {len(docs)} tune results found under {source}")
        return failures + 1
    if gpuvs:
        with tempfile.TemporaryDirectory() as home:  # an empty cache
            env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
            failures += judge("gpuvs --json tune --cached (no result)", tune,
                              gpuvs_json(gpuvs, ["tune", "--cached"], env))
    example = max(docs, key=lambda d: sum(len(x["settings"]) for x in d["devices"]))
    failures += refuses("tune", tune, example, [
        ("a key the writer does not write", lambda d: d["devices"][0].update(extra=1)),
        ("an empty scope", lambda d: d["devices"][0]["settings"][0].update(scope=[])),
        ("an environment variable name in lower case",
         lambda d: d["devices"][0]["settings"][0].update(env="nccl_algo")),
        ("evidence of an unknown basis",
         lambda d: next(s for s in d["devices"][0]["settings"] if s["rests_on"])["rests_on"][0]
         .update(basis="guessed")),
        ("a headroom of 0.9", lambda d: d["devices"][0]["request"].update(headroom=0.9)),
        ("a fingerprint without its UUID", lambda d: d["devices"][0]["fingerprint"].pop("uuid")),
    ])
    return failures


def scripted_gpu(index, **changes):
    """A GPU of the scripted NVML (tests/fake_nvml/fake_nvml.cpp) with every reading."""
    gpu = {"name": "NVIDIA H200", "uuid": f"GPU-5a1e0000-0000-0000-0000-00000000000{index}",
           "pci_bus_id": f"00000000:1{index}:00.0", "ecc_mode": 1, "mig_mode": 0,
           "persistence_mode": 1, "power_limit_mw": 700000, "power_default_limit_mw": 700000,
           "pcie_gen": 5, "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16,
           "pcie_replay": 0, "temperature": 31, "temperature_slowdown": 87,
           "temperature_gpu_max": 85, "clock_event_reasons": 1,
           "ecc": {"corrected_volatile": 0, "corrected_aggregate": 0,
                   "uncorrected_volatile": 0, "uncorrected_aggregate": 0},
           "remapped_rows": {"corrected": 0, "uncorrected": 0, "pending": 0, "failure": 0},
           "histogram": {"max": 8192, "high": 0, "partial": 0, "low": 0, "none": 0},
           "nvlinks": [{"active": 1, "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}
                       for _ in range(18)]}
    gpu.update(changes)
    return gpu


def check_check_files(source):
    check = load_schema(source, "gpuvs.check-1.schema.json")
    failures, found = 0, 0
    for path in sorted(glob.glob(os.path.join(source, "data/reference/*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if isinstance(doc, dict) and doc.get("schema") == "gpuvs.check/1":
            found += 1
            failures += judge(os.path.relpath(path, source), check, doc)
    if found < 3:
        print(f"FAIL only {found} check results found under {source}/data/reference")
        failures += 1
    return failures


def check_check(source, gpuvs, fake_nvml):
    check = load_schema(source, "gpuvs.check-1.schema.json")
    nodes = {
        "healthy": [scripted_gpu(0), scripted_gpu(1)],
        "faulty": [scripted_gpu(0, pcie_width=8, xids=[79],
                                ecc={"corrected_volatile": [0, 3], "corrected_aggregate": 5,
                                     "uncorrected_volatile": 1, "uncorrected_aggregate": 1},
                                remapped_rows={"corrected": 2, "uncorrected": 1, "pending": 1,
                                               "failure": 0})],
        "sparse": [{"name": "NVIDIA H200", "uuid": "GPU-1", "pci_bus_id": "00000000:19:00.0"}],
    }
    failures, docs = 0, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, gpus in nodes.items():
            script = os.path.join(tmp, name + ".json")
            with open(script, "w") as f:
                json.dump({"driver_version": "580.95.05", "cuda_driver_version": 13000,
                           "gpus": gpus}, f)
            env = dict(os.environ, GPUVS_NVML_LIBRARY=fake_nvml, GPUVS_FAKE_NVML_SCRIPT=script)
            out = subprocess.run([gpuvs, "--json", "-q", "check", "--level", "1"],
                                 capture_output=True, text=True, env=env)
            if out.returncode not in (0, 1):  # 1: a failed check, its document still written
                print(f"FAIL gpuvs check ({name} GPUs): exit {out.returncode}: {out.stderr}")
                failures += 1
                continue
            docs[name] = json.loads(out.stdout)
            failures += judge(f"gpuvs --json check --level 1 ({name} GPUs)", check, docs[name])
    statuses = {d["status"] for d in docs.values()}
    if not {"pass", "fail"} <= statuses:
        print(f"FAIL the scripted checks reach only {statuses}")
        failures += 1
    if "healthy" in docs:
        failures += refuses("check", check, docs["healthy"], [
            ("a key the writer does not write", lambda d: d["gpus"][0].update(extra=1)),
            ("an unknown status", lambda d: d["gpus"][0]["tests"][0].update(status="ok")),
            ("a skip as a GPU's verdict", lambda d: d["gpus"][0].update(status="skip")),
            ("a level 4", lambda d: d.update(level=4)),
            ("a reading without its NVLink states", lambda d: d["gpus"][0]["readings"]
             .pop("nvlinks")),
            ("a negative ECC count", lambda d: d["gpus"][0]["readings"]["last"]
             .update(ecc_corrected_volatile=-1)),
        ])
    return failures


def check_monitor_files(source):
    monitor = load_schema(source, "gpuvs.monitor-1.schema.json")
    files = sorted(glob.glob(os.path.join(source, "data/reference/*monitor*.json")))
    failures = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            failures += judge(os.path.relpath(path, source), monitor, json.load(f))
    if len(files) < 2:
        print(f"FAIL only {len(files)} monitor timelines found under {source}/data/reference")
        failures += 1
    return failures


def check_monitor_run(source, gpuvs, fake_nvml):
    monitor = load_schema(source, "gpuvs.monitor-1.schema.json")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "nvml.json")
        with open(script, "w") as f:
            json.dump({"driver_version": "580.95.05",
                       "gpus": [{"name": "NVIDIA H200", "uuid": "GPU-0a1b", "pci_bus_id":
                                 "00000000:19:00.0", "temperature": [40, 41, 42],
                                 "clock_event_reasons": 4}]}, f)
        env = dict(os.environ, GPUVS_NVML_LIBRARY=fake_nvml, GPUVS_FAKE_NVML_SCRIPT=script)
        timeline = os.path.join(tmp, "t.json")
        args = ["monitor", "--interval", "20", "--out", timeline, "--", "sleep", "0.2"]
        probe = subprocess.run([gpuvs, "-q", *args], capture_output=True, text=True, env=env)
        if probe.returncode == 3:  # a build without CUDA has no monitor (docs/monitor.md)
            print(f"skip the monitored run: {probe.stderr.strip()}")
            return 0
        summary = gpuvs_json(gpuvs, args, env)
        failures += judge("gpuvs --json monitor (stdout)", monitor, summary)
        with open(timeline, encoding="utf-8") as f:
            doc = json.load(f)
        failures += judge("gpuvs monitor --out FILE (timeline)", monitor, doc)
        if not doc["samples"] or summary["schema"] != "gpuvs.monitor-summary/1":
            print("FAIL the monitored run has no samples or the wrong stdout schema")
            failures += 1
        else:
            failures += refuses("monitor", monitor, doc, [
                ("a key the writer does not write", lambda d: d["samples"][0].update(extra=1)),
                ("a sample without its time", lambda d: d["samples"][0].pop("t_s")),
                ("a string for a temperature",
                 lambda d: d["samples"][0].update(temperature_c="40")),
                ("a start that is not ISO 8601", lambda d: d.update(started_at="yesterday")),
                ("a timeline without its samples", lambda d: d.pop("samples")),
            ])
            failures += refuses("monitor summary", monitor, summary, [
                ("a summary without the timeline's path", lambda d: d.pop("timeline")),
                ("another schema name", lambda d: d.update(schema="gpuvs.monitor/2")),
            ])
    return failures


def check_every_command(source, gpuvs):
    """With --json every command prints one JSON document with a `schema` field and nothing
    else on stdout; one that cannot run here (exit 3: no GPU) prints nothing there. GPUs
    are hidden (CUDA_VISIBLE_DEVICES empty), so that none of these measures for minutes
    where a GPU is present: `run` then shows its bundled comparison."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    ref = os.path.join(source, "data/reference")
    nccl_log = os.path.join(source, "tests/data/nccl_tests/all_reduce_2gpu_h200_v2.17.6.txt")
    failures = 0
    with tempfile.TemporaryDirectory() as out:
        cases = [
            ["bench", "--list"], ["specs", "list"], ["specs", "show", "H200"],
            ["specs", "diff", "A100", "H200"], ["compare", "H200-SXM", "A100-SXM4-80GB"],
            ["advise", "--model", "7B"], ["advise", "infer", "--model", "llama-2-7b"],
            ["tune", "--show", os.path.join(ref, "h200-tune.json")],
            ["import", "nccl-tests", nccl_log, "--out", os.path.join(out, "imported.json")],
            ["--out", out, "run"], ["detect"], ["bench", "memory"], ["model", "resnet50"],
        ]
        for args in cases:
            what = "gpuvs --json " + " ".join(os.path.basename(a) for a in args)
            r = subprocess.run([gpuvs, "--json", "-q", *args], capture_output=True, text=True,
                               env=env)
            if r.returncode == 3 and r.stdout == "":
                print(f"ok   {what}: could not run here, nothing on stdout")
                continue
            try:
                doc = json.loads(r.stdout) if r.returncode == 0 else None
            except json.JSONDecodeError as e:
                doc = None
                print(f"FAIL {what}: stdout is not one JSON document: {e}")
            if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpuvs."):
                print(f"FAIL {what}: exit {r.returncode}, no document with a gpuvs schema "
                      f"field: {r.stdout[:120]!r} {r.stderr[:200]!r}")
                failures += 1
            else:
                print(f"ok   {what}: {doc['schema']}")
    return failures


def check_outputs(source, gpuvs):
    compare = load_schema(source, "gpuvs.compare-1.schema.json")
    claims = load_schema(source, "gpuvs.claims-1.schema.json")
    ref = os.path.join(source, "data/reference")
    claims_file = os.path.join(source, "data/claims/a100-vs-h200-96gb-article.csv")
    failures = 0

    def run(args):
        return gpuvs_json(gpuvs, args)

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
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None,
                  sys.argv[3] if len(sys.argv) > 3 else None))
