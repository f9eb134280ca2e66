// The state directory (--state-dir, docs/serving.md "States on disk"): the prompt cache's entries
// mirrored as files, and the files of llama.cpp's slot save/restore API, under one folder.
//
//   cache-<digest>.tstate  one prompt-cache entry each (the slots are saved into the cache first):
//                          written when the engine unloads or stops, loaded when it starts or
//                          reloads, newest first while they fit the cache's byte budget.
//   <filename>             POST /slots/{id}?action=save|restore, a client's name, confined here.
// Files this store did not write or load (another model's, a refused one) are never deleted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "serve/lifecycle/state_file.h"
#include "serve/slot/prompt_cache.h"

namespace tandem::serve {

struct StateDirReport {
  int files = 0;            // written, or loaded
  uint64_t bytes = 0;
  double ms = 0;
  int skipped = 0;          // loading: files left on disk because the budget was full
  std::vector<std::string> refused;  // "file: why" for each file refused (never loaded) or not written
};

class StateStore {
 public:
  // Creates dir when missing. Throws std::invalid_argument when it is not a writable directory.
  StateStore(std::filesystem::path dir, StateFileIdentity id);

  const std::filesystem::path& dir() const { return dir_; }
  const StateFileIdentity& identity() const { return id_; }

  // A client's file name inside the directory: 1 to 200 of A-Z a-z 0-9 . _ -, not starting with
  // '.', not a cache file's or a temporary file's name. Throws std::invalid_argument.
  std::filesystem::path client_file(std::string_view filename) const;

  // Writes every entry as a cache file (one already on disk with these tokens is kept as it is)
  // and removes the cache files this store wrote or loaded whose entries are gone.
  StateDirReport save_cache(const PromptCache& cache);
  // Loads the cache files, newest first, while the cache's budget holds them.
  StateDirReport load_cache(PromptCache& cache, const StateBackend& backend);

 private:
  std::filesystem::path dir_;
  StateFileIdentity id_;
  std::set<std::string> owned_;  // cache files this store wrote or loaded
};

// The cache file name of an entry with these tokens and images.
std::string cache_file_name(const PromptCacheEntry& e, uint64_t model_fingerprint);

}  // namespace tandem::serve
