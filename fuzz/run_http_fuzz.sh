#!/usr/bin/env bash
# Builds the HTTP fuzzer (clang, libFuzzer + ASan + UBSan) and runs it on raw request bytes
# (framing included) against an in-process server over the tiny generated model: the framer, the
# Host/Origin/Content-Type guard, the router and every route's handler (fuzz/http_fuzz.cpp).
# Usage: fuzz/run_http_fuzz.sh [seconds=60]
# Exits non-zero on any crash, sanitizer report, leak, timeout or 5xx answer (other than 501, 503,
# 505); the input is left in build-san/http-artifacts/.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_setup http http_fuzz
# Seeds: one request per file (some pipelined), each route and each framing shape.
seed() { printf '%b' "$2" >"$SEEDS/$1"; }
H='Host: 127.0.0.1\r\n'
J='Content-Type: application/json\r\n'
body() { printf 'Content-Length: %d\\r\\n\\r\\n%s' "${#1}" "$1"; }
seed health "GET /health HTTP/1.1\r\n${H}\r\n"
seed props "GET /props HTTP/1.1\r\n${H}\r\nGET /slots HTTP/1.1\r\n${H}\r\nGET /metrics HTTP/1.1\r\n${H}\r\nGET /v1/models HTTP/1.1\r\n${H}\r\n"
seed chat "POST /v1/chat/completions HTTP/1.1\r\n${H}${J}$(body '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0}')"
seed chat-stream "POST /v1/chat/completions HTTP/1.1\r\n${H}${J}$(body '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2}')"
seed chat-tools "POST /chat/completions HTTP/1.1\r\n${H}${J}$(body '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"max_tokens":2}')"
seed completion "POST /completion HTTP/1.1\r\n${H}${J}$(body '{"prompt":"<|im_start|>user hi<|im_end|>","n_predict":2,"n_probs":2,"seed":7,"stop":["x"]}')"
seed completion-ids "POST /completions HTTP/1.1\r\n${H}${J}$(body '{"prompt":[1,2,"three",4],"n_predict":1,"stream":true}')"
seed grammar "POST /completion HTTP/1.1\r\n${H}${J}$(body '{"prompt":"a","n_predict":4,"json_schema":{"type":"object","properties":{"a":{"type":"integer"}}}}')"
seed tokenize-chunked "POST /tokenize HTTP/1.1\r\n${H}${J}Transfer-Encoding: chunked\r\n\r\n9\r\n{\"content\r\n12\r\n\":\"hello\",\"with_pi\r\nf;ext=1\r\neces\":true}    \r\n0\r\nX-T: 1\r\n\r\n"
seed detokenize "POST /detokenize HTTP/1.1\r\n${H}${J}$(body '{"tokens":[72,101,108]}')"
seed props-post "POST /props HTTP/1.1\r\n${H}${J}$(body '{"checkpoint_policy":"stock","min_gap":3,"consolidate_batches":"on","timeout_ms":1000}')"
seed slots "POST /slots/0?action=erase HTTP/1.1\r\n${H}\r\nPOST /slots/0?action=save HTTP/1.1\r\n${H}${J}$(body '{"filename":"a.bin"}')"
seed continue "POST /tokenize HTTP/1.1\r\n${H}${J}Expect: 100-continue\r\n$(body '{"content":"x"}')"
seed http10 "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /health HTTP/1.0\r\n\r\n"
seed bad-cl "POST /tokenize HTTP/1.1\r\n${H}${J}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x"
seed bad-te "POST /tokenize HTTP/1.1\r\n${H}${J}Transfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}"
seed overflow "POST /v1/chat/completions HTTP/1.1\r\n${H}${J}$(body '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"temperature":1e400}')"
seed guard "POST /tokenize HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\n$(body '{"content":"x"}')"

echo "fuzzing the HTTP request path for ${SECONDS_TO_RUN}s (corpus $CORPUS, seeds $SEEDS)"
fuzz_run http_fuzz "$SECONDS_TO_RUN" 16384 20 2560
