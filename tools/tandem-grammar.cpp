// tandem-grammar: JSON Schema -> GBNF, and byte-level checks of a grammar, for people and for
// the conformance test (tests/grammar/schema_conformance.py).
//
//   tandem-grammar schema [OPTIONS] FILE            print the GBNF (warnings on stderr)
//   tandem-grammar check (--schema F | --gbnf F) [--compact] [--json-strings] [DOCS]
//                                                   one document a line (raw, or JSON-encoded
//                                                   strings), prints "accept" / "reject" each
//   tandem-grammar sample (--schema F | --gbnf F) [--compact] [-n N] [--seed S] [--target L]
//                         [--max-len M]             random complete sentences, JSON-encoded
//   tandem-grammar batch                            JSON Lines requests on stdin, one answer a
//                                                   line (the conformance test: one process)
//
// Schema options: --compact (no whitespace), --declaration-order (not required-first), --strict
// (unsupported keywords are errors). Matching is over bytes (CompiledGrammar::advance_bytes), so the vocabulary does not matter:
// the generator's built-in test vocabulary stands in for a model's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/vocab_index.h"
#include "text/test_vocab.h"

namespace {

using namespace tandem;
using grammar::CompiledGrammar;
using grammar::GrammarState;
using grammar::kDeadState;

int usage() {
  std::fprintf(stderr,
               "usage: tandem-grammar schema [--compact] [--declaration-order] [--strict] FILE\n"
               "       tandem-grammar check (--schema FILE | --gbnf FILE) [--compact] [--json-strings] [DOCS|-]\n"
               "       tandem-grammar sample (--schema FILE | --gbnf FILE) [--compact] [-n N] [--seed S]\n"
               "                             [--target BYTES] [--max-len BYTES]\n"
               "       tandem-grammar batch   (JSON Lines on stdin: {\"schema\":..., \"compact\":bool,\n"
               "                               \"declaration_order\":bool, \"strict\":bool, \"docs\":[...],\n"
               "                               \"samples\":N, \"seed\":S, \"target\":L, \"max_len\":M})\n");
  return 2;
}

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The vocabulary every grammar here is compiled against (byte-level use only).
std::shared_ptr<const grammar::VocabIndex> vocab() {
  static std::unique_ptr<text::Tokenizer> tok = text::testing::builtin_tokenizer();
  static std::shared_ptr<const grammar::VocabIndex> index = std::make_shared<grammar::VocabIndex>(*tok);
  return index;
}

// JSON text for one output line, ASCII only (invalid UTF-8 replaced; U+2028 escaped: readers
// that split lines on Unicode line breaks still see one line).
std::string json_line(const nlohmann::json& j) { return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace); }

bool accepts(CompiledGrammar& g, const std::string& doc) {
  const GrammarState s = g.advance_bytes(g.initial(), doc);
  return s != kDeadState && g.accepting(s);
}

// A random walk over bytes: uniform among the bytes that keep the text a prefix of some
// sentence; past `target` bytes it heads for the end (stop as soon as the text is complete,
// else take a byte whose state is fewest bytes from complete). Walks longer than `max_len` are
// dropped: only complete sentences come out.
class Sampler {
 public:
  Sampler(CompiledGrammar& g, uint64_t seed, size_t target, size_t max_len)
      : g_(g), rng_(seed), target_(target), max_len_(max_len) {}

  std::optional<std::string> sample() {
    std::string out;
    GrammarState s = g_.initial();
    while (out.size() < max_len_) {
      const bool finishing = out.size() >= target_;
      if (g_.accepting(s)) {
        // Before the target, stop with a small probability so that short sentences come too.
        if (finishing || !g_.can_continue(s) || std::uniform_int_distribution<int>(0, 7)(rng_) == 0) return out;
      }
      std::vector<std::pair<unsigned char, GrammarState>> next;
      for (int b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        const GrammarState n = g_.advance_bytes(s, std::string_view(&c, 1));
        if (n != kDeadState) next.emplace_back(static_cast<unsigned char>(b), n);
      }
      if (next.empty()) {  // a live state always continues or ends: a matcher bug
        ++dead_ends_;
        last_dead_end_ = out;
        return std::nullopt;
      }
      size_t pick = std::uniform_int_distribution<size_t>(0, next.size() - 1)(rng_);
      if (finishing) pick = closing_choice(next, pick);
      out += static_cast<char>(next[pick].first);
      s = next[pick].second;
    }
    if (std::getenv("TANDEM_GRAMMAR_DEBUG")) std::fprintf(stderr, "dropped walk: %s\n", json_line(out).c_str());
    return std::nullopt;
  }

