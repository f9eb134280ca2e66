#!/usr/bin/python3
"""The include-rule check (CI, ctest include_rules): which folder of src/ may include which.

  scripts/check-includes.py [--root DIR] [FILE ...]     (default: every source under src/)

The layers, lowest first (docs/architecture.md): a folder may include itself and the folders its
rule lists, nothing above. Test code (`*_test.cpp`, `*_test_util.h`, the test vocabularies) may
also include the test support (the generated-model writers and the tests' model cache) and what
its folder's TEST_EXTRA row lists. Prints every include that breaks a rule as FILE:LINE and exits
1 if there is any.
"""
import argparse
import os
import re
import sys

# folder -> the folders its library code may include (besides itself).
RULES = {
    "runtime": [],
    "gguf": [],
    "kernels": ["gguf", "runtime"],
    "text": ["gguf"],
    "hexagon": ["kernels", "gguf", "runtime"],  # the host's transport and the DSP side's op server
    "model": ["kernels", "gguf", "runtime"],
    "grammar": ["text", "gguf"],
    "vision": ["model", "kernels", "gguf", "runtime", "text"],
    "serve": ["model", "kernels", "gguf", "runtime", "text", "grammar", "vision"],
    "http": ["serve", "model", "kernels", "gguf", "runtime", "text", "grammar", "vision"],
    "agent": ["serve", "model", "kernels", "gguf", "runtime", "text", "grammar", "vision"],
}
# The offline writers of model files and the tests' helpers (tandem_model_gen, tandem_test_support,
# tandem_vision_gen): test code anywhere may use them; the model generator itself writes chat
# templates (text/).
TEST_SUPPORT = {
    "model/test_models.h", "model/test_paths.h", "model/test_support.h", "model/qwen35/qwen35_generator.h", "model/hybrid_generator.h",
    "model/tensor_encoder.h", "model/draft_vocab.h", "vision/vision_generator.h", "text/test_vocab.h",
    "grammar/grammar_test_vocab.h",
}
GENERATOR_FILES = {"model/hybrid_generator.cpp": ["text"], "model/qwen35/qwen35_generator.cpp": ["text"],
                   "model/qwen35/trained_weights.cpp": ["text"],
                   # the tests' shared helpers load the tiny model with its tokenizer, template and mmproj
                   "model/test_support.h": ["text", "vision"]}
# Test code's extra rights (none today: the tests that run the replay model beside the HTTP server
# live above both, in tests/replay/).
TEST_EXTRA = {}


def is_test(rel):
    base = os.path.basename(rel)
    return (base.endswith("_test.cpp") or base.endswith("_test_util.h") or base.endswith("_test_vocab.h")
            or base == "test_vocab.h" or rel.startswith("model/test_"))


def folder_of(rel):
    return rel.split("/")[0]


def check_file(path, rel):
    problems = []
    folder = folder_of(rel)
    if folder not in RULES:
        return problems
    allowed = set(RULES[folder]) | {folder} | set(GENERATOR_FILES.get(rel, []))
    test = is_test(rel)
    if test:
        allowed |= set(TEST_EXTRA.get(folder, []))
    with open(path, encoding="utf-8", errors="replace") as fh:
        for no, line in enumerate(fh, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            target = folder_of(inc)
            if target not in RULES or target in allowed:
                continue
            if test and inc in TEST_SUPPORT:
                continue
            problems.append(f"src/{rel}:{no}: {folder}/ {'test code ' if test else ''}includes \"{inc}\": "
                            f"{folder}/ may include {', '.join(sorted(allowed - {folder})) or 'no other folder'}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("files", nargs="*", help="files to check, as paths under --root's src/")
    a = ap.parse_args()
    src = os.path.join(os.path.abspath(a.root), "src")
    files = []
    if a.files:
        files = [os.path.abspath(f) for f in a.files]
    else:
        for dirpath, _, names in os.walk(src):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".cpp", ".h"))]
    problems = []
    for f in sorted(files):
        problems += check_file(f, os.path.relpath(f, src))
    for p in problems:
        print(p)
    if problems:
        print(f"FAILED: {len(problems)} include(s) break the folders' rules (scripts/check-includes.py)")
        return 1
    print(f"include rules: {len(files)} files, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
