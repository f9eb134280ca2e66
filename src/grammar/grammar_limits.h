// The bounds every grammar runs under (issue 24: "an unsatisfiable or pathological grammar is
// bounded, never a hang or a crash"). Compile-time limits are reported as GrammarError (a 400
// for the server); a limit reached while generating is GrammarLimitError (the request ends with
// an error that names the limit; the server keeps serving).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tandem::grammar {

struct GrammarLimits {
  size_t max_source_bytes = 1 << 20;     // GBNF text
  size_t max_rules = 20000;              // after repetitions are rewritten into helper rules
  size_t max_elements = 1 << 20;         // rule elements in all
  int max_repetition = 2000;             // {m,n} bounds, as llama.cpp's MAX_REPETITION_THRESHOLD
  size_t max_states = 1 << 17;           // interned matcher states per compiled grammar
  size_t max_stacks_per_state = 2048;    // parse stacks of one state (ambiguous grammars)
  size_t max_stack_depth = 1024;         // nesting (recursive rules)
  size_t max_bytes = size_t{256} << 20;  // states, transitions, masks and forced runs of one grammar
  double max_compile_ms = 5000;          // parsing and checks
};

// The grammar text (or schema) is wrong: the message names the position (GBNF) or the keyword
// and path (JSON Schema) and what was expected.
class GrammarError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A limit of GrammarLimits was reached while matching (too many states, too much memory).
class GrammarLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tandem::grammar