 private:
  // The candidate closest to a complete sentence (bytes still needed, by a bounded
  // breadth-first search per state, remembered); ties broken at random.
  size_t closing_choice(const std::vector<std::pair<unsigned char, GrammarState>>& next, size_t fallback) {
    int best = kFar;
    std::vector<size_t> picks;
    for (size_t i = 0; i < next.size(); ++i) {
      const int d = distance(next[i].second);
      if (d < best) {
        best = d;
        picks.clear();
      }
      if (d == best) picks.push_back(i);
    }
    if (best == kFar) return fallback;
    return picks[std::uniform_int_distribution<size_t>(0, picks.size() - 1)(rng_)];
  }

  static constexpr int kFar = 1 << 20;
  int distance(GrammarState from) {
    if (auto it = distance_.find(from); it != distance_.end()) return it->second;
    std::vector<GrammarState> frontier{from}, following;
    std::unordered_map<GrammarState, bool> seen{{from, true}};
    int d = kFar;
    size_t expanded = 0;
    for (int depth = 0; !frontier.empty() && d == kFar && expanded < 256; ++depth) {
      following.clear();
      for (GrammarState s : frontier) {
        if (g_.accepting(s)) {
          d = depth;
          break;
        }
        if (++expanded > 256) break;
        for (int b = 0; b < 256; ++b) {
          const char c = static_cast<char>(b);
          const GrammarState n = g_.advance_bytes(s, std::string_view(&c, 1));
          if (n != kDeadState && seen.emplace(n, true).second) following.push_back(n);
        }
      }
      frontier.swap(following);
    }
    distance_[from] = d;
    return d;
  }

  std::unordered_map<GrammarState, int> distance_;

  CompiledGrammar& g_;
  std::mt19937_64 rng_;

 public:
  int dead_ends_ = 0;
  std::string last_dead_end_;

 private:
  size_t target_, max_len_;
};

grammar::SchemaOptions schema_options(bool compact, bool declaration_order = false, bool strict = false) {
  grammar::SchemaOptions o;
  o.whitespace = compact ? grammar::JsonWhitespace::Compact : grammar::JsonWhitespace::Flexible;
  o.order = declaration_order ? grammar::PropertyOrder::Declaration : grammar::PropertyOrder::RequiredFirst;
  o.strict = strict;
  return o;
}

