// The one exception type of the GGUF layer. Its message always names the file and
// what was expected, so a user can tell which file is broken and how.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tandem
