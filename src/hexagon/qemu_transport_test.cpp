// The transport's failures and the op server's refusals: a dead or hung DSP side is an error
// naming the op within the timeout, never a hang; a malformed op is refused with the field named,
// and the server goes on serving (or, when the stream cannot be framed any more, stops).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "hexagon/hexagon_test_util.h"

namespace tandem::hexagon {
namespace {

// The error's text, or "" when `f` did not throw a HexagonError.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const HexagonError& e) {
    return e.what();
  }
  return "";
}

TEST(QemuTransport, ADeadDspSideIsAnErrorNamingTheOp) {
  const std::string e = error_of([] { QemuTransport t({"/bin/true"}, 5000); });
  EXPECT_NE(e.find("Hello"), std::string::npos) << e;
  EXPECT_NE(e.find("the op server exited"), std::string::npos) << e;  // before reading, or before answering
}

TEST(QemuTransport, AHungDspSideTimesOutAndIsKilled) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([] { QemuTransport t({"/bin/sleep", "30"}, 300); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(e.find("Hello"), std::string::npos) << e;
  EXPECT_NE(e.find("no answer from the op server in 300 ms"), std::string::npos) << e;
}

TEST(QemuTransport, AMissingProgramIsAnError) {
  const std::string e = error_of([] { QemuTransport t({"/nonexistent/qemu-hexagon-static"}, 5000); });
  EXPECT_NE(e.find("Hello"), std::string::npos) << e;
}

// A request with one field changed from a well-formed LoadMatrix of 2 x 64 Q8_0.
RequestHeader load_request() {
  RequestHeader r;
  r.op = static_cast<uint32_t>(Op::LoadMatrix);
  r.type = 8;
  r.rows = 2;
  r.cols = 64;
  r.payload_bytes = 2 * 2 * 34;
  return r;
}

TEST(HexagonOpServer, RefusesMalformedOpsNamingTheField) {
  TANDEM_OP_SERVER_OR_SKIP(dsp);
  const std::vector<uint8_t> payload(1 << 16, 0);
  const auto refusal = [&](RequestHeader r) { return error_of([&] { dsp->call(r, payload.data()); }); };
  // Each: one field of a well-formed LoadMatrix changed, and what the refusal must say.
  const std::vector<std::pair<void (*)(RequestHeader&), std::string>> cases = {
      {[](RequestHeader& r) { r.op = 77; }, "op 77 is unknown"},
      {[](RequestHeader& r) { r.type = 0; }, "type 0 has no HVX kernel"},
      {[](RequestHeader& r) { r.cols = 48; r.payload_bytes = 0; }, "cols 48"},
      {[](RequestHeader& r) { r.rows = 0; }, "rows 0"},
      {[](RequestHeader& r) { r.payload_bytes -= 1; }, "payload_bytes 135"},
      {[](RequestHeader& r) { r.version = 2; }, "version 2"},
  };
  for (const auto& [change, expected] : cases) {
    RequestHeader r = load_request();
    change(r);
    const std::string e = refusal(r);
    EXPECT_NE(e.find(expected), std::string::npos) << e;
  }
  // Matmul against a handle never given, with too many columns, with a short payload.
  const uint32_t m = dsp->load_matrix(GgmlType::Q8_0, 2, 64, payload.data());
  RequestHeader mm;
  mm.op = static_cast<uint32_t>(Op::Matmul);
  mm.handle = m + 1;
  mm.n_columns = 1;
  mm.payload_bytes = 68;
  EXPECT_NE(refusal(mm).find("handle"), std::string::npos) << refusal(mm);
  mm.handle = m;
  mm.n_columns = 9;
  mm.payload_bytes = 9 * 68;
  EXPECT_NE(refusal(mm).find("n_columns 9"), std::string::npos) << refusal(mm);
  mm.n_columns = 2;
  mm.payload_bytes = 68;
  EXPECT_NE(refusal(mm).find("payload_bytes 68"), std::string::npos) << refusal(mm);
  // The host refuses a type without a kernel before sending anything.
  EXPECT_NE(error_of([&] { dsp->load_matrix(GgmlType::F32, 2, 64, payload.data()); }).find("no HVX kernel for weight type F32"),
            std::string::npos);
  // Still serving after every refusal.
  std::vector<float> out(2);
  dsp->matmul(m, payload.data(), 1, out.data());
  EXPECT_EQ(out[0], 0.0f);
  dsp->release(m);
  EXPECT_NE(error_of([&] { dsp->release(m); }).find("Release: handle"), std::string::npos);
}

TEST(HexagonOpServer, StopsOnAStreamOutOfStepAndTheNextOpFails) {
  TANDEM_OP_SERVER_OR_SKIP(dsp);
  RequestHeader r = load_request();
  r.magic = 0x12345678;
  r.payload_bytes = 0;
  const std::string e = error_of([&] { dsp->call(r, nullptr); });
  EXPECT_NE(e.find("magic"), std::string::npos) << e;
  const std::string next = error_of([&] { dsp->release(1); });
  EXPECT_NE(next.find("Release"), std::string::npos) << next;
}

}  // namespace
}  // namespace tandem::hexagon
