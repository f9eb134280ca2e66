// Renders chat cases with the Jinja engine of Hugging Face's JavaScript stack (@huggingface/jinja).
//   node reference_chat.js template.jinja cases.json > ref.json
// Prints a JSON array: {"text": ...} or {"error": message} per case.
"use strict";
const fs = require("fs");
const { Template, Environment } = require("@huggingface/jinja");

// Compatibility shim. Chat templates are Python Jinja2 (transformers renders them with Python
// str methods); @huggingface/jinja 0.5.x ignores the argument of strip/lstrip/rstrip and strips
// all whitespace, so `" appears".lstrip('\n')` loses its space. Give its string values Python's
// str.strip([chars]) semantics; everything else is the engine as published.
(function patchStripMethods() {
  const env = new Environment();
  env.set("probe", "x");
  const StringValue = env.lookupVariable("probe").constructor;
  const desc = Object.getOwnPropertyDescriptor(StringValue.prototype, "builtins");
  const pyStrip = (s, chars, left, right) => {
    const set = chars === undefined ? null : new Set(Array.from(chars));
    const strip = (c) => (set ? set.has(c) : /\s/u.test(c));
    const cs = Array.from(s);
    let b = 0, e = cs.length;
    if (left) while (b < e && strip(cs[b])) b++;
    if (right) while (e > b && strip(cs[e - 1])) e--;
    return cs.slice(b, e).join("");
  };
  Object.defineProperty(StringValue.prototype, "builtins", {
    configurable: true,
    get() {
      const map = desc.get.call(this);
      if (!map.__pyStrip) {
        const FunctionValue = map.get("strip").constructor;
        const self = this;
        const mk = (l, r) => new FunctionValue((args) => new StringValue(pyStrip(self.value, args.length ? args[0].value : undefined, l, r)));
        map.set("strip", mk(true, true));
        map.set("lstrip", mk(true, false));
        map.set("rstrip", mk(false, true));
        map.__pyStrip = true;
      }
      return map;
    },
  });
})();
const [templatePath, casesPath] = process.argv.slice(2);
const template = new Template(fs.readFileSync(templatePath, "utf8"));
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const out = cases.map((c) => {
  const ctx = { messages: c.messages, add_generation_prompt: c.add_generation_prompt ?? true, bos_token: "", eos_token: "<|im_end|>" };
  if (c.tools && c.tools.length) ctx.tools = c.tools;
  if (c.enable_thinking !== undefined) ctx.enable_thinking = c.enable_thinking;
  if (c.add_vision_id !== undefined) ctx.add_vision_id = c.add_vision_id;
  try {
    return { text: template.render(ctx) };
  } catch (e) {
    return { error: String(e.message || e) };
  }
});
process.stdout.write(JSON.stringify(out) + "\n");
