// libFuzzer harness for the grammar engine (issue 24: "random and mutated grammars/schemas: no
// crash, no hang past the limits"). The first byte picks the front end, the rest is its text:
//   even:       GBNF -> CompiledGrammar::compile
//   1 (mod 4):  JSON -> json_schema_to_gbnf (both whitespace modes) -> compile
//   3 (mod 4):  JSON tools -> tool_call_grammar (issue 45; format, tool_choice, parallel calls and
//               reasoning picked by the input's hash) -> compile
// Every input is either rejected (GrammarError, or nlohmann's parse_error for bad JSON) or
// compiles; a compiled grammar is then walked: masks, forced runs and token advances chosen from
// the mask by the input's hash, under tight limits (GrammarLimitError is an allowed outcome, any
// other exception or a sanitizer report is a bug). Run with fuzz/run_grammar_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/tool_grammar.h"
#include "text/test_vocab.h"

using namespace tandem;

namespace {

const std::shared_ptr<const grammar::VocabIndex>& vocab() {
  static std::unique_ptr<text::Tokenizer> tok = text::testing::builtin_tokenizer();
  static std::shared_ptr<const grammar::VocabIndex> index = std::make_shared<grammar::VocabIndex>(*tok);
  return index;
}

grammar::GrammarLimits tight_limits() {
  grammar::GrammarLimits l;
  l.max_source_bytes = 1 << 16;
  l.max_rules = 4000;
  l.max_elements = 1 << 16;
  l.max_states = 4096;
  l.max_stacks_per_state = 256;
  l.max_stack_depth = 128;
  l.max_bytes = size_t{64} << 20;
  l.max_compile_ms = 2000;
  return l;
}

void walk(grammar::CompiledGrammar& g, uint64_t h) {
  std::vector<int32_t> forced;
  grammar::GrammarState s = g.initial();
  for (int step = 0; step < 24 && s != grammar::kDeadState; ++step) {
    const auto mask = g.mask(s);
    g.forced_tokens(s, forced);
    // A forced run is a sequence: each token is allowed after the ones before it.
    grammar::GrammarState f = s;
    for (int32_t t : forced) {
      const grammar::GrammarState n = g.advance(f, t);
      if (n == grammar::kDeadState) {
        std::fprintf(stderr, "grammar_fuzz: forced token %d is not allowed where the run puts it\n", t);
        std::abort();
      }
      f = n;
    }
    if (g.complete(s) || mask->n_allowed == 0) break;
    // The (h % n_allowed)-th allowed token.
    int64_t pick = static_cast<int64_t>(h % static_cast<uint64_t>(mask->n_allowed));
    int32_t tok = -1;
    for (size_t w = 0; w < mask->bits.size() && tok < 0; ++w) {
      const int c = __builtin_popcountll(mask->bits[w]);
      if (pick >= c) {
        pick -= c;
        continue;
      }
      uint64_t bits = mask->bits[w];
      for (int64_t k = 0; k < pick; ++k) bits &= bits - 1;
      tok = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
    }
    if (tok < 0) {
      std::fprintf(stderr, "grammar_fuzz: mask count %lld does not match its bits\n", static_cast<long long>(mask->n_allowed));
      std::abort();
    }
    const grammar::GrammarState n = g.advance(s, tok);
    if (n == grammar::kDeadState) {
      std::fprintf(stderr, "grammar_fuzz: token %d is in the mask but advance() rejects it\n", tok);
      std::abort();
    }
    s = n;
    h = h * 6364136223846793005ull + 1442695040888963407ull;
  }
}

void compile_and_walk(std::string_view gbnf, uint64_t h) {
  std::shared_ptr<grammar::CompiledGrammar> g;
  try {
    g = grammar::CompiledGrammar::compile(gbnf, vocab(), tight_limits());
  } catch (const grammar::GrammarError&) {
    return;
  }
  try {
    walk(*g, h);
  } catch (const grammar::GrammarLimitError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  if (data[0] % 2 == 0) {
    compile_and_walk(text, h);
    return 0;
  }
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  if (data[0] % 4 == 3) {
    grammar::ToolGrammarOptions o;
    o.format = h & 1 ? text::ToolCallFormat::Xml : text::ToolCallFormat::Json;
    o.required = (h >> 1) & 1;
    o.parallel = (h >> 2) & 1;
    o.reasoning = static_cast<grammar::ToolReasoning>((h >> 3) % 3);
    o.whitespace = (h >> 5) & 1 ? grammar::JsonWhitespace::Compact : grammar::JsonWhitespace::Flexible;
    o.special_token = grammar::special_token_test(vocab()->tokenizer());
    grammar::SchemaGrammar tg;
    try {
      tg = grammar::tool_call_grammar(schema, o);
    } catch (const grammar::GrammarError&) {
      return 0;
    }
    compile_and_walk(tg.gbnf, h);
    return 0;
  }
  for (auto ws : {grammar::JsonWhitespace::Compact, grammar::JsonWhitespace::Flexible}) {
    grammar::SchemaOptions opt;
    opt.whitespace = ws;
    opt.max_gbnf_bytes = 1 << 16;
    grammar::SchemaGrammar sg;
    try {
      sg = grammar::json_schema_to_gbnf(schema, opt);
    } catch (const grammar::GrammarError&) {
      return 0;
    }
    compile_and_walk(sg.gbnf, h);
  }
  return 0;
}
