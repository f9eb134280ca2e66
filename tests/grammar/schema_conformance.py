#!/usr/bin/env python3
"""JSON Schema -> GBNF against an independent validator (python3-jsonschema) over the official
JSON-Schema-Test-Suite (Debian: json-schema-test-suite), through tandem-grammar's batch mode.

For every schema of the newest draft the suite has (remote $refs skipped), in three modes
(flexible: llama.cpp's SPACE_RULE; compact: no whitespace; declared: compact, declaration order):
  (a) random sentences of the grammar must validate;
  (b) every suite document the validator rejects must be rejected by the grammar (compact JSON
      text; under flexible also json.dumps' default spacing);
  (c) valid documents the grammar rejects are counted, not failed: the converter is stricter
      than JSON Schema by design (llama.cpp's semantics: key order, additionalProperties false,
      `{}` as an object, exact tuples, canonical literals, 16-digit numbers).
A schema whose conversion reported a warning (a keyword ignored) or that sits in EXCLUDED is
counted but not held to (a) and (b). Exits 1 on a violation in a held schema, 77 when the suite
or jsonschema is missing.

usage: schema_conformance.py PATH/TO/tandem-grammar [--samples N] [--verbose]
"""
import collections
import json
import os
import subprocess
import sys
import time

SUITE = "/usr/share/json-schema-test-suite/tests"
DRAFTS = [("draft2020-12", "Draft202012Validator"), ("draft2019-09", "Draft201909Validator"),
          ("draft7", "Draft7Validator")]

# flexible: llama.cpp's SPACE_RULE, required-first; compact: no whitespace, required-first;
# declared: no whitespace, declaration order (PropertyOrder::Declaration).
MODES = ("flexible", "compact", "declared")

# Files not held to (a) / (b), and why. Everything else the converter accepts is held, except
# schemas with warnings (their ignored keyword would make (a) / (b) fail by design).
EXCLUDED = {
    "oneOf.json": "oneOf is converted as anyOf, as llama.cpp does: exclusivity is not enforced",
    "refRemote.json": "remote references (no fetching)",
}


