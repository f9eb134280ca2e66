#include "serve/lifecycle/state_store.h"
#include "runtime/elapsed.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include "runtime/binary_io.h"

namespace tandem::serve {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kCachePrefix = "cache-";
constexpr std::string_view kCacheSuffix = ".tstate";

bool is_cache_file(std::string_view name) {
  return name.size() > kCachePrefix.size() + kCacheSuffix.size() && name.substr(0, kCachePrefix.size()) == kCachePrefix &&
         name.substr(name.size() - kCacheSuffix.size()) == kCacheSuffix;
}

}  // namespace

std::string cache_file_name(const PromptCacheEntry& e, uint64_t model_fingerprint) {
  Checksum64 h;
  h.update(&model_fingerprint, sizeof model_fingerprint);
  h.update(e.tokens.data(), e.tokens.size() * sizeof(int32_t));
  for (const ImageChunk& c : e.images) h.update(&c, sizeof c);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h.value()));
  return std::string(kCachePrefix) + buf + std::string(kCacheSuffix);
}

StateStore::StateStore(fs::path dir, StateFileIdentity id) : dir_(std::move(dir)), id_(std::move(id)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_, ec))
    throw std::invalid_argument("--state-dir: " + dir_.string() + " is not a directory and cannot be created" +
                                (ec ? ": " + ec.message() : std::string()));
  if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    throw std::invalid_argument("--state-dir: " + dir_.string() + " is not writable");
}

fs::path StateStore::client_file(std::string_view filename) const {
  // A plain character set: letters, digits, '.', '_' and '-' (no separators, no control or
  // direction characters such as a newline or U+202E, which would disguise a name in a listing).
  const bool plain = std::all_of(filename.begin(), filename.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
  const bool bad = filename.empty() || filename.size() > 200 || filename.front() == '.' || !plain || is_cache_file(filename) ||
                   filename.find(".tmp-") != std::string_view::npos;
  if (bad) {
    std::string shown;
    for (const char c : filename.substr(0, 60)) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) {
        shown += c;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", u);
        shown += buf;
      }
    }
    throw std::invalid_argument("filename: expected a plain file name inside the state directory (1 to 200 of "
                                "A-Z a-z 0-9 . _ -, not starting with '.', not cache-*.tstate), got '" + shown + "'");
  }
  return dir_ / std::string(filename);
}

StateDirReport StateStore::save_cache(const PromptCache& cache) {
  const auto t0 = std::chrono::steady_clock::now();
  StateDirReport rep;
  std::set<std::string> kept;
  for (const PromptCacheEntry& e : cache.contents()) {
    if (!e.state) continue;
    const std::string name = cache_file_name(e, id_.model_fingerprint);
    kept.insert(name);
    std::error_code ec;
    if (owned_.count(name) && fs::exists(dir_ / name, ec)) continue;  // the same tokens' state: written already
    try {
      rep.bytes += write_state_file(dir_ / name, e, id_);
      ++rep.files;
      owned_.insert(name);
    } catch (const StateFileError& err) {
      rep.refused.push_back(err.what());
    }
  }
  for (auto it = owned_.begin(); it != owned_.end();) {
    if (kept.count(*it)) {
      ++it;
      continue;
    }
    std::error_code ec;
    fs::remove(dir_ / *it, ec);
    it = owned_.erase(it);
  }
  rep.ms = ms_since(t0);
  return rep;
}

StateDirReport StateStore::load_cache(PromptCache& cache, const StateBackend& backend) {
  const auto t0 = std::chrono::steady_clock::now();
  StateDirReport rep;
  struct Found {
    fs::path path;
    fs::file_time_type mtime;
    uint64_t size;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(dir_, ec)) {
    const std::string name = d.path().filename().string();
    if (!is_cache_file(name)) continue;
    // A link is never followed (read_state_file would refuse it too): say so, and leave it there.
    const fs::file_status st = d.symlink_status(ec);
    if (fs::is_symlink(st)) {
      rep.refused.push_back(d.path().string() + ": refused: it is a symbolic link");
      continue;
    }
    if (!fs::is_regular_file(st)) continue;
    found.push_back({d.path(), d.last_write_time(ec), d.file_size(ec)});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime > b.mtime; });
  std::set<std::string> held;
  for (const PromptCacheEntry& e : cache.contents()) held.insert(cache_file_name(e, id_.model_fingerprint));
  for (const Found& f : found) {
    const std::string name = f.path.filename().string();
    if (held.count(name)) continue;  // in memory already
    if (cache.bytes_used() + f.size > cache.budget_bytes()) {
      ++rep.skipped;
      continue;
    }
    try {
      PromptCacheEntry e = read_state_file(f.path, id_, backend);
      rep.bytes += f.size;
      ++rep.files;
      owned_.insert(name);
      cache.insert_oldest(std::move(e));
    } catch (const StateFileError& err) {
      rep.refused.push_back(err.what());
    }
  }
  rep.ms = ms_since(t0);
  return rep;
}

}  // namespace tandem::serve
