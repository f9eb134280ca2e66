#!/usr/bin/python3
"""A static cost of the HVX products (issue 53, item 4): the packets clang-14 emitted for the
kernel's loops, read from llvm-objdump-14's disassembly of the DSP build's object. Not a timing:
packets are what one Hexagon thread issues, one per cycle at best, up to four instructions each.

  scripts/hexagon-static-cost.py [build-hexagon]

Prints each hardware loop of hvx::matmul_columns (its own packets, its trip count when the compiler
fixed it, its packets per iteration with the loops inside it, what its body holds) and the packets
per 32-weight block and column for a group of 32 rows.
"""
import glob
import os
import re
import subprocess
import sys

FUNC = "_ZN6tandem7kernels3hvx14matmul_columns"
KINDS = ["vrmpy", "vsplat", "vmem", "vand", "vlsr", "convert_w2sf", "sfmpy", "sfadd", "memw", "memd"]


def disassemble(build):
    objs = glob.glob(os.path.join(build, "**", "matmul_hvx.cpp.obj"), recursive=True)
    if not objs:
        sys.exit(f"no matmul_hvx.cpp.obj under {build}: build the DSP side first (docs/hexagon.md)")
    out = subprocess.run(["llvm-objdump-14", "-d", "--no-show-raw-insn", "--mcpu=hexagonv67",
                          "--mattr=+hvxv67,+hvx-length128b", objs[0]], check=True, capture_output=True, text=True).stdout
    body = out[out.index(f"<{FUNC}"):]
    nxt = body.find(">:\n", len(FUNC) + 5)
    return body.splitlines()[1:] if nxt < 0 else body[:body.rfind("\n", 0, nxt)].splitlines()[1:]


def packets(lines):
    """[(address, [instructions], endloop kind or None)]"""
    result, cur, addr = [], [], None
    for line in lines:
        m = re.match(r"\s*([0-9a-f]+):\s*(\{)?\s*(.*)$", line)
        if not m:
            continue
        a, opening, text = int(m.group(1), 16), m.group(2), m.group(3)
        if opening or addr is None:
            cur, addr = [], a
        end = re.search(r"\}\s*(:endloop(\d))?", text)
        cur += [t.strip() for t in re.sub(r"\}.*$", "", text).split(";") if t.strip()]
        if end:
            result.append((addr, cur, end.group(2)))
            addr = None
    return result


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build-hexagon"
    ps = packets(disassemble(build))
    loops = []  # (start, end, kind, trip)
    for a, insns, _ in ps:
        for i in insns:
            m = re.match(r"loop(\d)\(0x([0-9a-f]+),\s*(#?)(\w+)\)", i)
            if m:
                start = int(m.group(2), 16)
                end = next(pa for pa, _, e in ps if pa >= start and e == m.group(1))
                loops.append((start, end, m.group(1), int(m.group(4)) if m.group(3) else None))
    print(f"{'loop':<22} {'own':>4} {'trip':>5} {'total':>6}  what the body holds")
    total = {}
    for start, end, kind, trip in sorted(loops, key=lambda l: l[1] - l[0]):  # inner loops first
        nested = [l for l in loops if l != (start, end, kind, trip) and start <= l[0] and l[1] <= end]
        own = [p for p in ps if start <= p[0] <= end and not any(n[0] <= p[0] <= n[1] for n in nested)]
        # a nested loop of unknown trip count counts once
        total[start] = len(own) + sum(total[n[0]] * (n[3] or 1) for n in nested)
        inner = [p for p in ps if start <= p[0] <= end]
        counts = {k: sum(1 for _, insns, _ in inner for i in insns if re.search(rf"\b{k}\b", i)) for k in KINDS}
        held = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        print(f"loop{kind} {start:#06x}..{end:#06x}  {len(own):>4} {trip if trip else '-':>5} {total[start]:>6}  {held}")
    # The loop over the columns is the one whose body holds the vrmpy chain: one iteration is one
    # block of one column for 32 rows.
    holding = [l for l in loops if any(l[0] <= a <= l[1] and any("vrmpy" in i for i in insns) for a, insns, _ in ps)]
    if not holding:
        sys.exit("no hardware loop holds a vrmpy: was the object built with the toolchain's -O2?")
    column = min(holding, key=lambda l: l[1] - l[0])
    print(f"per 32-weight block, per column, for 32 rows: {total[column[0]]} packets "
          f"({total[column[0]] / 32:.2f} per block of one row)")

if __name__ == "__main__":
    main()
