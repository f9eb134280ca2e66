// The messages between the host and the DSP side's op server (hexagon/dsp/op_server.cpp): what
// dspqueue / FastRPC carries on a phone, here over a pipe to qemu-hexagon-static. Each request
// is a header and its payload; each reply a header and its payload (the result, or on a refusal
// the reason, naming the field). Little-endian 32-bit fields on both sides; included by the
// freestanding DSP build, so C headers only.
#pragma once

#include <stdint.h>

namespace tandem::hexagon {

constexpr uint32_t kMagic = 0x50534454;  // "TDSP"
// Bumped on any change of a header or a payload: each side refuses the other's other versions.
constexpr uint32_t kProtocolVersion = 1;
// The largest payload either side accepts (a weight matrix of the 9B shape's is ~60 MB in Q8_0).
constexpr uint32_t kMaxPayloadBytes = 1u << 30;

enum class Op : uint32_t {
  Hello = 1,       // -> the server's version in the reply header
  LoadMatrix = 2,  // type, rows, cols; payload: the gguf rows -> handle
  Matmul = 3,      // handle, n_columns; payload: n_columns Q8_0 rows of cols -> n_columns × rows floats
  Release = 4,     // handle
  Exit = 5,
};

enum class Status : uint32_t { Ok = 0, Refused = 1 };

struct RequestHeader {
  uint32_t magic = kMagic, version = kProtocolVersion, op = 0;
  uint32_t handle = 0, type = 0, rows = 0, cols = 0, n_columns = 0;
  uint32_t payload_bytes = 0;
};

struct ReplyHeader {
  uint32_t magic = kMagic, version = kProtocolVersion, op = 0, status = 0;
  uint32_t handle = 0, payload_bytes = 0;
};

static_assert(sizeof(RequestHeader) == 36 && sizeof(ReplyHeader) == 24);

}  // namespace tandem::hexagon
