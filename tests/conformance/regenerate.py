"""``make conformance``: ask the real Pulsar classes (and Java's own collections) for the answers the conformance
tests compare lb_pipeline with, and store them under ``tests/conformance/data/``.

    python -m tests.conformance.regenerate [--oracle ../shared/tools/pulsar-oracle] [--build .oracle]

Builds the oracle for each release (Maven, Java 17; the first build downloads ~300 jars), writes the generated
inputs to a temporary folder, runs one JVM per family and release, and keeps Pulsar's answers (gzipped JSON
lines, one per case, with a digest of the input so that a changed generator is caught instead of compared).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conformance.cases import COUNTS, shedder_case
from tests.conformance.cases_extensible import placement_case, transfer_case
from tests.conformance.cases_policies import policies_case, transfer_policies_case
from tests.conformance.cases_splits import hashing_case, split_case
from tests.conformance.cases_triggers import extensible_trigger_case, trigger_case
from tests.conformance.java_orders import java_order_inputs

HERE = Path(__file__).parent
DATA = HERE / "data"
RELEASES = ("4.0.8", "4.0.7")
GENERATORS = {"shedders": shedder_case, "placement": placement_case, "transfer": transfer_case, "splits": split_case,
              "hashing": hashing_case, "triggers": trigger_case, "extensible-triggers": extensible_trigger_case,
              "policies": policies_case, "transfer-policies": transfer_policies_case}
# families the oracle does not run (their classes take a live PulsarService): a harness of ours on its class path
HARNESSES = {**{family: HERE / "java" / "SplitTriggers.java" for family in ("triggers", "extensible-triggers")},
             "policies": HERE / "java" / "Policies.java", "transfer-policies": HERE / "java" / "Policies.java"}
# the only class in the load balancer that differs between 4.0.7 and 4.0.8 (decompiled and compared); the policy
# paths run on both all the same (their classes read the metadata store, which the comparison did not cover)
ONLY_AVG_SHEDDER_DIFFERS = {"4.0.7": lambda case: case.get("strategy") == "AvgShedder"
                            or case["name"].startswith(("conformance-policies-", "conformance-transfer-policies-"))}


def digest(case: dict) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()[:16]


def trim(result: dict) -> dict:
    """What the tests compare: the decisions and the effective configuration, not paths or warnings."""
    drop = {"family", "case_path", "warnings"}
    return {k: v for k, v in result.items() if k not in drop}


def build(oracle: Path, build_dir: Path, release: str) -> Path:
    target = (build_dir / release).resolve()
    jar = target / "pulsar-oracle.jar"
    if not jar.is_file():
        print(f"building the oracle for Pulsar {release} into {target} …", file=sys.stderr)
        subprocess.run(["mvn", "-q", "-f", str(oracle / "pom.xml"), "package", f"-Dpulsar.version={release}",
                        f"-Doracle.build.dir={target}"], check=True)
    return jar


def run_family(jar: Path, family: str, cases: list[dict], workdir: Path) -> dict[str, dict]:
    folder = workdir / family
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for case in cases:
        path = folder / f"{case['name']}.json"
        path.write_text(json.dumps(case))
        files.append(str(path))
    command = ["java", "-cp", str(jar), str(HARNESSES[family])] if family in HARNESSES else ["java", "-jar", str(jar), family]
    out = subprocess.run([*command, *files], check=True, capture_output=True, text=True).stdout
    return {r["case"]: r for r in map(json.loads, out.splitlines())}


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as f:  # no time stamp: the same answers are the same bytes
        f.write("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode("utf-8"))
    print(f"wrote {len(rows)} answers to {path}", file=sys.stderr)


def as_positions(kind: str, items: list[str], answer: str):
    """Java's answer as positions into the input (compact); an error stays a string."""
    fields = answer.split("\t")[1:]
    if fields[:1] == ["ERROR"]:
        return "ERROR: " + fields[1]
    if kind == "int-sort":
        return [int(x) for x in fields]
    groups, group = [], []
    for f in fields + [""]:
        if f:
            group.append(items.index(f))
        else:
            groups.append(group)
            group = []
    return groups if kind == "hashmap-reused" else groups[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", default=str(HERE.parents[2] / "shared" / "tools" / "pulsar-oracle"))
    ap.add_argument("--build", default=".oracle", help="where the oracle builds go (outside the read-only tool)")
    ap.add_argument("--family", action="append", choices=[*GENERATORS, "java-orders"],
                    help="only this family (repeatable; default: all): Pulsar's random picks differ between "
                         "runs, so regenerating a family whose inputs did not change only churns its data")
    args = ap.parse_args()
    oracle = Path(args.oracle)
    if not (oracle / "pom.xml").is_file():
        print(f"no pulsar-oracle at {oracle.resolve()} (no pom.xml there): give the folder of the pulsar-oracle tool, "
              f"`make conformance ORACLE=/path/to/pulsar-oracle` or `--oracle /path/to/pulsar-oracle`", file=sys.stderr)
        return 2
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            print(f"{tool} is needed to regenerate the conformance data", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        for release in RELEASES:
            jar = build(oracle, Path(args.build), release)
            for family, make in GENERATORS.items():
                if args.family and family not in args.family:
                    continue
                cases = [make(i) for i in range(COUNTS[family])]
                if release in ONLY_AVG_SHEDDER_DIFFERS:
                    cases = [c for c in cases if ONLY_AVG_SHEDDER_DIFFERS[release](c)]
                if not cases:
                    continue
                answers = run_family(jar, family, cases, Path(tmp) / release)
                rows = [{"case": c["name"], "input": digest(c), "pulsar": trim(answers[c["name"]])} for c in cases]
                write(DATA / f"{family}-{release}.jsonl.gz", rows)
        if args.family and "java-orders" not in args.family:
            return 0
        inputs = java_order_inputs()
        text = "".join("\t".join(line) + "\n" for line in inputs)
        out = subprocess.run(["java", str(HERE / "java" / "JavaOrders.java")], input=text, check=True,
                             capture_output=True, text=True).stdout
        rows = [{"case": line[0], "kind": line[1], "input": digest(line), "java": as_positions(line[1], line[2:], o)}
                for line, o in zip(inputs, out.splitlines())]
        write(DATA / "java-orders.jsonl.gz", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
