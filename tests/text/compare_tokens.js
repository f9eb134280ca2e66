// Compares Tandem's ids with the reference's, record by record.
//   node compare_tokens.js corpus.b64 ref.jsonl tandem.jsonl LABEL
// Fails (exit 1) unless every record has identical ids and every record the reference round-trips
// also round-trips in Tandem. Prints the first mismatches with the text.
"use strict";
const fs = require("fs");
const [corpusPath, refPath, oursPath, label] = process.argv.slice(2);
const readLines = (p) => { const l = fs.readFileSync(p, "utf8").split("\n"); if (l[l.length - 1] === "") l.pop(); return l; };
const corpus = readLines(corpusPath), ref = readLines(refPath).map(JSON.parse), ours = readLines(oursPath).map(JSON.parse);
if (ref.length !== corpus.length || ours.length !== corpus.length) {
  console.error(`${label}: record counts differ: corpus ${corpus.length}, reference ${ref.length}, tandem ${ours.length}`);
  process.exit(1);
}
let same = 0, refRt = 0, rtOk = 0, shown = 0, nTokens = 0;
for (let i = 0; i < corpus.length; i++) {
  const a = ref[i].ids, b = ours[i].ids;
  nTokens += a.length;
  const eq = a.length === b.length && a.every((x, k) => x === b[k]);
  if (eq) same++;
  if (ref[i].rt) { refRt++; if (ours[i].rt) rtOk++; }
  if ((!eq || (ref[i].rt && !ours[i].rt)) && shown < 8) {
    shown++;
    let k = 0;
    while (k < a.length && k < b.length && a[k] === b[k]) k++;
    const text = Buffer.from(corpus[i], "base64").toString("utf8");
    console.error(`${label}: record ${i} ${eq ? "does not round-trip" : "differs at token " + k}: ${JSON.stringify(text.slice(0, 200))}`);
    console.error(`  reference: ${JSON.stringify(a.slice(Math.max(0, k - 3), k + 8))}`);
    console.error(`  tandem:    ${JSON.stringify(b.slice(Math.max(0, k - 3), k + 8))}`);
  }
}
const pct = (100 * same / corpus.length).toFixed(2);
console.log(`${label}: ${same}/${corpus.length} records identical (${pct}%), ${nTokens} reference tokens; ` +
  `round trip: ${rtOk}/${refRt} of the records the reference round-trips`);
process.exit(same === corpus.length && rtOk === refRt ? 0 : 1);
