"""Minimal, independent GGUF (v2/v3) reader for the float64 reference implementation.

Written from the public GGUF file-format description (not from the Tandem engine):

    header : magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
    kv     : string key | u32 value_type | value
    tinfo  : string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset
    data   : starts at the first multiple of `general.alignment` (default 32) after the tensor infos;
             each tensor lives at data_start + offset.
    string : u64 length | bytes (UTF-8, no terminator)
    array  : u32 element_type | u64 count | elements

All integers are little-endian. Tensors are returned as float64 numpy arrays in "math shape":
the reverse of ne, i.e. a 2-D tensor with ne {A, B} becomes an array of shape (B, A) (B rows of A).

Supported tensor types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K (block layouts from
ggml-common.h / the GGUF spec). Quantized values are reconstructed exactly in float64 (every product/difference
of an fp16 scale and a small integer is exact there), so casting to float32 gives the same bits as ggml's
dequantize_row_* / gguf-py's dequantize (checked against /work/shared/golden/dequant/*.f32). Anything else
raises NotImplementedError.

Usage:
    g = GGUFFile("model.gguf")
    g.metadata["qwen35.block_count"]      -> python int / float / str / bool / list
    g.tensors["token_embd.weight"]        -> TensorInfo(name, ne, ggml_type, offset)
    g.get("token_embd.weight")            -> np.ndarray float64, math shape
CLI:  /usr/bin/python3 gguf_read.py model.gguf   (prints metadata and tensor table)
"""

import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"

# GGUF metadata value types
_T_UINT8, _T_INT8, _T_UINT16, _T_INT16, _T_UINT32, _T_INT32, _T_FLOAT32 = 0, 1, 2, 3, 4, 5, 6
_T_BOOL, _T_STRING, _T_ARRAY, _T_UINT64, _T_INT64, _T_FLOAT64 = 7, 8, 9, 10, 11, 12

_SCALAR_FMT = {
    _T_UINT8: "<B", _T_INT8: "<b", _T_UINT16: "<H", _T_INT16: "<h",
    _T_UINT32: "<I", _T_INT32: "<i", _T_FLOAT32: "<f", _T_BOOL: "<?",
    _T_UINT64: "<Q", _T_INT64: "<q", _T_FLOAT64: "<d",
}
_SCALAR_NP = {
    _T_UINT8: "<u1", _T_INT8: "<i1", _T_UINT16: "<u2", _T_INT16: "<i2",
    _T_UINT32: "<u4", _T_INT32: "<i4", _T_FLOAT32: "<f4", _T_BOOL: "<u1",
    _T_UINT64: "<u8", _T_INT64: "<i8", _T_FLOAT64: "<f8",
}

# ggml tensor types (ids from ggml.h) -> (name, block size in elements, bytes per block)
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), 30: ("BF16", 1, 2),
}
SUPPORTED = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"}


def _f16(b):
    """(nb, 2) uint8 -> (nb, 1) float64 from little-endian fp16."""
    return np.ascontiguousarray(b).view("<f2").astype(np.float64)


def _qh32(b):
    """(nb, 4) uint8 -> (nb, 1) uint32 (little-endian)."""
    return np.ascontiguousarray(b).view("<u4")


