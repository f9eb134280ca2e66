#include "http/transport/request_framing.h"

#include <gtest/gtest.h>

namespace tandem::http {
namespace {

FramedAll frame(const std::string& bytes, size_t max_body = 1 << 20) {
  FramingLimits l;
  l.max_body_bytes = max_body;
  return frame_all(bytes, l);
}

// The refusal of `bytes`, which must be one.
FramingError refusal(const std::string& bytes, size_t max_body = 1 << 20) {
  const FramedAll a = frame(bytes, max_body);
  EXPECT_TRUE(a.refused) << bytes;
  return a.error;
}

TEST(HttpFraming, ASimpleRequestAndItsCanonicalForm) {
  const FramedAll a = frame("POST /tokenize?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
                            "Content-Length: 2\r\n\r\n{}");
  ASSERT_FALSE(a.refused) << a.error.message;
  ASSERT_EQ(a.requests.size(), 1u);
  const FramedRequest& r = a.requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/tokenize?x=1");
  EXPECT_EQ(r.body, "{}");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.canonical_head(),
            "POST /tokenize?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n");
}

TEST(HttpFraming, EveryByteSplitGivesTheSameRequest) {
  const std::string req =
      "POST /completion HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n0a\r\n, world!!!\r\n0\r\nX-Trailer: 1\r\n\r\n"
      "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  for (size_t step = 1; step <= 7; ++step) {
    FramingLimits l;
    RequestFramer f(l);
    std::vector<FramedRequest> got;
    size_t pos = 0;
    std::string rest;
    while (pos < req.size()) {
      rest += req.substr(pos, step);
      pos += step;
      while (!rest.empty()) {
        const size_t n = f.feed(rest);
        rest.erase(0, n);
        ASSERT_NE(f.state(), RequestFramer::State::Error) << f.error().message;
        if (f.state() != RequestFramer::State::Done) break;
        got.push_back(f.request());
        f.reset();
      }
    }
    ASSERT_EQ(got.size(), 2u) << "step " << step;
    EXPECT_EQ(got[0].body, "hello, world!!!");
    EXPECT_TRUE(got[0].chunked);
    EXPECT_EQ(got[1].target, "/health");
    EXPECT_FALSE(got[1].keep_alive);
  }
}

TEST(HttpFraming, TheIssueReproducersAreRefusedWithTheirReason) {
  // Two differing Content-Length headers (and two equal ones: no guessing).
  FramingError e = refusal("POST /completion HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x");
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("more than one Content-Length"), std::string::npos) << e.message;
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}").status, 400);
  // A header line without a colon.
  e = refusal("GET /health HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n");
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("without a colon"), std::string::npos) << e.message;
  // Transfer-Encoding with Content-Length.
  e = refusal("POST /completion HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("both Transfer-Encoding and Content-Length"), std::string::npos) << e.message;
  // A chunked body past the limit: refused as soon as a chunk size passes it.
  e = refusal("POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n", 1 << 20);
  EXPECT_EQ(e.status, 413);
  EXPECT_NE(e.message.find("larger than the limit"), std::string::npos) << e.message;
  // ... the same by many small chunks.
  std::string many = "POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 300; ++i) many += "1000\r\n" + std::string(4096, 'x') + "\r\n";
  EXPECT_EQ(refusal(many, 1 << 20).status, 413);
  // ... and by Content-Length, from the head alone.
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\n\r\n", 1 << 20).status, 413);
}

TEST(HttpFraming, MalformedHeadsAreRefused) {
  struct Case {
    const char* bytes;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {"GET /health HTTP/1.1\nHost: a\r\n\r\n", 400, "bare LF"},
      {"GET /health HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", 400, "bare CR"},
      {"GET /health HTTP/1.1\r\nHost : a\r\n\r\n", 400, "whitespace between a header name"},
      {"GET /health HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400, "folded"},
      {"GET /health HTTP/1.1\r\nHost: a\x01\r\n\r\n", 400, "control byte"},
      {"GET /health HTTP/1.1\r\n\r\n", 400, "without a Host"},
      {"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host"},
      {"GET /health HTTP/2.0\r\nHost: a\r\n\r\n", 505, "not supported"},
      {"GET  /health HTTP/1.1\r\nHost: a\r\n\r\n", 400, "malformed request line"},
      {"BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n", 501, "not implemented"},
      {"GET http://evil/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "not a path"},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "not a number of bytes"},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", 400, "not a number of bytes"},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "not a number of bytes"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "only chunked"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "only chunked"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "more than one"},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx", 415, "uncompressed"},
      {"POST / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417, "100-continue"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "chunk size"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400, "chunk size"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 400, "not followed by CRLF"},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nbad trailer\r\n\r\n", 400, "trailer"},
  };
  for (const Case& c : cases) {
    const FramingError e = refusal(c.bytes);
    EXPECT_EQ(e.status, c.status) << c.bytes << " -> " << e.message;
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.bytes << " -> " << e.message;
  }
}

TEST(HttpFraming, HeadLimits) {
  EXPECT_EQ(refusal("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n").status, 414);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(9000, 'a') + "\r\n\r\n").status, 431);
  std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refusal(many + "\r\n").status, 431);
  // The limit holds while the head is still arriving (a client that never ends its head).
  std::string endless = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 2000; ++i) endless += "X-Long-Name: " + std::string(50, 'v') + "\r\n";
  const FramedAll a = frame(endless);
  EXPECT_TRUE(a.refused);
  EXPECT_EQ(a.error.status, 431);
}

TEST(HttpFraming, NoBodyWithoutALengthAndKeepAliveRules) {
  // A POST without Content-Length or Transfer-Encoding has no body: complete at once.
  FramedAll a = frame("POST /slots/1?action=erase HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(a.requests.size(), 1u);
  EXPECT_TRUE(a.requests[0].body.empty());
  EXPECT_FALSE(a.incomplete);
  a = frame("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n");
  ASSERT_EQ(a.requests.size(), 3u);
  EXPECT_FALSE(a.requests[0].keep_alive);
  EXPECT_TRUE(a.requests[1].keep_alive);
  EXPECT_FALSE(a.requests[2].keep_alive);
  // Empty lines before a request line are skipped; an incomplete request is reported.
  a = frame("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab");
  EXPECT_EQ(a.requests.size(), 1u);
  EXPECT_TRUE(a.incomplete);
  a = frame("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx");
  ASSERT_EQ(a.requests.size(), 1u);
  EXPECT_TRUE(a.requests[0].expect_continue);
  EXPECT_EQ(a.requests[0].header_count("Expect"), 0u);  // consumed here, not passed on
}

}  // namespace
}  // namespace tandem::http
