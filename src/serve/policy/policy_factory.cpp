#include "serve/policy/policy_factory.h"

#include <stdexcept>

namespace tandem::serve {

PolicyKind parse_policy_kind(std::string_view name) {
  if (name == "stock") return PolicyKind::Stock;
  if (name == "marconi") return PolicyKind::Marconi;
  if (name == "divergence") return PolicyKind::Divergence;
  throw std::invalid_argument("unknown checkpoint policy '" + std::string(name) +
                              "' (expected stock, marconi or divergence)");
}

std::string_view to_string(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Stock: return "stock";
    case PolicyKind::Marconi: return "marconi";
    case PolicyKind::Divergence: return "divergence";
  }
  return "?";
}

std::vector<std::string> policy_names() { return {"stock", "marconi", "divergence"}; }

std::unique_ptr<CheckpointPolicy> make_policy(const PolicyConfig& cfg) {
  switch (cfg.kind) {
    case PolicyKind::Stock: return std::make_unique<StockPolicy>(cfg.stock);
    case PolicyKind::Marconi: return std::make_unique<MarconiPolicy>(cfg.marconi);
    case PolicyKind::Divergence: return std::make_unique<DivergencePolicy>(cfg.divergence);
  }
  throw std::invalid_argument("make_policy: unknown policy kind");
}

}  // namespace tandem::serve
