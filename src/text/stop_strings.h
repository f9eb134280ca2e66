// Stop strings for streamed generation: text is released as soon as it can no longer be the start
// of a stop string; when a stop string appears, everything from it on is withheld.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::text {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops = {});

  // Feeds newly generated text; returns the part that is safe to show now (valid until the next
  // call). After a stop string matched, stopped() is true and further input is ignored.
  std::string_view push(std::string_view text);
  // End of generation: returns whatever was held back (nothing if a stop string matched).
  std::string_view flush();
  bool stopped() const { return stopped_; }
  void reset();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  std::string out_;
  bool stopped_ = false;
};

}  // namespace tandem::text
