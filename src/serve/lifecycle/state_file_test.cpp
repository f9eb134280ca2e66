// State files (serve/lifecycle/state_file.h, issue 27 item 1) on the tiny model: a slot's state written and
// read back bit for bit (the file written again from what was read is the same file), and each way
// a file can be wrong refused with a message that names the file and the reason: another model,
// another layout, truncated, a corrupted payload, a corrupted header, another version, not a state
// file at all, a checkpoint beyond the sequence.
#include "serve/lifecycle/state_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "serve/backend/model_backend.h"
#include "serve/lifecycle/state_store.h"
#include "serve/policy/policy_factory.h"
#include "serve/slot/slot.h"

namespace tandem::serve {
namespace {

namespace fs = std::filesystem;

Qwen35Model& model() {
  static std::unique_ptr<Qwen35Model> m = Qwen35Model::load(ensure_tiny_model("F32"), 2);
  return *m;
}

std::unique_ptr<Slot> make_slot(int64_t n_ctx = 256) {
  return std::make_unique<Slot>(std::make_unique<ModelBackend>(model(), n_ctx), make_policy(PolicyConfig{}), SlotConfig{});
}

std::vector<int32_t> prompt(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 37 + salt * 11) % 200 + 1));
  return t;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put_bytes(const fs::path& p, const std::string& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

struct StateFile : ::testing::Test {
  fs::path dir;
  StateFileIdentity id;
  std::unique_ptr<Slot> slot;
  fs::path file;
  void SetUp() override {
    dir = fs::path(::testing::TempDir()) / ("tandem-state-file-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    slot = make_slot();
    id = StateFileIdentity{model().fingerprint(), slot->backend().state_layout()};
    // Two requests: the divergence policy leaves a checkpoint where the second left the first.
    auto a = prompt(60, 1), b = a;
    b.resize(40);
    const auto tail = prompt(30, 2);
    b.insert(b.end(), tail.begin(), tail.end());
    slot->prefill(Prompt{a, {}});
    slot->end_request();
    slot->prefill(Prompt{b, {}});
    slot->decode(7);
    slot->end_request();
    ASSERT_FALSE(slot->checkpoints().empty());
    file = dir / "slot.tstate";
    write_state_file(file, slot->export_state(), id);
  }
  void TearDown() override { fs::remove_all(dir); }

  // read_state_file's refusal of `path`, or "" when it loads.
  std::string refusal(const fs::path& path, const StateFileIdentity& as) {
    try {
      read_state_file(path, as, slot->backend());
    } catch (const StateFileError& e) {
      return e.what();
    }
    return {};
  }
};

TEST_F(StateFile, RoundTripsBitForBit) {
  PromptCacheEntry e = read_state_file(file, id, slot->backend());
  EXPECT_EQ(e.tokens, slot->cached_tokens());
  ASSERT_EQ(e.checkpoints.size(), slot->checkpoints().size());
  for (size_t i = 0; i < e.checkpoints.size(); ++i) {
    EXPECT_EQ(e.checkpoints[i].pos, slot->checkpoints()[i].pos);
    EXPECT_EQ(e.checkpoints[i].origin, slot->checkpoints()[i].origin);
    EXPECT_TRUE(std::equal(e.checkpoints[i].state.data.begin(), e.checkpoints[i].state.data.end(),
                           slot->checkpoints()[i].state.data.begin()));
  }
  const fs::path again = dir / "again.tstate";
  write_state_file(again, e, id);
  EXPECT_EQ(bytes_of(again), bytes_of(file));

  // Imported into another slot, the next prompt gives the same logits bit for bit, restoring
  // the same checkpoint.
  auto other = make_slot();
  other->import_state(std::move(e));
  auto next = slot->cached_tokens();
  next.resize(50);
  const auto more = prompt(20, 3);
  next.insert(next.end(), more.begin(), more.end());
  const PrefillReport ra = slot->prefill(Prompt{next, {}});
  const std::vector<float> la(ra.logits.begin(), ra.logits.end());
  const PrefillReport rb = other->prefill(Prompt{next, {}});
  EXPECT_EQ(ra.stats.restore_pos, rb.stats.restore_pos);
  EXPECT_GT(rb.stats.restore_pos, 0);
  EXPECT_EQ(la, std::vector<float>(rb.logits.begin(), rb.logits.end()));
}

TEST_F(StateFile, RefusesAnotherModel) {
  StateFileIdentity other = id;
  other.model_fingerprint ^= 1;
  const std::string why = refusal(file, other);
  EXPECT_NE(why.find(file.string()), std::string::npos) << why;
  EXPECT_NE(why.find("another model"), std::string::npos) << why;
}

TEST_F(StateFile, RefusesAQuantisedFileOfTheSameShapes) {
  // A real other file: the Q8_0 tiny model has the F32 one's shapes and layout, other numbers.
  auto q8 = Qwen35Model::load(ensure_tiny_model("Q8_0"), 1);
  EXPECT_NE(q8->fingerprint(), model().fingerprint());
  const std::string why = refusal(file, StateFileIdentity{q8->fingerprint(), id.layout});
  EXPECT_NE(why.find("another model"), std::string::npos) << why;
}

TEST_F(StateFile, RefusesAnotherLayout) {
  StateFileIdentity other = id;
  other.layout += " (another)";
  const std::string why = refusal(file, other);
  EXPECT_NE(why.find("another state layout"), std::string::npos) << why;
}

TEST_F(StateFile, RefusesATruncatedFile) {
  const std::string b = bytes_of(file);
  for (size_t keep : {b.size() - 1, b.size() / 2, size_t{100}, size_t{12}, size_t{0}}) {
    put_bytes(file, b.substr(0, keep));
    const std::string why = refusal(file, id);
    EXPECT_NE(why.find(file.string()), std::string::npos) << keep << ": " << why;
    EXPECT_TRUE(why.find("truncated") != std::string::npos || why.find("bad magic") != std::string::npos) << keep << ": " << why;
  }
}

TEST_F(StateFile, RefusesACorruptedPayload) {
  std::string b = bytes_of(file);
  for (size_t at : {b.size() / 2, b.size() - 3, b.size() * 3 / 4}) {
    std::string c = b;
    c[at] = static_cast<char>(c[at] ^ 0x10);
    put_bytes(file, c);
    const std::string why = refusal(file, id);
    EXPECT_NE(why.find("corrupted"), std::string::npos) << at << ": " << why;
  }
}

TEST_F(StateFile, RefusesACorruptedHeader) {
  std::string b = bytes_of(file);
  b[20] = static_cast<char>(b[20] ^ 0x01);  // inside the fingerprint
  put_bytes(file, b);
  const std::string why = refusal(file, id);
  EXPECT_NE(why.find("header is corrupted"), std::string::npos) << why;
}

TEST_F(StateFile, RefusesAnotherVersionAndNotAStateFile) {
  std::string b = bytes_of(file);
  b[8] = static_cast<char>(kStateFileVersion + 1);
  put_bytes(file, b);
  EXPECT_NE(refusal(file, id).find("version"), std::string::npos);
  put_bytes(file, bytes_of(ensure_tiny_model("F32")).substr(0, 4096));
  EXPECT_NE(refusal(file, id).find("not a Tandem state file"), std::string::npos);
  EXPECT_NE(refusal(dir / "missing.tstate", id).find("cannot open"), std::string::npos);
}

TEST_F(StateFile, RefusesASequenceLongerThanTheContext) {
  auto small = make_slot(32);
  try {
    read_state_file(file, id, small->backend());
    FAIL() << "a 70-token state loaded into a 32-token context";
  } catch (const StateFileError& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit the context"), std::string::npos) << e.what();
  }
}

TEST_F(StateFile, StoreConfinesClientNamesAndMirrorsTheCache) {
  StateStore store(dir, id);
  EXPECT_EQ(store.client_file("a.bin"), dir / "a.bin");
  for (const char* bad : {"", "../x", "a/b", ".hidden", "..", "cache-0123456789abcdef.tstate"})
    EXPECT_THROW(store.client_file(bad), std::invalid_argument) << bad;

  PromptCache cache(PromptCacheOptions{.budget_mib = 64});
  cache.save(slot->cached_tokens(), slot->backend(), slot->checkpoints());
  StateDirReport w = store.save_cache(cache);
  EXPECT_EQ(w.files, 1);
  EXPECT_TRUE(w.refused.empty());
  // A file of another model beside it: refused by name, left on disk, never loaded.
  write_state_file(dir / "cache-00000000000000ff.tstate", slot->export_state(), StateFileIdentity{id.model_fingerprint ^ 2, id.layout});
  StateStore fresh(dir, id);
  PromptCache loaded(PromptCacheOptions{.budget_mib = 64});
  const StateDirReport r = fresh.load_cache(loaded, slot->backend());
  EXPECT_EQ(r.files, 1);
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_NE(r.refused[0].find("cache-00000000000000ff.tstate"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "cache-00000000000000ff.tstate"));
  ASSERT_EQ(loaded.entries(), 1u);
  EXPECT_EQ(loaded.contents().front().tokens, slot->cached_tokens());
  // Within the budget only: a cache of 0 MiB loads nothing, and says how many it skipped.
  PromptCache none(PromptCacheOptions{.budget_mib = 0});
  StateStore third(dir, id);
  EXPECT_EQ(third.load_cache(none, slot->backend()).skipped, 2);
}

}  // namespace
}  // namespace tandem::serve
