#!/usr/bin/python3
"""ctest docs_check_fails_on_stale: the docs check (scripts/check-docs.py) must fail on a document
that names a path, a program and a flag that do not exist, and pass on one that names real ones."""
import os
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
script = os.path.join(root, "scripts", "check-docs.py")


def run(text):
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=os.path.join(root, "docs"), delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([sys.executable, script, "--root", root, path], capture_output=True, text=True)
        return p.returncode, p.stdout
    finally:
        os.remove(path)


good = "Real ones: `serve/engine/engine.cpp:Engine::step`, `scripts/test.sh`, `tandem-server --spec on`.\n"
code, out = run(good)
assert code == 0, f"a document with real references failed:\n{out}"

# The stale names are assembled here, so that this file (one of the sources the check reads for
# names our code writes) does not hold them whole.
x = "zz"
names = (f"serve/no_such_{x}.cpp", f"tandem-no-such-{x}", f"--no-such-{x}", f"--not-a-flag-{x}")
stale = (f"Stale ones: `{names[0]}`, `{names[1]}`, `tandem-server {names[2]}`.\n"
         f"```\n./build/tandem-sim {names[3]}\n```\n")
code, out = run(stale)
assert code == 1, f"a stale document passed:\n{out}"
for needle in names:
    assert needle in out, f"{needle} not reported:\n{out}"
print("docs check: passes real references, reports all four stale ones")