def _nibbles(qs):
    """(nb, 16) packed bytes -> (nb, 32): low nibbles are elements 0..15, high nibbles 16..31."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)


def _high_bits(qh):
    """(nb, 1) uint32 -> (nb, 32) the 5th bit (0 or 16) of element j = bit j of qh."""
    return (((qh >> np.arange(32, dtype=np.uint32)) & 1) << 4).astype(np.int64)


def _scale_min_k4(sc):
    """(nb, 12) packed 6-bit scales/mins of Q4_K/Q5_K -> two (nb, 8) int arrays."""
    sc = sc.astype(np.int64)
    d = np.empty((sc.shape[0], 8), np.int64)
    m = np.empty_like(d)
    d[:, :4] = sc[:, 0:4] & 63
    m[:, :4] = sc[:, 4:8] & 63
    d[:, 4:] = (sc[:, 8:12] & 0x0F) | ((sc[:, 0:4] >> 6) << 4)
    m[:, 4:] = (sc[:, 8:12] >> 4) | ((sc[:, 4:8] >> 6) << 4)
    return d, m


def _k4_quants(qs):
    """(nb, 128) Q4_K/Q5_K nibbles -> (nb, 256): chunk c of 32 bytes gives elements 64c..64c+31 (low) and
    64c+32..64c+63 (high)."""
    q = qs.reshape(-1, 4, 32)
    return np.concatenate([q & 0x0F, q >> 4], axis=2).reshape(-1, 256).astype(np.int64)


def dequantize(raw, type_name):
    """Raw block bytes (uint8) -> flat float64 values, exact."""
    raw = np.asarray(raw)
    if type_name == "Q8_0":
        b = raw.reshape(-1, 34)
        return (_f16(b[:, :2]) * b[:, 2:].copy().view(np.int8)).reshape(-1)
    if type_name == "Q4_0":
        b = raw.reshape(-1, 18)
        return (_f16(b[:, :2]) * (_nibbles(b[:, 2:]) - 8)).reshape(-1)
    if type_name == "Q4_1":
        b = raw.reshape(-1, 20)
        return (_f16(b[:, :2]) * _nibbles(b[:, 4:]) + _f16(b[:, 2:4])).reshape(-1)
    if type_name == "Q5_0":
        b = raw.reshape(-1, 22)
        q = _nibbles(b[:, 6:]) | _high_bits(_qh32(b[:, 2:6]))
        return (_f16(b[:, :2]) * (q - 16)).reshape(-1)
    if type_name == "Q5_1":
        b = raw.reshape(-1, 24)
        q = _nibbles(b[:, 8:]) | _high_bits(_qh32(b[:, 4:8]))
        return (_f16(b[:, :2]) * q + _f16(b[:, 2:4])).reshape(-1)
    if type_name in ("Q4_K", "Q5_K"):
        bs = 144 if type_name == "Q4_K" else 176
        b = raw.reshape(-1, bs)
        d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
        sc, mn = _scale_min_k4(b[:, 4:16])
        if type_name == "Q4_K":
            q = _k4_quants(b[:, 16:144])
        else:
            q = _k4_quants(b[:, 48:176])
            qh = b[:, 16:48].astype(np.int64)                       # (nb, 32): bit 2c / 2c+1 -> chunk c low / high
            hb = np.stack([(qh >> s) & 1 for s in range(8)], axis=1)  # (nb, 8 = sub-block, 32)
            q = q + (hb.reshape(-1, 256) << 4)
        sub = np.repeat(np.arange(8), 32)                           # sub-block of each element
        return (d * sc[:, sub] * q - dmin * mn[:, sub]).reshape(-1)
    if type_name == "Q6_K":
        b = raw.reshape(-1, 210)
        ql, qh = b[:, 0:128].astype(np.int64), b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].copy().view(np.int8).astype(np.int64)
        d = _f16(b[:, 208:210])
        q = np.empty((b.shape[0], 256), np.int64)
        for h in range(2):  # two halves of 128: ql 64 bytes, qh 32 bytes each
            L, H, o = ql[:, 64 * h:64 * h + 64], qh[:, 32 * h:32 * h + 32], 128 * h
            q[:, o + 0:o + 32] = (L[:, :32] & 0x0F) | (((H >> 0) & 3) << 4)
            q[:, o + 32:o + 64] = (L[:, 32:] & 0x0F) | (((H >> 2) & 3) << 4)
            q[:, o + 64:o + 96] = (L[:, :32] >> 4) | (((H >> 4) & 3) << 4)
            q[:, o + 96:o + 128] = (L[:, 32:] >> 4) | (((H >> 6) & 3) << 4)
        return (d * sc[:, np.arange(256) // 16] * (q - 32)).reshape(-1)
    raise NotImplementedError(type_name)


class TensorInfo:
    def __init__(self, name, ne, ggml_type, offset):
        self.name, self.ne, self.ggml_type, self.offset = name, ne, ggml_type, offset

    @property
    def type_name(self):
        return GGML_TYPES.get(self.ggml_type, ("type%d" % self.ggml_type, 0, 0))[0]

    @property
    def n_elements(self):
        n = 1
        for x in self.ne:
            n *= x
        return n

    @property
    def n_bytes(self):
        if self.ggml_type not in GGML_TYPES:
            raise NotImplementedError("unknown ggml type %d (tensor %s)" % (self.ggml_type, self.name))
        _, blk, bpb = GGML_TYPES[self.ggml_type]
        assert self.ne[0] % blk == 0, "row length %d not a multiple of block %d" % (self.ne[0], blk)
        return self.n_elements // blk * bpb

    def __repr__(self):
        return "TensorInfo(%s, ne=%s, %s, off=%d)" % (self.name, self.ne, self.type_name, self.offset)


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def scalar(self, t):
        fmt = _SCALAR_FMT[t]
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def u32(self):
        return self.scalar(_T_UINT32)

    def u64(self):
        return self.scalar(_T_UINT64)

    def string(self):
        n = self.u64()
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def value(self, t):
        if t == _T_STRING:
            return self.string()
        if t == _T_ARRAY:
            et, n = self.u32(), self.u64()
            if et in _SCALAR_NP:  # fast path for numeric arrays (e.g. token types, scores)
                dt = np.dtype(_SCALAR_NP[et])
                arr = np.frombuffer(self.buf, dtype=dt, count=n, offset=self.pos)
                self.pos += n * dt.itemsize
                return [bool(x) for x in arr] if et == _T_BOOL else arr.tolist()
            return [self.value(et) for _ in range(n)]
        if t in _SCALAR_FMT:
            return self.scalar(t)
        raise ValueError("unknown GGUF value type %d at byte %d" % (t, self.pos))


class GGUFFile:
    def __init__(self, path):
        self.path = path
        self.mm = np.memmap(path, dtype=np.uint8, mode="r")
        buf = memoryview(self.mm)
        r = _Reader(buf)
        if bytes(buf[:4]) != GGUF_MAGIC:
            raise ValueError("%s: not a GGUF file (magic %r)" % (path, bytes(buf[:4])))
        r.pos = 4
        self.version = r.u32()
        if self.version not in (2, 3):
            raise ValueError("%s: unsupported GGUF version %d" % (path, self.version))
        n_tensors, n_kv = r.u64(), r.u64()

        self.metadata = {}
        self.metadata_types = {}
        for _ in range(n_kv):
            key = r.string()
            t = r.u32()
            self.metadata[key] = r.value(t)
            self.metadata_types[key] = t

        self.tensors = {}
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.u32()
            ne = [r.u64() for _ in range(n_dims)]
            gt = r.u32()
            off = r.u64()
            self.tensors[name] = TensorInfo(name, ne, gt, off)

        self.alignment = int(self.metadata.get("general.alignment", 32))
        a = self.alignment
        self.data_start = (r.pos + a - 1) // a * a

    # ---- metadata helpers -------------------------------------------------------------------
    def kv(self, key, default=None):
        return self.metadata.get(key, default)

    # ---- tensor access ----------------------------------------------------------------------
    def raw(self, name):
        """Raw bytes of a tensor as a uint8 numpy view."""
        ti = self.tensors[name]
        start = self.data_start + ti.offset
        return self.mm[start:start + ti.n_bytes]

    def get(self, name):
        """Tensor as float64 array in math shape (reverse of ne)."""
        ti = self.tensors[name]
        tn = ti.type_name
        if tn not in SUPPORTED:
            raise NotImplementedError(
                "tensor %s has ggml type %s, which this reference reader does not dequantize "
                "(supported: %s)" % (name, tn, ", ".join(sorted(SUPPORTED))))
        raw = np.asarray(self.raw(name))
        n = ti.n_elements
        if tn == "F32":
            x = raw.view("<f4").astype(np.float64)
        elif tn == "F16":
            x = raw.view("<f2").astype(np.float64)
        elif tn == "BF16":
            u = raw.view("<u2").astype(np.uint32) << 16
            x = u.view("<f4").astype(np.float64)
        else:
            x = dequantize(raw, tn)
        assert x.size == n
        shape = tuple(int(v) for v in reversed(ti.ne))
        return x.reshape(shape)


def _main(argv):
    if len(argv) != 2:
        print("usage: gguf_read.py MODEL.gguf")
        return 2
    g = GGUFFile(argv[1])
    print("GGUF v%d, %d kv, %d tensors, alignment %d, data at %d"
          % (g.version, len(g.metadata), len(g.tensors), g.alignment, g.data_start))
    for k, v in g.metadata.items():
        if isinstance(v, list) and len(v) > 8:
            print("  %-45s [%s, ... (%d items)]" % (k, ", ".join(repr(x) for x in v[:4]), len(v)))
        else:
            print("  %-45s %r" % (k, v))
    for ti in g.tensors.values():
        print("  %-45s %-6s ne=%s" % (ti.name, ti.type_name, ti.ne))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
