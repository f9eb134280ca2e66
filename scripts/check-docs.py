#!/usr/bin/python3
"""The docs check (CI, ctest docs_check): what README.md and docs/*.md name must exist.

  scripts/check-docs.py [--root DIR] [FILE.md ...]     (default: README.md and docs/*.md)

Checked, in backticks (inline spans and fenced blocks):
  * repository paths: a span token with a folder (`serve/engine/engine.cpp`, `scripts/test.sh`) or a file
    extension (`ssm_avx512.cpp`), optionally followed by `:symbol`. A path with a folder must exist
    from the repository root, from src/ (the docs write `serve/engine/engine.cpp` for src/serve/...), or
    from the document's folder; a bare file name must be the name of a file somewhere in the tree.
    Either may instead be a name our own code writes (a string literal in the sources, such as a
    report's `summary.md`). Not paths: routes and absolute paths (`/metrics`), URLs, globs and
    placeholders (`*`, `{`, `<`, `$`), the build tree (`build/...`) and ../shared.
  * programs: every `tandem-*` name is a tool (tools/tandem-*.cpp) or a script of ours.
  * command-line flags: every `--flag` is one our code reads (a string literal "--flag..." in
    src/, tools/, bench/, scripts/, fuzz/ or tests/), or one of the other programs' flags listed in
    FOREIGN_FLAGS below with the program it belongs to.
Prints every stale reference as FILE:LINE: what, and exits 1 if there is any.
"""
import argparse
import os
import re
import sys

EXTENSIONS = (".cpp", ".h", ".hpp", ".md", ".sh", ".py", ".json", ".jsonl", ".conf", ".js", ".cmake", ".txt",
              ".gp", ".csv", ".png", ".gguf", ".gbnf")
# Bare names with these extensions are example or output files (a model, a plot, a report).
OUTPUT_EXTENSIONS = (".gguf", ".png", ".csv", ".jsonl", ".gp", ".f32")
SOURCE_DIRS = ("src", "tools", "bench", "scripts", "fuzz", "tests", "cmake")
SOURCE_EXT = (".cpp", ".h", ".sh", ".py", ".js", ".cmake", ".txt")
# Flags of programs that are not ours, which the docs name when they say how to run them.
FOREIGN_FLAGS = {
    "--gtest_filter": "GoogleTest", "--gtest_brief": "GoogleTest", "--gtest_also_run_disabled_tests": "GoogleTest",
    "--test-dir": "ctest", "--output-on-failure": "ctest", "--target": "cmake", "--build": "cmake",
    "--jinja": "llama-server", "--mmproj": "llama.cpp", "--ctx-size": "llama.cpp", "--threads": "llama.cpp",
    "--no-audit": "npm", "--no-fund": "npm", "--loglevel": "npm", "--force": "git", "--follow": "git",
    "--add-architecture": "dpkg", "--print-foreign-architectures": "dpkg", "--tool": "valgrind",
    "--help": "(every program)", "--version": "(every program)", "--cpu": "qemu",
    "--headless": "chromium", "--no-sandbox": "chromium",
    "--unix-socket": "curl", "--data-binary": "curl", "--header": "curl", "--max-time": "curl", "--no-buffer": "curl",
}


def code_spans(text):
    """(line number, span text) for inline spans and fenced blocks."""
    out = []
    in_fence = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            out.append((no, line, True))
            continue
        for m in re.finditer(r"`([^`]+)`", line):
            out.append((no, m.group(1), False))
    return out


def source_literals(root):
    """Every double-quoted string literal (and shell word) of the sources, for names our code writes."""
    blob = []
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                if f.endswith(SOURCE_EXT) or f in ("CMakeLists.txt",):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        blob.append(fh.read())
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as fh:
        blob.append(fh.read())
    return "\n".join(blob)


def tree_files(root):
    names, paths = set(), set()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build") and d != "node_modules"]
        for f in files:
            names.add(f)
            paths.add(os.path.relpath(os.path.join(dirpath, f), root))
        for d in dirs:
            paths.add(os.path.relpath(os.path.join(dirpath, d), root))
    return names, paths


def path_exists(token, doc_dir, root, paths):
    t = token.rstrip("/")
    for base in ("", "src", os.path.relpath(doc_dir, root)):
        p = os.path.normpath(os.path.join(base, t))
        if p in paths or os.path.exists(os.path.join(root, p)):
            return True
    return False


def check(root, files):
    literals = source_literals(root)
    names, paths = tree_files(root)
    top_dirs = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")}
    top_dirs |= {d for d in os.listdir(os.path.join(root, "src")) if os.path.isdir(os.path.join(root, "src", d))}
    tools = {os.path.splitext(f)[0] for f in os.listdir(os.path.join(root, "tools")) if f.startswith("tandem-")}
    problems = []
    for md in files:
        doc_dir = os.path.dirname(os.path.abspath(md))
        with open(md, encoding="utf-8") as fh:
            text = fh.read()
        rel = os.path.relpath(md, root)
        for no, span, fenced in code_spans(text):
            for prog in re.findall(r"(?<![\w/.-])(tandem-[a-z0-9]+(?:-[a-z0-9]+)*)", span):
                if prog.endswith("-"):
                    continue
                if prog not in tools and f'"{prog}' not in literals:
                    problems.append(f"{rel}:{no}: program `{prog}` is not a tool of tools/")
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*[a-z0-9])", span):
                if flag in FOREIGN_FLAGS:
                    continue
                if f'"{flag}' not in literals and f"'{flag}" not in literals and f" {flag}" not in literals:
                    problems.append(f"{rel}:{no}: flag `{flag}` is read by none of our programs or scripts")
            if fenced:
                continue
            for token in span.split():
                token = token.strip(",;()[]\"'")
                token = re.sub(r":[A-Za-z_~][\w:~<>,]*(\(.*)?$", "", token)  # file.cpp:Symbol
                if not token or token.startswith(("/", "http", "../shared", "build", "~", "@", "-", ".")):
                    continue
                if any(c in token for c in "*{}<>$|=…") or "..." in token:
                    continue
                has_dir = "/" in token
                if not has_dir and not token.endswith(EXTENSIONS):
                    continue
                if not re.fullmatch(r"[\w./+-]+", token) or "/." in token:
                    continue
                if has_dir and token.split("/")[0] not in top_dirs:
                    continue  # not one of our folders: another project's path (llama.cpp's common/...), a ratio
                if not has_dir and (token.endswith(OUTPUT_EXTENSIONS) or re.match(r"(foo|bar|[A-Z]+)\b", token)):
                    continue  # an example or output file name (`mmproj.gguf`, `foo.cpp`, `MODEL-draft.gguf`)
                if has_dir:
                    ok = path_exists(token, doc_dir, root, paths)
                else:
                    ok = token in names
                if not ok and (f'"{token}' in literals or f"/{token}" in literals or f" {token}" in literals):
                    ok = True  # a name our code writes
                if not ok:
                    problems.append(f"{rel}:{no}: path `{token}` does not exist")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = a.files or [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    problems = check(root, files)
    for p in problems:
        print(p)
    if problems:
        print(f"FAILED: {len(problems)} stale reference(s) in the docs")
        return 1
    print(f"docs check: {len(files)} files, no stale reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
