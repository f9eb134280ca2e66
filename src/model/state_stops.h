// Where a pass's recurrent layers stop to hand back states (ForwardOptions::cuts and
// rollback_states), for the architectures whose recurrent layers run layer by layer over the whole
// batch (model/lfm2, model/granitehybrid). Planned once per pass: the positions inside the batch
// at which every recurrent layer copies its state into the checkpoints that asked for it, so a
// checkpoint inside a pass costs one copy per layer and no extra pass.
//
// A checkpoint buffer has the SequenceState's recurrent layout (every layer's conv window, then
// every layer's scan state), so the layer g part of it is at conv_offset(g) / ssm_offset(g).
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_pass.h"
#include "model/sequence_state.h"

namespace tandem {

// Resizes a list of a pass's state buffers (ForwardOutput::cut_states, rollback_states) to n of
// `floats` each without freeing any: the ones no longer needed go to `spare`, new ones come from it.
void resize_states(std::vector<RecurrentCheckpoint>& v, size_t n, std::vector<RecurrentCheckpoint>& spare,
                   size_t floats);

class StateStops {
 public:
  // Validates opt (cuts strictly increasing inside (n_past, n_past + T], rollback_states >= 0),
  // sizes out.cut_states / out.rollback_states (reusing out.spare_states) and sets their positions.
  // Throws std::invalid_argument on bad options, before anything has run.
  void plan(const ForwardOptions& opt, const SequenceState& st, int64_t T, ForwardOutput& out);

  // Stop positions relative to the pass start, strictly increasing, each in (0, T]; at(i) the
  // checkpoint buffers (whole-state bases) that want the state after ends()[i] tokens.
  const std::vector<int64_t>& ends() const { return ends_; }
  const std::vector<float*>& at(size_t i) const { return dest_[i]; }
  // Tokens from this index on run the per-token scan (the rollback tail and per_token_tail), so
  // that a pass that keeps rollback states computes the same bits as one that does not.
  int64_t per_token_from() const { return per_token_from_; }

 private:
  std::vector<int64_t> ends_;
  std::vector<std::vector<float*>> dest_;
  int64_t per_token_from_ = 0;
};

}  // namespace tandem
