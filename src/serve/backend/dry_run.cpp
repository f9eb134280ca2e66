#include "serve/backend/dry_run.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "serve/spec/speculator.h"

namespace tandem::serve {

namespace {

// The tokens the server emitted, in order: r.output (what it fed) and then one more it did not
// feed, whose id the dry run does not need (a placeholder).
class ScriptedPicker final : public TokenPicker {
 public:
  explicit ScriptedPicker(const std::vector<int32_t>& fed) : fed_(fed) {}
  int32_t pick(std::span<const float>) override { return at(next_++); }
  int32_t at(size_t i) const { return i < fed_.size() ? fed_[i] : 0; }

 private:
  const std::vector<int32_t>& fed_;
  size_t next_ = 1;  // emitted[0] came from the prefill's logits
};

void replay_speculative(Slot& slot, const RecordedRequest& r, size_t index) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument("dry run of a speculating server, request " + std::to_string(index + 1) + ": " + what);
  };
  if (r.step_drafted.size() != r.step_accepted.size()) fail("step_drafted and step_accepted differ in length");
  if (r.step_drafted.empty() && !r.output.empty())
    fail("the log has no per-step draft counts (step_drafted / step_accepted): run the server with speculation "
         "and --log-requests");
  const int64_t N = static_cast<int64_t>(r.prompt.size());
  ScriptedPicker picker(r.output);
  size_t step = 0;
  // The logged step's drafts: its accepted ones are the tokens the server emitted there, the one
  // after them differs from what the target picks (the rejection), the rest are never looked at.
  const SpecConfig& sc = slot.speculator()->config();
  const int limit = std::max(sc.draft_max, sc.forced_drafts ? sc.forced_max : 0);  // a forced run may be longer
  slot.speculator()->set_draft_hook([&](int64_t pos, int32_t, int, std::vector<int32_t>& d) {
    const int drafted = r.step_drafted[step], accepted = r.step_accepted[step];
    const int max_drafts = limit;
    if (accepted < 0 || accepted > drafted || drafted > max_drafts)
      fail("step " + std::to_string(step + 1) + " drafted " + std::to_string(drafted) + " and accepted " +
           std::to_string(accepted) + " where at most " + std::to_string(max_drafts) + " drafts fit");
    d.resize(static_cast<size_t>(drafted));
    for (int i = 0; i < drafted; ++i) {
      const int32_t want = picker.at(static_cast<size_t>(pos - N + i));
      d[static_cast<size_t>(i)] = i < accepted ? want : want + 1;
    }
  });
  struct Unhook {  // the hook refers to this frame: gone with it, also on an exception
    Slot& slot;
    ~Unhook() { slot.speculator()->set_draft_hook(nullptr); }
  } unhook{slot};
  int32_t last = picker.at(0);
  for (step = 0; step < r.step_drafted.size(); ++step) {
    const std::span<const int32_t> toks = slot.decode_speculative(last, picker);
    last = toks.back();
  }
}

}  // namespace

std::unique_ptr<Slot> make_dry_run_slot(std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg,
                                        const NullBackend& backend) {
  return std::make_unique<Slot>(std::make_unique<NullBackend>(backend), std::move(policy), cfg);
}

std::vector<RequestStats> replay(Slot& slot, std::span<const RecordedRequest> requests) {
  std::vector<RequestStats> out;
  out.reserve(requests.size());
  std::vector<PromptImage> images;
  for (size_t i = 0; i < requests.size(); ++i) {
    const RecordedRequest& r = requests[i];
    images.clear();
    for (const ImageChunk& c : r.images) images.push_back(PromptImage{c, nullptr});  // the dry run needs no rows
    slot.prefill(Prompt{r.prompt, r.user_starts, images});
    if (slot.speculator()) replay_speculative(slot, r, i);
    else
      for (int32_t t : r.output) slot.decode(t);
    out.push_back(slot.end_request());
  }
  return out;
}

}  // namespace tandem::serve
