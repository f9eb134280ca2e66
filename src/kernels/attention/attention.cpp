#include "kernels/attention/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention/attention_avx2.h"
#include "kernels/attention/attention_neon.h"
#include "kernels/attention/attention_avx512.h"

namespace tandem::kernels {

// The batch as groups of rows: per token, the query heads of one KV head (split in chunks of
// AttentionRows::kMax when a group is larger), each group through attention_rows.
void attention_causal(CpuTier tier, const AttentionInput& in, ScratchBuffer& scratch) {
  const int group = in.n_head / in.n_head_kv;
  const int64_t hd = in.head_dim;
  for (int64_t t = 0; t < in.T; ++t)
    for (int g = 0; g < in.n_head_kv; ++g)
      for (int h0 = g * group; h0 < (g + 1) * group; h0 += AttentionRows::kMax) {
        AttentionRows rows;
        for (int h = h0; h < std::min((g + 1) * group, h0 + AttentionRows::kMax); ++h) {
          rows.q[rows.n] = in.q + t * in.ldq + h * (in.q_head_stride ? in.q_head_stride : hd);
          rows.out[rows.n] = in.out + t * in.ldo + h * hd;
          rows.n_kv[rows.n] = in.pos0 + t + 1;
          ++rows.n;
        }
        attention_rows(tier, rows, in.head_dim, in.scale, in.k_cache + g * hd, in.v_cache + g * hd, in.kv_stride,
                       scratch);
      }
}

void attention_causal_tasks(CpuTier tier, const AttentionInput& in, ThreadPool& pool, ScratchBuffer* per_thread,
                            const std::function<void(const AttentionRows&)>& after) {
  const int nh = in.n_head, nkv = in.n_head_kv, hd = in.head_dim;
  const int64_t qhs = in.q_head_stride ? in.q_head_stride : hd;
  const int group = nh / nkv;
  const int hc = std::min(group, AttentionRows::kMax);      // heads per task
  const int64_t tb = std::max(1, AttentionRows::kMax / hc);  // tokens per task
  const int head_chunks = (group + hc - 1) / hc;
  const int64_t token_blocks = (in.T + tb - 1) / tb;
  pool.parallel_for(token_blocks * nkv * head_chunks, [&](int64_t task, int thread) {
    const int64_t t0 = (task / (nkv * head_chunks)) * tb;
    const int g = static_cast<int>(task / head_chunks % nkv);
    const int h0 = g * group + static_cast<int>(task % head_chunks) * hc;
    const int h1 = std::min(h0 + hc, (g + 1) * group);
    AttentionRows rows;
    for (int64_t t = t0; t < std::min(in.T, t0 + tb); ++t)
      for (int h = h0; h < h1; ++h) {
        rows.q[rows.n] = in.q + t * in.ldq + h * qhs;
        rows.out[rows.n] = in.out + t * in.ldo + static_cast<int64_t>(h) * hd;
        rows.n_kv[rows.n] = in.pos0 + t + 1;
        ++rows.n;
      }
    attention_rows(tier, rows, hd, in.scale, in.k_cache + static_cast<int64_t>(g) * hd,
                   in.v_cache + static_cast<int64_t>(g) * hd, in.kv_stride, per_thread[thread]);
    if (after) after(rows);
  });
}

void attention_rows(CpuTier tier, const AttentionRows& rows, int head_dim, float scale, const float* k_cache,
                    const float* v_cache, int64_t kv_stride, ScratchBuffer& scratch) {
  // The AVX-512, AVX2 and NEON bodies take the same arguments and a scores buffer of n × longest floats.
  using Body = void (*)(int, const float* const*, float* const*, const int64_t*, int, float, const float*,
                        const float*, int64_t, float*);
  Body body = nullptr;
#ifdef TANDEM_ARCH_X86
  body = head_dim % 16 != 0                            ? nullptr
         : tier_has(tier, CpuTier::Avx512Vnni) ? static_cast<Body>(avx512::attention_rows)
         : tier_has(tier, CpuTier::Avx2)       ? static_cast<Body>(avx2::attention_rows)
                                               : nullptr;
#endif
#ifdef TANDEM_ARCH_ARM64
  body = head_dim % 16 == 0 && tier_has(tier, CpuTier::Neon) ? static_cast<Body>(neon::attention_rows) : nullptr;
#endif
  if (body) {
    int64_t longest = 0;
    for (int r = 0; r < rows.n; ++r) longest = rows.n_kv[r] > longest ? rows.n_kv[r] : longest;
    float* scores = scratch.get_as<float>(static_cast<size_t>(rows.n) * static_cast<size_t>(longest));
    body(rows.n, rows.q, rows.out, rows.n_kv, head_dim, scale, k_cache, v_cache, kv_stride, scores);
    return;
  }
  attention_rows_ref(rows, head_dim, scale, k_cache, v_cache, kv_stride, scratch);
}

void attention_rows_ref(const AttentionRows& rows, int head_dim, float scale, const float* k_cache,
                        const float* v_cache, int64_t kv_stride, ScratchBuffer& scratch) {
  for (int r = 0; r < rows.n; ++r) {
    AttentionInput in;
    in.n_head = 1;
    in.n_head_kv = 1;
    in.head_dim = head_dim;
    in.T = 1;
    in.pos0 = rows.n_kv[r] - 1;
    in.scale = scale;
    in.q = rows.q[r];
    in.ldq = head_dim;
    in.k_cache = k_cache;
    in.v_cache = v_cache;
    in.kv_stride = kv_stride;
    in.out = rows.out[r];
    in.ldo = head_dim;
    attention_causal_ref(in, scratch);
  }
}

void attention_causal_ref(const AttentionInput& in, ScratchBuffer& scratch) {
  const int hd = in.head_dim;
  const int group = in.n_head / in.n_head_kv;
  float* scores = scratch.get_as<float>(static_cast<size_t>(in.pos0 + in.T));
  for (int64_t t = 0; t < in.T; ++t) {
    const int64_t n_kv = in.pos0 + t + 1;
    for (int h = 0; h < in.n_head; ++h) {
      const int kvh = h / group;
      const float* q = in.q + t * in.ldq + static_cast<int64_t>(h) * (in.q_head_stride ? in.q_head_stride : hd);
      float mx = -INFINITY;
      for (int64_t p = 0; p < n_kv; ++p) {
        const float* k = in.k_cache + p * in.kv_stride + static_cast<int64_t>(kvh) * hd;
        float s = 0.0f;
        for (int i = 0; i < hd; ++i) s += q[i] * k[i];
        scores[p] = s * in.scale;
        mx = std::fmax(mx, scores[p]);
      }
      double sum = 0.0;
      for (int64_t p = 0; p < n_kv; ++p) {
        scores[p] = std::exp(scores[p] - mx);
        sum += scores[p];
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = in.out + t * in.ldo + static_cast<int64_t>(h) * hd;
      for (int i = 0; i < hd; ++i) o[i] = 0.0f;
      for (int64_t p = 0; p < n_kv; ++p) {
        const float wgt = scores[p] * inv;
        const float* v = in.v_cache + p * in.kv_stride + static_cast<int64_t>(kvh) * hd;
        for (int i = 0; i < hd; ++i) o[i] += wgt * v[i];
      }
    }
  }
}

}  // namespace tandem::kernels
