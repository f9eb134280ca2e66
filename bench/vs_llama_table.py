#!/usr/bin/python3
"""The table of bench/vs-llama.sh: reads its raw outputs in DIR and prints one line per headline row
(ours, llama.cpp's, the ratio ours / llama.cpp's: below 1 is faster for times)."""
import csv
import json
import os
import re
import statistics
import sys


def llama_bench(path):
    """Best prefill and decode of llama-bench's JSONL rounds: (prefill ms for 512, decode ms/token)."""
    pp, tg = [], []
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        per = [ns / 1e6 for ns in r["samples_ns"]]
        if r["n_prompt"] > 0 and r["n_gen"] == 0:
            pp.append(min(per))
        elif r["n_gen"] > 0 and r["n_prompt"] == 0:
            tg += [ms / r["n_gen"] for ms in per]
    return min(pp), min(tg)


def tandem_bench(path):
    pp, tg = [], []
    for line in open(path):
        m = re.match(r"\| prefill \d+ tok \| ([\d.]+) ms", line)
        if m:
            pp.append(float(m.group(1)))
        m = re.match(r"\| decode \| ([\d.]+) ms/token", line)
        if m:
            tg.append(float(m.group(1)))
    return min(pp), min(tg)


def steps(path, screenshot=None):
    """Per configuration: (mean latency ms, stdev, steps, mean generated tokens)."""
    by = {}
    for r in csv.DictReader(open(path)):
        if screenshot is not None and int(r["screenshot"]) != screenshot:
            continue
        by.setdefault(r["config"], []).append((float(r["latency_ms"]), float(r["predicted_n"])))
    out = {}
    for k, v in by.items():
        lat = [x for x, _ in v]
        out[k] = (statistics.mean(lat), statistics.stdev(lat) if len(lat) > 1 else 0.0, len(lat),
                  statistics.mean(n for _, n in v))
    return out


def main(d):
    rows = []
    lp, ld = llama_bench(os.path.join(d, "llama-bench.jsonl"))
    tp, td = tandem_bench(os.path.join(d, "tandem-bench.txt"))
    rows.append(("prefill 512 tokens, 0.8B-shape Q4_0 (best round)", "%.0f ms (%.0f tok/s)" % (tp, 512e3 / tp),
                 "%.0f ms (%.0f tok/s)" % (lp, 512e3 / lp), tp / lp, "throughput %.2fx llama.cpp's" % (lp / tp)))
    rows.append(("decode, 0.8B-shape Q4_0 (best round)", "%.2f ms/token" % td, "%.2f ms/token" % ld, td / ld, ""))
    for name, path, shot in (("text step (paper trace, 61 requests)", "text/steps.csv", None),
                             ("screenshot step (720x1560 screen)", "shots/steps.csv", 1)):
        p = os.path.join(d, path)
        if not os.path.exists(p):
            continue
        s = steps(p, shot)
        t, l = s.get("tandem"), s.get("llama.cpp")
        if not t or not l:
            continue
        rows.append((name, "%.0f ± %.0f ms" % (t[0], t[1]), "%.0f ± %.0f ms" % (l[0], l[1]), t[0] / l[0],
                     "%d steps; generated tokens per step %.1f vs %.1f" % (t[2], t[3], l[3])))
    print("| row | Tandem | llama.cpp | ratio | conditions |")
    print("|---|---|---|---|---|")
    for name, a, b, r, c in rows:
        print("| %s | %s | %s | %.2f× | %s |" % (name, a, b, r, c))


if __name__ == "__main__":
    main(sys.argv[1])