def has_remote_ref(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and not v.startswith("#"):
                return True
            if has_remote_ref(v):
                return True
    elif isinstance(node, list):
        return any(has_remote_ref(x) for x in node)
    return False


def compact(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    tool = args[0]
    n_samples = int(args[args.index("--samples") + 1]) if "--samples" in args else 30
    verbose = "--verbose" in args
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3-jsonschema is not installed")
        return 77
    draft = next(((d, v) for d, v in DRAFTS if os.path.isdir(os.path.join(SUITE, d))), None)
    if draft is None:
        print(f"SKIP: no JSON-Schema-Test-Suite under {SUITE}")
        return 77
    if not os.access(tool, os.X_OK):
        print(f"error: {tool} is not an executable")
        return 1
    draft_dir, validator_name = draft
    Validator = getattr(jsonschema, validator_name)
    files = sorted(f for f in os.listdir(os.path.join(SUITE, draft_dir)) if f.endswith(".json"))

    # One request per (schema, mode); answers come back in order.
    jobs, requests = [], []
    skipped_remote = 0
    for fname in files:
        with open(os.path.join(SUITE, draft_dir, fname), encoding="utf-8") as f:
            groups = json.load(f)
        for gi, group in enumerate(groups):
            schema = group["schema"]
            if has_remote_ref(schema):
                skipped_remote += 1
                continue
            tests = group["tests"]
            for mode in MODES:
                docs = [compact(t["data"]) for t in tests]
                if mode == "flexible":
                    docs += [json.dumps(t["data"]) for t in tests]
                jobs.append((fname, gi, group, mode))
                requests.append({"schema": schema, "compact": mode != "flexible",
                                 "declaration_order": mode == "declared", "docs": docs,
                                 "samples": n_samples, "seed": 1000 * gi + MODES.index(mode),
                                 "target": 40, "max_len": 2048})

    start = time.time()
    proc = subprocess.run([tool, "batch"], input="\n".join(json.dumps(r) for r in requests) + "\n",
                          capture_output=True, text=True, encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        print(f"error: {tool} batch exited {proc.returncode}\n{proc.stderr}")
        return 1
    answers = [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]
    if len(answers) != len(requests):
        print(f"error: {len(requests)} requests, {len(answers)} answers\n{proc.stderr}")
        return 1

    per_file = collections.OrderedDict()
    unsupported = collections.Counter()
    not_converted = collections.Counter()
    violations = []
    totals = collections.Counter()

    def stats(fname):
        return per_file.setdefault(fname, collections.Counter())

    for (fname, gi, group, mode), ans in zip(jobs, answers):
        st = stats(fname)
        st["schemas"] += 1
        where = f"{fname}[{gi}] {group['description']!r} ({mode})"
        if "error" in ans:
            st["not_converted"] += 1
            not_converted[ans["error"].split(": ", 1)[-1][:60]] += 1
            continue
        if "compile_error" in ans or "match_error" in ans:
            # The converter printed a grammar the parser or matcher refused: always a bug.
            violations.append(f"{where}: grammar refused: {ans.get('compile_error') or ans.get('match_error')}")
            st["violations"] += 1
            continue
        st["converted"] += 1
        warnings = ans.get("warnings", [])
        for w in warnings:
            if "unsupported keyword '" in w:
                unsupported[w.split("unsupported keyword '")[1].split("'")[0]] += 1
            else:
                unsupported[w.split(": ", 1)[-1]] += 1
        held = fname not in EXCLUDED and not warnings
        st["held" if held else "not_held"] += 1
        validator = Validator(group["schema"])
        tests = group["tests"]
        accept = ans["accept"]
        forms = [(t, accept[i], "compact") for i, t in enumerate(tests)]
        if mode == "flexible":
            forms += [(t, accept[len(tests) + i], "json.dumps") for i, t in enumerate(tests)]
        # (a) samples
        for s in ans.get("samples", []):
            st["samples"] += 1
            try:
                instance = json.loads(s)
            except ValueError:
                instance = ValueError
            try:
                ok = instance is not ValueError and validator.is_valid(instance)
            except (OverflowError, ValueError):  # e.g. 1e999 reads as inf: the oracle cannot judge
                st["samples_unjudged"] += 1
                continue
            if ok:
                st["samples_valid"] += 1
            elif held:
                violations.append(f"{where}: sample does not validate: {s!r}")
                st["violations"] += 1
        st["samples_dropped"] += ans.get("dropped", 0)
        # (b) / (c) suite documents, judged by the validator (not the suite's flag)
        for t, accepted, form in forms:
            valid = validator.is_valid(t["data"])
            if valid:
                st["valid_docs"] += 1
                st["valid_accepted"] += accepted
            else:
                st["invalid_docs"] += 1
                if not accepted:
                    st["invalid_rejected"] += 1
                elif held:
                    violations.append(f"{where}: accepts invalid {form} document {t['description']!r}: "
                                      f"{compact(t['data'])[:200]}")
                    st["violations"] += 1

    elapsed = time.time() - start
    cols = ["schemas", "converted", "held", "samples_valid", "samples", "invalid_rejected", "invalid_docs",
            "valid_accepted", "valid_docs", "violations"]
    print(f"JSON Schema conformance: {draft_dir} ({validator_name}), {n_samples} samples per schema and mode, "
          f"{elapsed:.1f} s")
    print(f"{'file':28s} {'schemas':>7s} {'conv':>5s} {'held':>5s} {'samples ok':>11s} "
          f"{'invalid rej':>12s} {'valid acc':>10s} {'viol':>5s}")
    for fname, st in per_file.items():
        for c in cols:
            totals[c] += st[c]
        print(f"{fname:28s} {st['schemas']:7d} {st['converted']:5d} {st['held']:5d} "
              f"{st['samples_valid']:5d}/{st['samples']:<5d} {st['invalid_rejected']:5d}/{st['invalid_docs']:<6d} "
              f"{st['valid_accepted']:4d}/{st['valid_docs']:<5d} {st['violations']:5d}"
              + (f"  (not held: {EXCLUDED[fname]})" if fname in EXCLUDED else ""))
    print(f"{'total':28s} {totals['schemas']:7d} {totals['converted']:5d} {totals['held']:5d} "
          f"{totals['samples_valid']:5d}/{totals['samples']:<5d} {totals['invalid_rejected']:5d}/{totals['invalid_docs']:<6d} "
          f"{totals['valid_accepted']:4d}/{totals['valid_docs']:<5d} {totals['violations']:5d}")
    print(f"(each schema counted once per mode: {', '.join(MODES)}; {skipped_remote} schemas with remote $ref skipped)")
    by_mode = collections.Counter()
    for (fname, gi, group, mode), ans in zip(jobs, answers):
        if "accept" in ans:
            by_mode[mode] += sum(ans["accept"][: len(group["tests"])])
    print("suite documents accepted (compact text) by mode: " + ", ".join(f"{m} {by_mode[m]}" for m in MODES))
    print("warnings (ignored keywords), schema x mode count: "
          + (", ".join(f"{k} {v}" for k, v in unsupported.most_common()) or "none"))
    print("not converted (GrammarError), count: " + (", ".join(f"{k!r} {v}" for k, v in not_converted.most_common())
                                                     or "none"))
    if violations:
        print(f"\n{len(violations)} violation(s):")
        for v in violations[: 50 if not verbose else len(violations)]:
            print("  " + v)
        return 1
    print("no violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
