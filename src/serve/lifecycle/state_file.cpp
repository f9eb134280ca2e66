#include "serve/lifecycle/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/binary_io.h"

namespace tandem::serve {

namespace {

constexpr char kMagic[8] = {'T', 'N', 'D', 'M', 'S', 'T', 'A', 'T'};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

struct Header {
  uint64_t fingerprint = 0;
  std::string layout;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

void write_header(std::FILE* f, const std::string& name, const Header& h) {
  BinaryWriter w(f, name);
  w.write(kMagic, sizeof kMagic);
  w.pod<uint32_t>(kStateFileVersion);
  w.pod<uint32_t>(0);
  w.pod<uint64_t>(h.fingerprint);
  w.string(h.layout);
  w.pod<uint64_t>(h.payload_bytes);
  w.pod<uint64_t>(h.payload_checksum);
  const uint64_t sum = w.checksum().value();
  w.pod<uint64_t>(sum);
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void write_payload(BinaryWriter& w, const PromptCacheEntry& e) {
  w.pod<uint64_t>(e.tokens.size());
  w.write(e.tokens.data(), e.tokens.size() * sizeof(int32_t));
  w.pod<uint64_t>(e.images.size());
  for (const ImageChunk& c : e.images) {
    w.pod<int64_t>(c.begin);
    w.pod<int32_t>(c.nx);
    w.pod<int32_t>(c.ny);
    w.pod<uint64_t>(c.id);
  }
  e.state->write(w);
  w.pod<uint64_t>(e.checkpoints.size());
  for (const Checkpoint& c : e.checkpoints) {
    w.pod<int64_t>(c.pos);
    w.pod<uint8_t>(static_cast<uint8_t>(c.origin));
    w.pod<uint64_t>(c.request);
    w.pod<uint64_t>(c.last_use);
    w.pod<uint64_t>(c.bytes);
    w.pod<uint64_t>(c.state.data.size());
    w.write(c.state.data.data(), c.state.data.size() * sizeof(float));
  }
}

}  // namespace

uint64_t write_state_file(const std::filesystem::path& path, const PromptCacheEntry& e, const StateFileIdentity& id) {
  if (!e.state) throw StateFileError(path.string() + ": nothing to write (the entry has no sequence)");
  const std::string name = path.string();
  // A name that is taken by anything but a regular file (a symbolic link planted in the directory,
  // a folder, a FIFO) is refused: the rename below would replace a link rather than write through
  // it, but a link there is somebody's doing and the operator should hear of it.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw StateFileError(name + ": refused: " + (S_ISLNK(st.st_mode) ? "it is a symbolic link" : "it is not a regular file") +
                         "; nothing was written");
  // The temporary file: an unpredictable name created with O_EXCL (mkostemp, mode 0600), so that
  // no link or file prepared in advance under its name is opened or written through.
  std::string tmp_name = name + ".tmp-XXXXXX";
  const int tmp_fd = ::mkostemp(tmp_name.data(), O_CLOEXEC);
  if (tmp_fd < 0) throw StateFileError(name + ": cannot create a temporary file beside it: " + std::strerror(errno));
  const std::filesystem::path tmp = tmp_name;
  try {
    File f(::fdopen(tmp_fd, "wb"));
    if (!f) {
      ::close(tmp_fd);
      throw StateFileError(name + ": cannot open " + tmp.string() + ": " + std::strerror(errno));
    }
    Header h{id.model_fingerprint, id.layout, 0, 0};
    write_header(f.get(), name, h);  // placeholder: the payload's size and checksum follow it
    BinaryWriter w(f.get(), name);
    write_payload(w, e);
    h.payload_bytes = w.bytes();
    h.payload_checksum = w.checksum().value();
    if (std::fseek(f.get(), 0, SEEK_SET) != 0) throw StateFileError(name + ": seek failed");
    write_header(f.get(), name, h);
    if (std::fflush(f.get()) != 0 || ::fsync(::fileno(f.get())) != 0)
      throw StateFileError(name + ": cannot sync " + tmp.string() + ": " + std::strerror(errno));
    f.reset();
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw StateFileError(name + ": cannot rename " + tmp.string() + " into place: " + ec.message());
    // The rename itself reaches the disk with the directory.
    const int dfd = ::open(path.parent_path().empty() ? "." : path.parent_path().c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return std::filesystem::file_size(path);
  } catch (const BinaryFormatError& err) {
    std::filesystem::remove(tmp);
    throw StateFileError(err.what());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

PromptCacheEntry read_state_file(const std::filesystem::path& path, const StateFileIdentity& id,
                                 const StateBackend& backend) {
  const std::string name = path.string();
  // No symbolic link is followed (O_NOFOLLOW: a link planted in the state directory could point at
  // any file the server may read), no FIFO waited on (O_NONBLOCK), and what was opened must be a
  // regular file (checked on the descriptor, so nothing can be swapped in between).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw StateFileError(name + ": refused: it is a symbolic link");
    throw StateFileError(name + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw StateFileError(name + ": refused: not a regular file");
  }
  File f(::fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    throw StateFileError(name + ": cannot open: " + std::strerror(errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  try {
    BinaryReader hr(f.get(), size, name);
    char magic[8];
    hr.read(magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) hr.fail("not a Tandem state file (bad magic)");
    const auto version = hr.pod<uint32_t>();
    if (version != kStateFileVersion)
      hr.fail("state file version " + std::to_string(version) + ", this server reads version " +
              std::to_string(kStateFileVersion));
    hr.pod<uint32_t>();
    Header h;
    h.fingerprint = hr.pod<uint64_t>();
    h.layout = hr.string();
    h.payload_bytes = hr.pod<uint64_t>();
    h.payload_checksum = hr.pod<uint64_t>();
    const uint64_t sum = hr.checksum().value();
    if (hr.pod<uint64_t>() != sum) hr.fail("the header is corrupted (checksum mismatch)");
    if (h.fingerprint != id.model_fingerprint)
      hr.fail("written for another model file (fingerprint " + hex(h.fingerprint) + ", this model's is " +
              hex(id.model_fingerprint) + "); not loaded");
    if (h.layout != id.layout)
      hr.fail("written for another state layout (\"" + h.layout + "\", this server's is \"" + id.layout + "\"); not loaded");
    const uint64_t header_bytes = size - hr.left();
    if (h.payload_bytes != hr.left())
      hr.fail("truncated or padded: the header announces " + std::to_string(header_bytes + h.payload_bytes) +
              " bytes, the file has " + std::to_string(size));

    BinaryReader r(f.get(), h.payload_bytes, name);
    PromptCacheEntry e;
    const uint64_t n_tokens = r.count(sizeof(int32_t), "tokens");
    if (static_cast<int64_t>(n_tokens) > backend.n_ctx())
      r.fail(std::to_string(n_tokens) + " tokens do not fit the context of " + std::to_string(backend.n_ctx()));
    e.tokens.resize(n_tokens);
    r.read(e.tokens.data(), n_tokens * sizeof(int32_t));
    const uint64_t n_images = r.count(2 * sizeof(int64_t) + 2 * sizeof(int32_t), "images");
    int64_t prev_end = 0;
    for (uint64_t i = 0; i < n_images; ++i) {
      ImageChunk c;
      c.begin = r.pod<int64_t>();
      c.nx = r.pod<int32_t>();
      c.ny = r.pod<int32_t>();
      c.id = r.pod<uint64_t>();
      if (c.nx <= 0 || c.ny <= 0 || c.begin < prev_end || c.end() > static_cast<int64_t>(n_tokens))
        r.fail("image " + std::to_string(i) + " is not a valid span of the tokens (corrupted)");
      prev_end = c.end();
      e.images.push_back(c);
    }
    // Every token a vocabulary id, or inside an image its placeholder (serve/slot/prompt.h).
    const int64_t n_vocab = backend.n_vocab();
    size_t im = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(n_tokens); ++i) {
      while (im < e.images.size() && e.images[im].end() <= i) ++im;
      const int32_t t = e.tokens[static_cast<size_t>(i)];
      const bool in_image = im < e.images.size() && e.images[im].begin <= i;
      const bool ok = in_image ? t == image_placeholder(e.images[im].id) : (t >= 0 && (n_vocab == 0 || t < n_vocab));
      if (!ok) r.fail("token " + std::to_string(i) + " (" + std::to_string(t) + ") is not valid for this model (corrupted)");
    }
    e.state = backend.read_sequence(r);
    if (e.state->n_tokens() != static_cast<int64_t>(n_tokens))
      r.fail("the sequence holds " + std::to_string(e.state->n_tokens()) + " rows for " + std::to_string(n_tokens) +
             " tokens (corrupted)");
    const uint64_t n_cp = r.count(5 * sizeof(uint64_t), "checkpoints");
    // A checkpoint holds the recurrent state (the dry run keeps no floats).
    const uint64_t cp_floats = backend.n_vocab() == 0 ? 0 : backend.checkpoint_bytes() / sizeof(float);
    int64_t prev_pos = 0;
    for (uint64_t i = 0; i < n_cp; ++i) {
      Checkpoint c;
      c.pos = r.pod<int64_t>();
      const auto origin = r.pod<uint8_t>();
      c.request = r.pod<uint64_t>();
      c.last_use = r.pod<uint64_t>();
      c.bytes = r.pod<uint64_t>();
      const auto n_floats = r.pod<uint64_t>();
      if (c.pos <= prev_pos || c.pos > static_cast<int64_t>(n_tokens) ||
          origin > static_cast<uint8_t>(kLastCheckpointOrigin) || n_floats != cp_floats ||
          c.bytes != backend.checkpoint_bytes())
        r.fail("checkpoint " + std::to_string(i) + " does not fit the sequence or this layout (corrupted)");
      prev_pos = c.pos;
      c.origin = static_cast<CheckpointOrigin>(origin);
      c.state.pos = c.pos;
      c.state.data.resize(n_floats);
      r.read(c.state.data.data(), n_floats * sizeof(float));
      e.checkpoints.push_back(std::move(c));
    }
    if (r.left() != 0) r.fail(std::to_string(r.left()) + " bytes follow the checkpoints (corrupted)");
    if (r.checksum().value() != h.payload_checksum) r.fail("corrupted (the payload's checksum does not match)");
    return e;
  } catch (const BinaryFormatError& err) {
    throw StateFileError(err.what());
  }
}

}  // namespace tandem::serve
