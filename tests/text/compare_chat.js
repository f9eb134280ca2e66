// Compares Tandem's chat rendering with the Jinja reference.
//   node compare_chat.js cases.json ref.json tandem.json LABEL
// A case passes when both render the same text, or both reject it. Tandem's message_starts must
// have one non-decreasing entry per message.
"use strict";
const fs = require("fs");
const [casesPath, refPath, oursPath, label] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const ref = JSON.parse(fs.readFileSync(refPath, "utf8"));
const ours = JSON.parse(fs.readFileSync(oursPath, "utf8"));
let ok = 0, rendered = 0, rejected = 0, shown = 0;
for (let i = 0; i < cases.length; i++) {
  const r = ref[i], t = ours[i];
  let pass;
  if (r.error !== undefined) {
    pass = t.error !== undefined;
    if (pass) rejected++;
  } else {
    const starts = t.message_starts || [];
    const monotonic = starts.every((s, k) => k === 0 || s >= starts[k - 1]);
    pass = t.text === r.text && starts.length === cases[i].messages.length && monotonic;
    if (pass) rendered++;
  }
  if (pass) ok++;
  else if (shown++ < 5) {
    console.error(`${label}: case ${i} differs: ${JSON.stringify(cases[i]).slice(0, 300)}`);
    console.error(`  reference: ${JSON.stringify(r).slice(0, 600)}`);
    console.error(`  tandem:    ${JSON.stringify(t).slice(0, 600)}`);
  }
}
console.log(`${label}: ${ok}/${cases.length} chat cases identical (${rendered} rendered, ${rejected} rejected by both)`);
process.exit(ok === cases.length ? 0 : 1);
