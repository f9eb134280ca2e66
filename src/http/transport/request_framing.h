// Strict HTTP/1.x request framing (issue 51): bytes from a client -> one request (method, target,
// headers, the whole body) or a refusal with its status and a message that names the problem.
//
// This is where the server decides where a request ends, so it refuses every shape that two
// parsers could read differently (request smuggling behind a proxy) instead of guessing:
//   - lines end in CRLF; a bare CR or LF, a header line without a colon, whitespace before the
//     colon, an obsolete folded line, a control byte in a value: 400;
//   - Content-Length: digits only, at most once; with Transfer-Encoding too: 400;
//   - Transfer-Encoding: "chunked" alone (another coding: 501; in HTTP/1.0: 400);
//   - one body limit for every transfer encoding (413), checked before the bytes are held: a
//     Content-Length above it is refused from the head, a chunked body as soon as it passes it;
//   - a request without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3): answered
//     at once, never waited for;
//   - HTTP/1.1 needs exactly one Host (400); only HTTP/1.0 and 1.1 (505); Expect: 100-continue
//     alone (417); a request Content-Encoding other than identity: 415 (the router would inflate it
//     without a limit);
//   - the head (request line + headers) is bounded in bytes (431), lines (431) and the request line
//     (414).
// Every refusal closes the connection: after a framing error nothing on it can be trusted.
//
// The framer is incremental (feed() as bytes arrive, from any split) and holds no socket: the
// transport feeds it, the fuzz target (fuzz/http_fuzz.cpp) and the tests feed it strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::http {

struct FramingLimits {
  size_t max_head_bytes = 64u << 10;     // request line + headers + the blank line
  size_t max_line_bytes = 8u << 10;      // one line of the head (cpp-httplib's own limits are 8 KiB)
  size_t max_headers = 100;              // header lines
  size_t max_body_bytes = 32u << 20;     // after de-chunking, whatever the transfer encoding
};

struct FramedRequest {
  std::string method;   // GET, POST, ...
  std::string target;   // as sent: origin-form "/path?query" (or "*" for OPTIONS)
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  // The end-to-end headers as sent (name case kept, value trimmed), without the framing ones
  // (Content-Length, Transfer-Encoding, Expect, Content-Encoding: identity), which this layer
  // consumed.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;              // de-chunked
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive
  bool expect_continue = false;  // "Expect: 100-continue" was sent
  bool chunked = false;          // the body came chunked

  // The first value of a header (case-insensitive name), or empty.
  std::string_view header(std::string_view name) const;
  size_t header_count(std::string_view name) const;
  // The request line and headers as canonical HTTP/1.1 text with "Content-Length: <body size>"
  // and the blank line: what the router (cpp-httplib's request reader) reads, followed by body.
  std::string canonical_head() const;
};

struct FramingError {
  int status = 400;
  std::string message;
};

class RequestFramer {
 public:
  enum class State {
    Head,   // reading the request line and headers
    Body,   // the head is complete (head_complete()); reading the body
    Done,   // request() holds the whole request
    Error,  // error() says why; the connection must be closed after the answer
  };

  explicit RequestFramer(FramingLimits limits = {}) : limits_(limits) {}

  // Consumes bytes of `data` and returns how many: all of them unless the request ended (Done)
  // or was refused (Error) inside it; the rest belongs to the next request (pipelining).
  size_t feed(std::string_view data);

  State state() const { return state_; }
  bool started() const { return started_; }          // a byte of this request has arrived
  bool head_complete() const { return state_ == State::Body || state_ == State::Done; }
  const FramingError& error() const { return error_; }
  // The request so far (complete in Done; method, target, headers from head_complete()).
  FramedRequest& request() { return req_; }
  const FramedRequest& request() const { return req_; }
  // Bytes this request holds or has announced: head + max(body so far, Content-Length). The
  // transport charges them to its budget of buffered request bytes before it reads them.
  size_t held_bytes() const;
  // Starts over for the next request on the same connection (keeps the limits).
  void reset();

 private:
  bool fail(int status, std::string message);
  bool parse_head();                         // head_ holds the whole head
  bool feed_chunked(std::string_view data, size_t& used);

  FramingLimits limits_;
  State state_ = State::Head;
  bool started_ = false;
  FramingError error_;
  FramedRequest req_;
  std::string head_;           // the head's bytes so far
  size_t scan_from_ = 0;       // where to look for the end of the head next
  uint64_t content_length_ = 0;
  // Chunked decoding.
  enum class Chunk { Size, Data, DataEnd, Trailer } chunk_ = Chunk::Size;
  std::string line_;           // the current chunk-size or trailer line
  uint64_t chunk_left_ = 0;
  size_t trailer_lines_ = 0;
};

// Frames every request in `bytes` (pipelined requests included); stops at the first refusal or
// at an incomplete request. For the fuzz target and tests.
struct FramedAll {
  std::vector<FramedRequest> requests;
  bool refused = false;
  FramingError error;
  bool incomplete = false;  // bytes of an unfinished request are left over
};
FramedAll frame_all(std::string_view bytes, const FramingLimits& limits = {});

// The reason phrase of a status this server sends ("Bad Request").
const char* status_reason(int status);

}  // namespace tandem::http
