#pragma once
// The episode generators' draws from their seeded generator (agent/episode_gen, agent/app_episode):
// one definition, so that the same seed draws the same episode in both.
#include <cstddef>
#include <random>
#include <vector>

namespace tandem::agent {

using Rng = std::mt19937_64;

// An integer in [lo, hi].
inline int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
// True with probability p.
inline bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
// One element of a non-empty vector.
template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(uniform(rng, 0, static_cast<int>(v.size()) - 1))];
}

}  // namespace tandem::agent