// One conformance request: convert, check documents, draw samples.
nlohmann::json batch_one(const nlohmann::ordered_json& req) {
  nlohmann::json out = nlohmann::json::object();
  grammar::SchemaGrammar sg;
  try {
    sg = grammar::json_schema_to_gbnf(req.at("schema"), schema_options(req.value("compact", false),
                                                                      req.value("declaration_order", false),
                                                                      req.value("strict", false)));
  } catch (const grammar::GrammarError& e) {
    out["error"] = e.what();
    return out;
  }
  out["warnings"] = sg.warnings;
  if (req.value("gbnf", false)) out["gbnf"] = sg.gbnf;
  std::shared_ptr<CompiledGrammar> g;
  try {
    g = CompiledGrammar::compile(sg.gbnf, vocab());
  } catch (const std::exception& e) {
    out["compile_error"] = e.what();
    out["gbnf"] = sg.gbnf;
    return out;
  }
  try {
    nlohmann::json acc = nlohmann::json::array();
    if (req.contains("docs"))
      for (const auto& d : req["docs"]) acc.push_back(accepts(*g, d.get<std::string>()));
    out["accept"] = acc;
    nlohmann::json samples = nlohmann::json::array();
    const int n = req.value("samples", 0);
    Sampler sampler(*g, req.value("seed", 1), req.value("target", 48), req.value("max_len", 4096));
    int dropped = 0;
    for (int i = 0; i < n; ++i) {
      if (auto s = sampler.sample())
        samples.push_back(*s);
      else
        ++dropped;
    }
    out["samples"] = samples;
    out["dropped"] = dropped;
    if (sampler.dead_ends_) {
      out["dead_ends"] = sampler.dead_ends_;
      out["last_dead_end"] = sampler.last_dead_end_;
    }
  } catch (const std::exception& e) {  // GrammarLimitError: a limit of the matcher
    out["match_error"] = e.what();
  }
  return out;
}


}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  bool compact = false, json_strings = false, declaration_order = false, strict = false;
  std::string schema_file, gbnf_file, docs_file = "-", positional;
  int n = 10;
  uint64_t seed = 1;
  size_t target = 48, max_len = 4096;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--compact") compact = true;
      else if (a == "--declaration-order") declaration_order = true;
      else if (a == "--strict") strict = true;
      else if (a == "--json-strings") json_strings = true;
      else if (a == "--schema") schema_file = value();
      else if (a == "--gbnf") gbnf_file = value();
      else if (a == "-n") n = std::stoi(value());
      else if (a == "--seed") seed = std::stoull(value());
      else if (a == "--target") target = std::stoul(value());
      else if (a == "--max-len") max_len = std::stoul(value());
      else if (!a.empty() && a[0] == '-' && a != "-") return usage();
      else positional = a;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tandem-grammar: %s\n", e.what());
      return 2;
    }
  }
  try {
    if (cmd == "schema") {
      if (positional.empty()) return usage();
      const auto sg = grammar::json_schema_text_to_gbnf(read_file(positional), schema_options(compact, declaration_order, strict));
      std::fputs(sg.gbnf.c_str(), stdout);
      for (const auto& w : sg.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
      return 0;
    }
    if (cmd == "batch") {
      std::string line;
      while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        nlohmann::json out;
        try {
          out = batch_one(nlohmann::ordered_json::parse(line));
        } catch (const std::exception& e) {
          out = {{"error", std::string("bad request: ") + e.what()}};
        }
        std::cout << json_line(out) << std::endl;
      }
      return 0;
    }
    if (cmd != "check" && cmd != "sample") return usage();
    if (schema_file.empty() == gbnf_file.empty()) return usage();
    std::string gbnf;
    if (!schema_file.empty()) {
      const auto sg = grammar::json_schema_text_to_gbnf(read_file(schema_file), schema_options(compact, declaration_order, strict));
      for (const auto& w : sg.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
      gbnf = sg.gbnf;
    } else {
      gbnf = read_file(gbnf_file);
    }
    auto g = CompiledGrammar::compile(gbnf, vocab());
    if (cmd == "check") {
      std::istringstream docs(read_file(positional.empty() ? docs_file : positional));
      std::string line;
      while (std::getline(docs, line)) {
        std::string doc = line;
        if (json_strings) doc = nlohmann::json::parse(line).get<std::string>();
        std::printf("%s\n", accepts(*g, doc) ? "accept" : "reject");
      }
      return 0;
    }
    Sampler sampler(*g, seed, target, max_len);
    int dropped = 0;
    for (int i = 0; i < n; ++i) {
      if (auto s = sampler.sample())
        std::printf("%s\n", json_line(*s).c_str());
      else
        ++dropped;
    }
    if (dropped) std::fprintf(stderr, "%d walk(s) dropped (%d at a state that could neither continue nor end)\n", dropped, sampler.dead_ends_);
    if (sampler.dead_ends_) std::fprintf(stderr, "last dead end after: %s\n", json_line(sampler.last_dead_end_).c_str());
    return 0;
  } catch (const grammar::GrammarError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-grammar: %s\n", e.what());
    return 1;
  }
}
