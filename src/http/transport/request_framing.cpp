#include "http/transport/request_framing.h"

#include <algorithm>

namespace tandem::http {

namespace {

bool is_tchar(unsigned char c) {
  // RFC 9110 §5.6.2 token characters.
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~': return true;
    default: return false;
  }
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A printable rendering of client bytes for an error message (at most 40 of them).
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out += static_cast<char>(c);
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

// Comma-separated list members, trimmed, empty ones dropped (RFC 9110 §5.6.1).
std::vector<std::string_view> list_members(std::string_view v) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    if (comma == std::string_view::npos) comma = v.size();
    const std::string_view m = trim(v.substr(pos, comma - pos));
    if (!m.empty()) out.push_back(m);
    pos = comma + 1;
  }
  return out;
}

constexpr std::string_view kMethods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};

}  // namespace

std::string_view FramedRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

size_t FramedRequest::header_count(std::string_view name) const {
  size_t n = 0;
  for (const auto& [k, v] : headers) n += iequals(k, name) ? 1 : 0;
  return n;
}

std::string FramedRequest::canonical_head() const {
  std::string out;
  out.reserve(256);
  out += method;
  out += ' ';
  out += target;
  out += ' ';
  out += version;
  out += "\r\n";
  for (const auto& [k, v] : headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\n\r\n";
  return out;
}

bool RequestFramer::fail(int status, std::string message) {
  state_ = State::Error;
  error_ = FramingError{status, std::move(message)};
  return false;
}

void RequestFramer::reset() {
  const FramingLimits limits = limits_;
  *this = RequestFramer(limits);
}

size_t RequestFramer::held_bytes() const {
  return head_.size() + std::max<size_t>(req_.body.size(), static_cast<size_t>(content_length_));
}

size_t RequestFramer::feed(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && (state_ == State::Head || state_ == State::Body)) {
    if (state_ == State::Head) {
      // Empty lines before the request line are skipped (RFC 9112 §2.2: a client may send a CRLF
      // after a POST body).
      if (head_.empty()) {
        const char c = data[used];
        if (c == '\r' || c == '\n') {
          started_ = true;
          ++used;
          if (c == '\n' && line_ == "\r") {
            line_.clear();  // one empty line skipped
          } else if (c == '\r' && line_.empty()) {
            line_ = "\r";
          } else {
            fail(400, c == '\n' ? "a bare LF (line feed without CR) before the request line" : "a bare CR before the request line");
            return used;
          }
          continue;
        }
        if (!line_.empty()) { fail(400, "a bare CR before the request line"); return used; }
      }
      started_ = true;
      // Take bytes up to the end of the head or the limit, whichever comes first.
      const size_t room = limits_.max_head_bytes + 1 - std::min(head_.size(), limits_.max_head_bytes + 1);
      const size_t take = std::min(room, data.size() - used);
      head_.append(data.data() + used, take);
      const size_t from = scan_from_ >= 3 ? scan_from_ - 3 : 0;
      const size_t end = head_.find("\r\n\r\n", from);
      if (end == std::string::npos) {
        scan_from_ = head_.size();
        used += take;
        // A line too long is named as such before the head as a whole is.
        const size_t last_nl = head_.rfind('\n');
        const size_t line_start = last_nl == std::string::npos ? 0 : last_nl + 1;
        if (head_.size() - line_start > limits_.max_line_bytes + 1) {
          if (line_start == 0) fail(414, "the request line is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
          else fail(431, "a header line is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
          return used;
        }
        if (head_.size() > limits_.max_head_bytes) {
          fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
          return used;
        }
        continue;
      }
      // The head ends inside what was just appended: give back the bytes after it.
      const size_t head_len = end + 4;
      if (head_len > limits_.max_head_bytes) {
        fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
        return used + take;
      }
      const size_t extra = head_.size() - head_len;
      head_.resize(head_len);
      used += take - extra;
      if (!parse_head()) return used;
      if (state_ == State::Done) return used;
      continue;
    }
    // Body.
    if (req_.chunked) {
      size_t n = 0;
      const bool ok = feed_chunked(data.substr(used), n);
      used += n;
      if (!ok) return used;
    } else {
      const size_t want = static_cast<size_t>(content_length_) - req_.body.size();
      const size_t take = std::min(want, data.size() - used);
      req_.body.append(data.data() + used, take);
      used += take;
      if (req_.body.size() == content_length_) state_ = State::Done;
    }
  }
  return used;
}

bool RequestFramer::parse_head() {
  // head_ = request-line CRLF *(header CRLF) CRLF
  std::string_view h(head_);
  h.remove_suffix(2);  // the blank line's CRLF; every line below ends in CRLF
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == '\n' && (i == 0 || h[i - 1] != '\r')) return fail(400, "a bare LF (line feed without CR) in the request head");
    if (h[i] == '\r' && (i + 1 >= h.size() || h[i + 1] != '\n')) return fail(400, "a bare CR in the request head");
  }
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < h.size()) {
    const size_t e = h.find("\r\n", pos);
    lines.push_back(h.substr(pos, e - pos));
    pos = e + 2;
  }
  if (lines.empty()) return fail(400, "an empty request head");
  for (const auto& l : lines)
    if (l.size() > limits_.max_line_bytes)
      return fail(&l == &lines.front() ? 414 : 431, std::string(&l == &lines.front() ? "the request line" : "a header line") +
                                                        " is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
  if (lines.size() - 1 > limits_.max_headers)
    return fail(431, "more than " + std::to_string(limits_.max_headers) + " header lines");

  // Request line: method SP request-target SP HTTP-version, single spaces (RFC 9112 §3).
  const std::string_view rl = lines[0];
  const size_t sp1 = rl.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "a malformed request line " + quoted(rl) + " (expected METHOD TARGET HTTP/1.1)");
  const std::string_view method = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = rl.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); }))
    return fail(400, "a malformed method " + quoted(method));
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.')
      return fail(505, "HTTP version " + quoted(version) + " is not supported (HTTP/1.1 or HTTP/1.0)");
    return fail(400, "a malformed HTTP version " + quoted(version));
  }
  if (std::find(std::begin(kMethods), std::end(kMethods), method) == std::end(kMethods))
    return fail(501, "method " + quoted(method) + " is not implemented");
  if (target.empty()) return fail(400, "an empty request target");
  for (const char ch : target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return fail(400, "the request target " + quoted(target) + " holds a control, space or non-ASCII byte");
  }
  if (target.front() != '/' && !(target == "*" && method == "OPTIONS"))
    return fail(400, "the request target " + quoted(target) + " is not a path (origin form: it must start with '/')");
  req_.method = std::string(method);
  req_.target = std::string(target);
  req_.version = std::string(version);

  // Header lines: field-name ":" OWS field-value OWS (RFC 9112 §5).
  size_t n_length = 0, n_te = 0, n_host = 0;
  std::string_view length_value, te_value;
  bool conn_close = false, conn_keep_alive = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    if (l.front() == ' ' || l.front() == '\t')
      return fail(400, "an obsolete folded header line (a line starting with whitespace): " + quoted(l));
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos) return fail(400, "a header line without a colon: " + quoted(l));
    const std::string_view name = l.substr(0, colon);
    if (name.empty()) return fail(400, "a header line with an empty name: " + quoted(l));
    for (const char ch : name) {
      if (ch == ' ' || ch == '\t') return fail(400, "whitespace between a header name and its colon: " + quoted(l));
      if (!is_tchar(static_cast<unsigned char>(ch))) return fail(400, "a header name with an invalid character: " + quoted(name));
    }
    const std::string_view value = trim(l.substr(colon + 1));
    for (const char ch : value) {
      const auto c = static_cast<unsigned char>(ch);
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        return fail(400, "a control byte in the value of header " + quoted(name));
    }
    if (iequals(name, "Content-Length")) {
      ++n_length;
      length_value = value;
      continue;
    }
    if (iequals(name, "Transfer-Encoding")) {
      ++n_te;
      te_value = value;
      continue;
    }
    if (iequals(name, "Expect")) {
      if (!iequals(value, "100-continue")) return fail(417, "Expect " + quoted(value) + " is not supported (only 100-continue)");
      req_.expect_continue = true;
      continue;
    }
    if (iequals(name, "Content-Encoding")) {
      if (iequals(value, "identity")) continue;
      return fail(415, "Content-Encoding " + quoted(value) + " is not accepted: send the request body uncompressed");
    }
    if (iequals(name, "Host")) ++n_host;
    if (iequals(name, "Connection")) {
      for (const auto m : list_members(value)) {
        conn_close = conn_close || iequals(m, "close");
        conn_keep_alive = conn_keep_alive || iequals(m, "keep-alive");
      }
    }
    req_.headers.emplace_back(std::string(name), std::string(value));
  }
  const bool http11 = req_.version == "HTTP/1.1";
  if (http11 && n_host == 0) return fail(400, "an HTTP/1.1 request without a Host header");
  if (n_host > 1) return fail(400, "more than one Host header");
  req_.keep_alive = http11 ? !conn_close : (conn_keep_alive && !conn_close);

  // Body framing (RFC 9112 §6.1-6.3).
  if (n_te > 0) {
    if (n_length > 0) return fail(400, "both Transfer-Encoding and Content-Length: the body's length is ambiguous");
    if (!http11) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (n_te > 1) return fail(400, "more than one Transfer-Encoding header");
    const auto codings = list_members(te_value);
    if (codings.size() != 1 || !iequals(codings[0], "chunked"))
      return fail(501, "Transfer-Encoding " + quoted(te_value) + " is not supported (only chunked)");
    req_.chunked = true;
    state_ = State::Body;
    return true;
  }
  if (n_length > 1) return fail(400, "more than one Content-Length header");
  if (n_length == 1) {
    if (length_value.empty() || length_value.size() > 19 ||
        !std::all_of(length_value.begin(), length_value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return fail(400, "Content-Length " + quoted(length_value) + " is not a number of bytes");
    uint64_t n = 0;
    for (const char c : length_value) n = n * 10 + static_cast<uint64_t>(c - '0');
    if (n > limits_.max_body_bytes)
      return fail(413, "the request body (" + std::to_string(n) + " bytes) is larger than the limit of " +
                           std::to_string(limits_.max_body_bytes) + " bytes");
    content_length_ = n;
  }
  // No Content-Length and no Transfer-Encoding: no body (never read until the client closes).
  state_ = content_length_ == 0 ? State::Done : State::Body;
  if (content_length_ > 0) req_.body.reserve(static_cast<size_t>(content_length_));
  return true;
}

bool RequestFramer::feed_chunked(std::string_view data, size_t& used) {
  constexpr size_t kMaxSizeLine = 1024;   // chunk size + extensions
  constexpr size_t kMaxTrailerLines = 32;
  while (used < data.size()) {
    switch (chunk_) {
      case Chunk::Size:
      case Chunk::Trailer: {
        const size_t nl = data.find('\n', used);
        const size_t end = nl == std::string_view::npos ? data.size() : nl + 1;
        line_.append(data.data() + used, end - used);
        used = end;
        if (line_.size() > kMaxSizeLine && chunk_ == Chunk::Size)
          return fail(400, "a chunk-size line longer than " + std::to_string(kMaxSizeLine) + " bytes");
        if (chunk_ == Chunk::Trailer && line_.size() > limits_.max_line_bytes)
          return fail(431, "a trailer line is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
        if (nl == std::string_view::npos) return true;
        if (line_.size() < 2 || line_[line_.size() - 2] != '\r') return fail(400, "a bare LF in the chunked body");
        std::string_view l(line_);
        l.remove_suffix(2);
        if (l.find('\r') != std::string_view::npos) return fail(400, "a bare CR in the chunked body");
        if (chunk_ == Chunk::Trailer) {
          if (l.empty()) {
            state_ = State::Done;
            return true;
          }
          // Trailer fields are read and dropped (none changes this request), but checked as headers.
          if (++trailer_lines_ > kMaxTrailerLines) return fail(431, "more than " + std::to_string(kMaxTrailerLines) + " trailer lines");
          const size_t colon = l.find(':');
          if (colon == std::string_view::npos || colon == 0) return fail(400, "a trailer line without a field name and colon: " + quoted(l));
          for (size_t i = 0; i < colon; ++i)
            if (!is_tchar(static_cast<unsigned char>(l[i]))) return fail(400, "a trailer name with an invalid character: " + quoted(l));
          line_.clear();
          continue;
        }
        // chunk-size [ ";" chunk-ext ]: hex digits, no sign, no whitespace before them.
        const size_t semi = l.find(';');
        std::string_view hex = semi == std::string_view::npos ? l : l.substr(0, semi);
        while (!hex.empty() && (hex.back() == ' ' || hex.back() == '\t')) hex.remove_suffix(1);  // BWS before ';'

        if (hex.empty() || hex.size() > 15)
          return fail(400, "a malformed chunk size " + quoted(l) + " (expected 1 to 15 hex digits)");
        uint64_t n = 0;
        for (const char c : hex) {
          int d = -1;
          if (c >= '0' && c <= '9') d = c - '0';
          else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
          else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
          if (d < 0) return fail(400, "a malformed chunk size " + quoted(l) + " (expected hex digits)");
          n = n * 16 + static_cast<uint64_t>(d);
        }
        for (const char c : l)
          if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return fail(400, "a control byte in a chunk extension");
        line_.clear();
        if (n == 0) {
          chunk_ = Chunk::Trailer;
          continue;
        }
        if (n > limits_.max_body_bytes - req_.body.size())
          return fail(413, "the chunked request body is larger than the limit of " + std::to_string(limits_.max_body_bytes) +
                               " bytes");
        chunk_left_ = n;
        chunk_ = Chunk::Data;
        break;
      }
      case Chunk::Data: {
        const size_t take = std::min(static_cast<size_t>(chunk_left_), data.size() - used);
        req_.body.append(data.data() + used, take);
        used += take;
        chunk_left_ -= take;
        if (chunk_left_ == 0) chunk_ = Chunk::DataEnd;
        break;
      }
      case Chunk::DataEnd: {
        // The CRLF after a chunk's data, possibly split across reads.
        line_ += data[used++];
        if (line_ == "\r") break;
        if (line_ != "\r\n") return fail(400, "a chunk's data is not followed by CRLF (its size is wrong)");
        line_.clear();
        chunk_ = Chunk::Size;
        break;
      }
    }
  }
  return true;
}

FramedAll frame_all(std::string_view bytes, const FramingLimits& limits) {
  FramedAll out;
  RequestFramer f(limits);
  while (!bytes.empty()) {
    const size_t n = f.feed(bytes);
    bytes.remove_prefix(n);
    if (f.state() == RequestFramer::State::Error) {
      out.refused = true;
      out.error = f.error();
      return out;
    }
    if (f.state() != RequestFramer::State::Done) break;
    out.requests.push_back(std::move(f.request()));
    f.reset();
  }
  out.incomplete = f.started();
  return out;
}

const char* status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

}  // namespace tandem::http
