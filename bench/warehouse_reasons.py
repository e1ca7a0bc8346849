"""How many joins of generated warehouse queries (tests/py/whquery.py) skewjoin plans, and why it
leaves the others as written: `skewjoin rewrite` on each seed (no engine runs), every join
counted once, each reason by its kind (its sentence with names and figures taken out).

    python bench/warehouse_reasons.py [--seeds 1000] [--bin target/debug/skewjoin] [--folder DIR]

The reasons that mean "the tool could not follow the query" (a key it cannot trace, keys of two
tables, a cross join, a join it cannot count through) are marked `untraced`; the others are
decisions on measured data (nothing hot, Spark broadcasts a side, not faster)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "py"))
import whquery  # noqa: E402
from randquery import args_of  # noqa: E402

# Reason codes that mean the tool did not follow the query; for a binary from before the codes
# (the "before" run), fragments of their sentences.
UNTRACED_CODES = {"keys_from_two_tables", "comma_no_equality", "non_equi", "chain_untraced", "key_expression",
                  "input_before_untraced", "none_movable"}
UNTRACED = ["come from two tables", "a cross join", "non-equi", "cannot be traced", "is an expression",
            "not a traced table", "not a table or a subquery", "cannot trace", "no safe strategy", "none can be moved"]


def kind(reason):
    """The reason without names, numbers or quoted values."""
    r = re.sub(r"'[^']*'|`[^`]*`", "'?'", reason)
    r = re.sub(r"\b\d[\d,.]*\s*(KB|MB|B|rows|x|s)?\b", "N", r)
    r = re.sub(r"\b(__sjp?\d+|[a-z]{1,2}\+[a-z+]+)\b", "INPUT", r)
    return r.split(":")[0].strip()[:90]


def one(binary, case, tabs, tmp):
    q = os.path.join(tmp, f"q{case.seed}.sql")
    with open(q, "w") as f:
        f.write(case.sql)
    legacy = ["--conf", "spark.sql.adaptive.enabled=false", "--min-gain", "off"]
    p = subprocess.run([binary, "rewrite", *legacy, q, "-q", "--format", "json", "--threads", "1", *args_of(case, tabs)],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return case, None, p.stderr.strip()
    return case, json.loads(p.stdout), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--bin", default="target/debug/skewjoin")
    ap.add_argument("--folder", default=None)
    a = ap.parse_args()
    folder = a.folder or tempfile.mkdtemp(prefix="whreasons-")
    groups = whquery.Group(folder)
    cases = [(whquery.query(s, groups(s)), groups(s)) for s in range(a.seeds)]
    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda ct: one(a.bin, ct[0], ct[1], folder), cases))
    joins, reasons, failed, estimated = Counter(), Counter(), [], Counter()
    for case, rw, err in results:
        if rw is None:
            failed.append((case.seed, err[:200]))
            continue
        joins["rewritten"] += len(rw["changes"])
        for c in rw["changes"]:
            for n in c["notes"]:
                m = re.search(r"the counts do not follow the joins: ([^)]*)\)", n)
                if m:
                    estimated[kind(m.group(1))] += 1
        for u in rw["unchanged_joins"]:
            if "code" in u:
                k = u["code"]
                untraced = k in UNTRACED_CODES or k.startswith(("left_input_", "right_input_"))
            else:
                k = kind(u["reason"])
                untraced = any(f in u["reason"] for f in UNTRACED)
            joins["untraced" if untraced else "left (measured)"] += 1
            reasons[("untraced " if untraced else "measured ") + k] += 1
    total = sum(joins.values())
    print(f"{a.seeds} queries, {total} joins: " + ", ".join(f"{k} {v} ({v / max(total, 1):.1%})" for k, v in joins.most_common()))
    for r, n in reasons.most_common():
        print(f"  {n:5d} {n / max(total, 1):6.1%}  {r}")
    if estimated:
        print(f"rewritten joins counted on the key's base table (the counts did not follow the joins before): {sum(estimated.values())}")
        for r, n in estimated.most_common():
            print(f"  {n:5d}  {r}")
    if failed:
        print(f"{len(failed)} rewrites failed, e.g. seed {failed[0][0]}: {failed[0][1]}")


if __name__ == "__main__":
    main()
