#!/usr/bin/env bash
# Builds the grammar fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on GBNF and JSON Schema
# inputs. Usage: fuzz/run_grammar_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak or timeout (a hang past the grammar limits);
# the offending input is left in build-san/grammar-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_setup grammar grammar_fuzz
# Seeds: byte 0 = front end ('0' GBNF, '1' JSON Schema, '3' tools), then the text.
seed() { printf '%s%s' "$1" "$2" >"$SEEDS/$3"; }
seed 0 'root ::= "{\"action\":\"" ( "tap\",\"index\":" [0-9]+ | "back\"" ) "}"' action.gbnf
seed 0 'root ::= expr
expr ::= term (("+" | "-") term)*
term ::= [0-9]+ | "(" expr ")"' arith.gbnf
seed 0 'root ::= object
value ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\"" ws
number ::= "-"? [0-9]+ ("." [0-9]+)? ws
ws ::= [ \t\n]{0,4}' json.gbnf
seed 0 'root ::= [^\x00-\x1F]{2,5} <[12]> "é" . "日本"? ("a" | "b"){1,3}' misc.gbnf
seed 1 '{"type":"object","properties":{"action":{"const":"tap"},"index":{"type":"integer","minimum":0,"maximum":999}},"required":["action","index"]}' action.json
seed 1 '{"oneOf":[{"type":"string","maxLength":4},{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":3}],"$defs":{"n":{"type":"number"}}}' union.json
seed 1 '{"type":"string","pattern":"^[a-z]+(-[0-9]{2,3})?$"}' pattern.json
seed 1 '{"enum":["up","down",3,null,{"a":[1]}]}' enum.json
# '3': a chat request's tools (grammar/tool_grammar.h).
seed 3 '[{"type":"function","function":{"name":"tap","parameters":{"type":"object","properties":{"index":{"type":"integer","minimum":0,"maximum":99},"text":{"type":"string"},"mode":{"type":"string","enum":["a","b"]}},"required":["index"]}}},{"type":"function","function":{"name":"home"}}]' tools.json
# The suite's schemas, when Debian's json-schema-test-suite is installed: its newest draft folder
# (Debian 12's package stops at draft7; upstream has draft2019-09 and draft2020-12 too).
SUITE=
for d in draft2020-12 draft2019-09 draft7 draft6 draft4; do
  if [[ -d /usr/share/json-schema-test-suite/tests/$d ]]; then
    SUITE=/usr/share/json-schema-test-suite/tests/$d
    break
  fi
done
if [[ -n $SUITE ]]; then
  i=0
  for f in "$SUITE"/*.json; do
    python3 -c 'import json,sys
for k, g in enumerate(json.load(open(sys.argv[1]))):
    open(sys.argv[2] + "-%d" % k, "w").write("1" + json.dumps(g["schema"]))' "$f" "$SEEDS/suite-$(basename "$f" .json)" || true
    i=$((i + 1))
  done
  echo "seeded with $i files of the JSON-Schema-Test-Suite's $(basename "$SUITE")"
fi

echo "fuzzing the grammar engine for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
fuzz_run grammar_fuzz "$SECONDS_TO_RUN" 8192
