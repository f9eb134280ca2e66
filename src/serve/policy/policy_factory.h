// Choosing a policy at run time by name ("stock", "marconi", "divergence"), with each
// policy's settings; the server's flags and the simulator's sweeps both come through here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/policy/checkpoint_policy.h"
#include "serve/policy/divergence_policy.h"
#include "serve/policy/marconi_policy.h"
#include "serve/policy/stock_policy.h"

namespace tandem::serve {

enum class PolicyKind : uint8_t { Stock, Marconi, Divergence };

struct PolicyConfig {
  PolicyKind kind = PolicyKind::Divergence;
  StockOptions stock;
  MarconiOptions marconi;
  DivergenceOptions divergence;
};

// Throws std::invalid_argument listing the accepted names.
PolicyKind parse_policy_kind(std::string_view name);
std::string_view to_string(PolicyKind kind);
std::vector<std::string> policy_names();

std::unique_ptr<CheckpointPolicy> make_policy(const PolicyConfig& cfg);

}  // namespace tandem::serve
