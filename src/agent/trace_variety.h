// How varied generated traces are (issue 49): over a range of seeds, how many distinct tasks,
// targets and screens they hold, how often the same task's target sits at another index, and the
// mix of expected action kinds. A policy must read the screen, not memorise a seed: these
// figures say whether the traces let it. Computed from the records alone (the task read back
// with the app's map, the screen from the prompt), as a trace reader would.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/trace.h"

namespace tandem::agent {

struct TraceVariety {
  size_t records = 0, with_action = 0, needs_image = 0;
  std::set<std::string> tasks, targets, screens;  // targets: "app: target"; screens: the control lists
  std::map<std::string, size_t> kinds;            // expected action kind -> count
  // Per task: the indices at which a tap or long press reached its target's row.
  std::map<std::string, std::set<int64_t>> target_indices;
  std::map<std::string, size_t> target_taps;

  void add(const std::vector<TraceRecord>& trace);
  // Tasks whose target was tapped at two or more indices, and tasks whose target was tapped at all
  // in two or more records.
  size_t tasks_with_moving_target() const;
  size_t tasks_with_repeated_target() const;
  // "tap 56.6%, input 17.8%, ..." in decreasing order.
  std::string mix() const;
};

}  // namespace tandem::agent
