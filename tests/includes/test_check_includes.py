#!/usr/bin/python3
"""ctest include_rules_fails_on_breach: the include-rule check (scripts/check-includes.py) must fail
on a source that includes a folder its layer may not (library code or test code), and pass on one
whose includes its rules allow."""
import os
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
script = os.path.join(root, "scripts", "check-includes.py")


def run(folder, suffix, text):
    """Writes `text` to a temporary file under src/<folder>/, checks it alone, removes it."""
    with tempfile.NamedTemporaryFile("w", prefix="zz_include_probe_", suffix=suffix,
                                     dir=os.path.join(root, "src", folder), delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([sys.executable, script, "--root", root, path], capture_output=True, text=True)
        return p.returncode, p.stdout, os.path.relpath(path, os.path.join(root, "src"))
    finally:
        os.remove(path)


# Allowed: serve/ over the model and the text layer; a serve/ test over the test support.
for folder, suffix, text in (("serve", ".cpp", '#include "model/hybrid_model.h"\n#include "text/tokenizer.h"\n'),
                             ("serve", "_test.cpp", '#include "model/test_support.h"\n')):
    code, out, rel = run(folder, suffix, text)
    assert code == 0, f"{rel}: allowed includes were refused:\n{out}"

# Broken rules: a lower layer including an upper one (library code and test code), and agent/
# including http/ (library code and test code: the tests that need both live in tests/replay/).
for folder, suffix, inc in (("text", ".cpp", "serve/engine/engine.h"),
                            ("serve", ".h", "http/api/request_parse.h"),
                            ("agent", ".cpp", "http/api/request_parse.h"),
                            ("agent", "_test.cpp", "http/routes/server.h"),
                            ("gguf", "_test.cpp", "model/hybrid_model.h")):
    code, out, rel = run(folder, suffix, f'#include <string>\n\n#include "{inc}"\n')
    assert code == 1, f"{rel} includes {inc} and passed:\n{out}"
    assert f"src/{rel}:3:" in out and inc in out, f"{rel}: the breach is not named with its line:\n{out}"
print("include rules: pass allowed includes, report each of five breaches with its file and line")
