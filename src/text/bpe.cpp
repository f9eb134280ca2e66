#include "text/bpe.h"

#include "text/scratch.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace tandem::text {
namespace {

inline size_t hash_key(uint64_t k) {
  k ^= k >> 29;
  k *= 0xBF58476D1CE4E5B9ull;
  k ^= k >> 32;
  return static_cast<size_t>(k);
}

constexpr int32_t kNoMerge = std::numeric_limits<int32_t>::max();

}  // namespace

void BpeMerges::rehash(size_t capacity) {
  std::vector<Entry> old;
  old.swap(table_);
  table_.assign(capacity, Entry{});
  const size_t mask = capacity - 1;
  for (const Entry& e : old) {
    if (e.key == kEmpty) continue;
    size_t h = hash_key(e.key) & mask;
    while (table_[h].key != kEmpty) h = (h + 1) & mask;
    table_[h] = e;
  }
}

void BpeMerges::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > table_.size()) rehash(cap);
}

void BpeMerges::add(int32_t left, int32_t right, int32_t result, int32_t rank) {
  if ((count_ + 1) * 2 > table_.size()) rehash(std::max<size_t>(16, table_.size() * 2));
  const uint64_t k = key(left, right);
  const size_t mask = table_.size() - 1;
  size_t h = hash_key(k) & mask;
  while (table_[h].key != kEmpty) {
    if (table_[h].key == k) return;  // first rank wins
    h = (h + 1) & mask;
  }
  table_[h] = Entry{k, rank, result};
  ++count_;
}

const BpeMerges::Entry* BpeMerges::find(int32_t l, int32_t r) const {
  if (table_.empty()) return nullptr;
  const uint64_t k = key(l, r);
  const size_t mask = table_.size() - 1;
  size_t h = hash_key(k) & mask;
  while (true) {
    const Entry& e = table_[h];
    if (e.key == k) return &e;
    if (e.key == kEmpty) return nullptr;
    h = (h + 1) & mask;
  }
}

void BpeMerges::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.size() <= kLinearMax) encode_linear(piece, out);
  else encode_heap(piece, out);
}

void BpeMerges::encode_linear(std::string_view piece, std::vector<int32_t>& out) const {
  const size_t n = piece.size();
  if (n == 0) return;
  // Fixed-size stack arrays: no allocation; longer pieces are handed to the heap version.
  if (n > kLinearMax) return encode_heap(piece, out);
  int32_t sym[kLinearMax];
  int32_t rank[kLinearMax];  // rank[i]: merge rank of (sym[i], sym[i+1])
  int32_t res[kLinearMax];
  size_t len = n;
  for (size_t i = 0; i < n; ++i) sym[i] = byte_token_[static_cast<uint8_t>(piece[i])];
  auto pair_rank = [&](size_t i) {
    const Entry* e = find(sym[i], sym[i + 1]);
    rank[i] = e ? e->rank : kNoMerge;
    res[i] = e ? e->result : -1;
  };
  for (size_t i = 0; i + 1 < len; ++i) pair_rank(i);
  while (len > 1) {
    size_t best = 0;
    int32_t best_rank = kNoMerge;
    for (size_t i = 0; i + 1 < len; ++i) {
      if (rank[i] < best_rank) {  // strict: the leftmost of equal ranks wins
        best_rank = rank[i];
        best = i;
      }
    }
    if (best_rank == kNoMerge) break;
    sym[best] = res[best];
    // Remove symbol best+1 and pair entry best (which is now recomputed).
    for (size_t i = best + 1; i + 1 < len; ++i) {
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      res[i] = res[i + 1];
    }
    --len;
    if (best > 0) pair_rank(best - 1);
    if (best + 1 < len) pair_rank(best);
  }
  out.insert(out.end(), sym, sym + len);
}

void BpeMerges::encode_heap(std::string_view piece, std::vector<int32_t>& out) const {
  const size_t n = piece.size();
  if (n == 0) return;
  struct Cand {
    int32_t rank;
    int32_t left;  // symbol index (its original start position: a merged symbol keeps the left's)
    int32_t left_id, right_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  // Per-thread scratch, freed after a piece that grew it past kScratchKeepBytes (text/scratch.h).
  thread_local Scratch<std::vector<int32_t>> sym_s, prev_s, next_s;
  ScratchTrim trim(sym_s, prev_s, next_s);
  std::vector<int32_t>& sym = sym_s.buf;
  std::vector<int32_t>& prev = prev_s.buf;
  std::vector<int32_t>& next = next_s.buf;
  sym.resize(n);
  prev.resize(n);
  next.resize(n);
  for (size_t i = 0; i < n; ++i) {
    sym[i] = byte_token_[static_cast<uint8_t>(piece[i])];
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t l) {
    if (l < 0 || next[l] < 0) return;
    const int32_t r = next[l];
    if (const Entry* e = find(sym[l], sym[r])) heap.push(Cand{e->rank, l, sym[l], sym[r]});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(n); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const int32_t l = c.left;
    const int32_t r = next[l];
    // Stale entry: one side was merged away or changed since this candidate was pushed.
    if (sym[l] < 0 || r < 0 || sym[l] != c.left_id || sym[r] != c.right_id) continue;
    sym[l] = find(sym[l], sym[r])->result;
    sym[r] = -1;
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    push(prev[l]);
    push(l);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out.push_back(sym[i]);
}

}  // namespace tandem::text
