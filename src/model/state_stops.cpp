#include "model/state_stops.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem {

void resize_states(std::vector<RecurrentCheckpoint>& v, size_t n, std::vector<RecurrentCheckpoint>& spare,
                   size_t floats) {
  while (v.size() > n) {
    spare.push_back(std::move(v.back()));
    v.pop_back();
  }
  while (v.size() < n) {
    if (spare.empty()) {
      v.emplace_back();
    } else {
      v.push_back(std::move(spare.back()));
      spare.pop_back();
    }
  }
  for (RecurrentCheckpoint& c : v)
    if (c.data.size() != floats) c.data.resize(floats);
}

void StateStops::plan(const ForwardOptions& opt, const SequenceState& st, int64_t T, ForwardOutput& out) {
  const int64_t pos0 = st.n_past();
  int64_t prev = 0;
  for (int64_t p : opt.cuts) {
    if (p <= pos0 || p > pos0 + T)
      throw std::invalid_argument("forward: cut position " + std::to_string(p) + " outside (" + std::to_string(pos0) +
                                  ", " + std::to_string(pos0 + T) + "]");
    if (p - pos0 <= prev) throw std::invalid_argument("forward: cut positions must be strictly increasing");
    prev = p - pos0;
  }
  if (opt.rollback_states < 0) throw std::invalid_argument("forward: rollback_states must be >= 0");
  if (opt.per_token_tail < 0) throw std::invalid_argument("forward: per_token_tail must be >= 0");

  const size_t floats = static_cast<size_t>(st.recurrent_floats());
  resize_states(out.cut_states, opt.cuts.size(), out.spare_states, floats);
  const int64_t n_rb = std::min<int64_t>(opt.rollback_states, T);
  resize_states(out.rollback_states, static_cast<size_t>(n_rb), out.spare_states, floats);

  // Every (relative position, buffer) pair, then grouped by position.
  std::vector<std::pair<int64_t, float*>> want;
  for (size_t i = 0; i < opt.cuts.size(); ++i) {
    out.cut_states[i].pos = opt.cuts[i];
    want.emplace_back(opt.cuts[i] - pos0, out.cut_states[i].data.data());
  }
  for (int64_t s = 0; s < n_rb; ++s) {  // slot s = the state after token T-1-s
    RecurrentCheckpoint& rb = out.rollback_states[static_cast<size_t>(s)];
    if (s == 0 && !opt.rollback_live) {
      rb.pos = -1;  // the live state: the sequence holds it anyway
      continue;
    }
    rb.pos = pos0 + T - s;
    want.emplace_back(T - s, rb.data.data());
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ends_.clear();
  for (auto& d : dest_) d.clear();
  size_t n = 0;
  for (const auto& [rel, buf] : want) {
    if (ends_.empty() || ends_.back() != rel) {
      ends_.push_back(rel);
      if (dest_.size() < ends_.size()) dest_.emplace_back();
      n = ends_.size() - 1;
    }
    dest_[n].push_back(buf);
  }
  // The per-token tail: the last max(per_token_tail, K - 1) tokens.
  const int64_t tail = std::max<int64_t>(opt.per_token_tail, n_rb > 0 ? n_rb - 1 : 0);
  per_token_from_ = std::max<int64_t>(0, T - tail);
}

}  // namespace tandem
