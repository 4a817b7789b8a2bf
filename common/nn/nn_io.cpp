/* nn_io.cpp - a network's bytes: the weights and training-state buffers
 * (save, peek, load, copy; their layout below and in docs/nn.md) and the
 * export of one or more networks to a torch.save file, written here byte
 * by byte. The design notes are at the top of nn.cpp. */

#include "nn_impl.hpp"

extern "C" {
#include "bytes.h"
#include "ckpt.h"
}

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

/* ------------------------------------------------------------ byte order */

static void pb__put_floats(uint8_t *p, const float *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    std::memcpy(&u, &f[i], 4);
    pb_le_put32(p + 4 * i, u);
  }
}
static void pb__get_floats(float *f, const uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = pb_le_get32(p + 4 * i);
    std::memcpy(&f[i], &u, 4);
  }
}

/* ------------------------------------------------------ weights / state */

/* Buffer layout (all little-endian):
 *   0  magic "PBNN" (weights) or "PBNS" (training state)
 *   4  u32 format version: 1, or 2 for networks with residual blocks or
 *      norms (format 1 readers refuse those rather than misread them)
 *   8  9 x i32 spec: planes height width outputs head conv_layers
 *      conv_channels dense_layers dense_units
 *  44  u32 spec extension: res_blocks (bits 0-15), norm (bits 16-23);
 *      0 in format 1
 *  48  u64 tag: model version (weights) or Adam step count (state)
 *  56  u64 parameter count N
 *  64  f32 theta[N]; state only: f32 m[N], f32 v[N]
 *  end u32 CRC-32 of every byte before it */
enum { PB__HDR = 64, PB__FMT = 1, PB__FMT_EXT = 2 };
static const char PB__MAGIC_W[4] = {'P', 'B', 'N', 'N'};
static const char PB__MAGIC_S[4] = {'P', 'B', 'N', 'S'};

namespace {
struct pb__hdr {
  pb_nn_spec_t spec;
  uint64_t tag;
  int64_t count;
};
}  // namespace

static void pb__write_hdr(uint8_t *p, const char magic[4], const pb_nn *nn,
                          uint64_t tag) {
  std::memcpy(p, magic, 4);
  uint32_t ext = (uint32_t)nn->spec.res_blocks |
                 (uint32_t)nn->spec.norm << 16;
  pb_le_put32(p + 4, ext ? PB__FMT_EXT : PB__FMT);
  int f[PB__NSPEC];
  pb__spec_fields(&nn->spec, f);
  for (int i = 0; i < 9; i++) pb_le_put32(p + 8 + 4 * i, (uint32_t)f[i]);
  pb_le_put32(p + 44, ext);
  pb_le_put64(p + 48, tag);
  pb_le_put64(p + 56, (uint64_t)nn->nparams);
}

/* Validates a weights (state = false) or state buffer: length, magic,
 * declared size, (if check_crc) the checksum, format version, then that the
 * spec is valid and agrees with the parameter count. Fills *h. */
static int pb__parse(const uint8_t *buf, size_t len, bool state, bool check_crc,
                     pb__hdr *h, const char *where, pb_err_t *err) {
  const char *kind = state ? "training-state" : "weights";
  if (buf == nullptr)
    return pb_err_set(err, PB_EINVAL, "%s: buffer is NULL", where);
  if (len < PB__HDR + 4)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: %s buffer truncated: %zu bytes, shorter than the "
                      "%d-byte header and checksum",
                      where, kind, len, PB__HDR + 4);
  const char *want = state ? PB__MAGIC_S : PB__MAGIC_W;
  const char *other = state ? PB__MAGIC_W : PB__MAGIC_S;
  if (std::memcmp(buf, want, 4) != 0) {
    if (std::memcmp(buf, other, 4) == 0)
      return pb_err_set(err, PB_EMISMATCH,
                        "%s: this is a %s buffer, not a %s buffer", where,
                        state ? "weights" : "training-state", kind);
    return pb_err_set(err, PB_ECORRUPT, "%s: not a probs %s buffer (bad magic)",
                      where, kind);
  }
  uint64_t count = pb_le_get64(buf + 56);
  uint64_t per = state ? 3 : 1;
  if (count > (uint64_t)PB__MAX_PARAMS ||
      (uint64_t)len != PB__HDR + 4 * per * count + 4)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: %s buffer is %zu bytes but its header declares "
                      "%llu parameters (truncated or corrupt)",
                      where, kind, len, (unsigned long long)count);
  if (check_crc) {
    uint32_t have = pb_le_get32(buf + len - 4);
    uint32_t crc = pb_crc32(0, buf, len - 4);
    if (have != crc)
      return pb_err_set(err, PB_ECORRUPT,
                        "%s: %s buffer checksum mismatch (stored %08x, "
                        "computed %08x): corrupt",
                        where, kind, have, crc);
  }
  /* After the checksum, so that damage reads as corruption and only an
   * intact buffer of another format reads as unsupported. */
  uint32_t fmt = pb_le_get32(buf + 4), ext = pb_le_get32(buf + 44);
  if (fmt != PB__FMT && fmt != PB__FMT_EXT)
    return pb_err_set(err, PB_EUNSUPP,
                      "%s: %s format version %u is not supported (this build "
                      "reads versions %d and %d)",
                      where, kind, fmt, PB__FMT, PB__FMT_EXT);
  if ((fmt == PB__FMT) != (ext == 0) || (ext >> 24) != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: %s buffer of format %u has spec extension %08x",
                      where, kind, fmt, ext);
  int f[9];
  for (int i = 0; i < 9; i++) f[i] = (int)(int32_t)pb_le_get32(buf + 8 + 4 * i);
  pb_nn_spec_t s;
  s.planes = f[0];
  s.height = f[1];
  s.width = f[2];
  s.outputs = f[3];
  s.head = f[4];
  s.conv_layers = f[5];
  s.conv_channels = f[6];
  s.dense_layers = f[7];
  s.dense_units = f[8];
  s.res_blocks = (int)(ext & 0xFFFF);
  s.norm = (int)(ext >> 16 & 0xFF);
  pb_err_t sub;
  if (pb__spec_check(&s, &sub) != 0)
    return pb_err_set(err, PB_ECORRUPT, "%s: %s buffer holds a bad spec (%s)",
                      where, kind, sub.msg);
  if (pb__count(&s) != (int64_t)count)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: %s buffer declares %llu parameters but its spec "
                      "has %lld",
                      where, kind, (unsigned long long)count,
                      (long long)pb__count(&s));
  h->spec = s;
  h->tag = pb_le_get64(buf + 48);
  h->count = (int64_t)count;
  return 0;
}

/* Serialises nn as weights or state into a malloc'd buffer. */
static int pb__save(const pb_nn *nn, bool state, uint64_t tag, uint8_t **out,
                    size_t *len, const char *where, pb_err_t *err) {
  if (nn == nullptr || out == nullptr || len == nullptr)
    return pb_err_set(err, PB_EINVAL, "%s: NULL argument", where);
  *out = nullptr;
  *len = 0;
  return pb__guard(err, where, [&]() -> int {
    int64_t n = nn->nparams;
    size_t total = PB__HDR + 4 * (size_t)n * (state ? 3 : 1) + 4;
    std::vector<torch::Tensor> parts = {pb__cpu(nn->theta)};
    if (state) {
      parts.push_back(pb__cpu(nn->m));
      parts.push_back(pb__cpu(nn->v));
    }
    uint8_t *p = (uint8_t *)std::malloc(total);
    if (p == nullptr)
      return pb_err_set(err, PB_ENOMEM, "%s: cannot allocate %zu bytes", where,
                        total);
    pb__write_hdr(p, state ? PB__MAGIC_S : PB__MAGIC_W, nn, tag);
    size_t off = PB__HDR;
    for (const auto &t : parts) {
      pb__put_floats(p + off, t.data_ptr<float>(), n);
      off += 4 * (size_t)n;
    }
    pb_le_put32(p + off, pb_crc32(0, p, off));
    *out = p;
    *len = total;
    return 0;
  });
}

extern "C" int pb_nn_weights_save(const pb_nn_t *nn, uint64_t version,
                                  uint8_t **out, size_t *len, pb_err_t *err) {
  return pb__save(nn, false, version, out, len, "pb_nn_weights_save", err);
}

extern "C" int pb_nn_state_save(const pb_nn_t *nn, uint8_t **out, size_t *len,
                                pb_err_t *err) {
  return pb__save(nn, true, nn ? (uint64_t)nn->step : 0, out, len,
                  "pb_nn_state_save", err);
}

extern "C" int pb_nn_weights_peek(const uint8_t *buf, size_t len,
                                  pb_nn_spec_t *spec, uint64_t *version,
                                  pb_err_t *err) {
  pb__hdr h;
  int rc = pb__parse(buf, len, false, false, &h, "pb_nn_weights_peek", err);
  if (rc) return rc;
  if (spec) *spec = h.spec;
  if (version) *version = h.tag;
  return 0;
}

extern "C" int pb_nn_state_peek(const uint8_t *buf, size_t len,
                                pb_nn_spec_t *spec, pb_err_t *err) {
  pb__hdr h;
  int rc = pb__parse(buf, len, true, false, &h, "pb_nn_state_peek", err);
  if (rc) return rc;
  if (spec) *spec = h.spec;
  return 0;
}

/* Decodes `k` float blocks of a checked buffer into nn (theta, m, v). All
 * checks have passed before this runs, so nn is only touched on success. */
static int pb__load(pb_nn *nn, const uint8_t *buf, size_t len, bool state,
                    uint64_t *tag, const char *where, pb_err_t *err) {
  if (nn == nullptr)
    return pb_err_set(err, PB_EINVAL, "%s: network is NULL", where);
  pb__hdr h;
  int rc = pb__parse(buf, len, state, true, &h, where, err);
  if (rc) return rc;
  if ((rc = pb__spec_equal(&h.spec, &nn->spec, where, err))) return rc;
  return pb__guard(err, where, [&]() -> int {
    int64_t n = nn->nparams;
    int k = state ? 3 : 1;
    torch::Tensor host = torch::empty({k, n}, torch::kFloat32);
    pb__get_floats(host.data_ptr<float>(), buf + PB__HDR, k * n);
    torch::Tensor dev = nn->device.is_cpu() ? host : host.to(nn->device);
    torch::NoGradGuard no_grad;
    nn->theta.detach().copy_(dev[0]);
    nn->theta_gen++;
    if (state) {
      nn->m.copy_(dev[1]);
      nn->v.copy_(dev[2]);
      nn->step = (int64_t)h.tag;
    }
    if (tag) *tag = h.tag;
    return 0;
  });
}

extern "C" int pb_nn_weights_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                                  uint64_t *version, pb_err_t *err) {
  return pb__load(nn, buf, len, false, version, "pb_nn_weights_load", err);
}

extern "C" int pb_nn_state_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                                pb_err_t *err) {
  return pb__load(nn, buf, len, true, nullptr, "pb_nn_state_load", err);
}

extern "C" int pb_nn_copy_weights(pb_nn_t *dst, const pb_nn_t *src,
                                  pb_err_t *err) {
  if (dst == nullptr || src == nullptr)
    return pb_err_set(err, PB_EINVAL, "pb_nn_copy_weights: NULL network");
  if (dst == src) return 0;
  int rc = pb__spec_equal(&src->spec, &dst->spec, "pb_nn_copy_weights", err);
  if (rc) return rc;
  return pb__guard(err, "pb_nn_copy_weights", [&]() -> int {
    torch::NoGradGuard no_grad;
    dst->theta.detach().copy_(src->theta.detach());
    dst->theta_gen++;
    return 0;
  });
}

/* ------------------------------------------------------------- export */

/* The export is written in torch.save's own file format, by hand, rather
 * than with torch::pickle_save: pickle_save tags its containers with
 * torch.jit._pickle.restore_type_tag, which torch.load refuses under
 * weights_only=True, the default from PyTorch 2.6 on. The format is a
 * zip archive (stored, not compressed) holding
 *   archive/data.pkl   pickle (protocol 2) of {name: tensor}, each tensor
 *                      torch._utils._rebuild_tensor_v2(storage, 0, size,
 *                      stride, False, OrderedDict()) with the storage a
 *                      persistent id ('storage', torch.FloatStorage, key,
 *                      'cpu', numel)
 *   archive/data/<key> the raw little-endian float32 values
 *   archive/version    "3\n"
 *   archive/byteorder  "little"
 * It only names globals that the weights_only unpickler allows, and does
 * not depend on the libtorch version at all. */

namespace {
struct pb__pickle {
  std::string s;
  void op(char c) {
    s.push_back(c);
  }
  void u32(uint32_t x) {
    for (int i = 0; i < 4; i++) s.push_back((char)(uint8_t)(x >> (8 * i)));
  }
  void str(const std::string &x) { /* BINUNICODE */
    op('X');
    u32((uint32_t)x.size());
    s += x;
  }
  void integer(int64_t x) { /* BININT: 32-bit signed */
    op('J');
    u32((uint32_t)(int32_t)x);
  }
  void global(const char *module, const char *name) {
    op('c');
    s += module;
    s += '\n';
    s += name;
    s += '\n';
  }
  void tuple(const std::vector<int64_t> &v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }
};

struct pb__zip {
  struct entry {
    std::string name;
    uint32_t crc, size, offset;
  };
  std::string out;
  std::vector<entry> entries;

  void u16(uint16_t x) {
    out.push_back((char)(x & 0xFF));
    out.push_back((char)(x >> 8));
  }
  void u32(uint32_t x) {
    for (int i = 0; i < 4; i++) out.push_back((char)(uint8_t)(x >> (8 * i)));
  }
  /* One stored member. Data starts on a 64-byte boundary (an extra field
   * pads the local header), as torch.save does, so that torch.load(mmap=True)
   * can map it. */
  void add(const std::string &name, const void *data, size_t n) {
    entry e{name, pb_crc32(0, data, n), (uint32_t)n,
            (uint32_t)out.size()};
    size_t before = out.size() + 30 + name.size() + 4;
    size_t pad = (64 - before % 64) % 64;
    u32(0x04034b50);
    u16(20);   /* version needed: 2.0 */
    u16(0);    /* flags */
    u16(0);    /* method: stored */
    u16(0);    /* time */
    u16(0x21); /* date: 1980-01-01 */
    u32(e.crc);
    u32(e.size);
    u32(e.size);
    u16((uint16_t)name.size());
    u16((uint16_t)(4 + pad));
    out += name;
    u16(0x4246); /* extra field id, as PyTorch's padding field */
    u16((uint16_t)pad);
    out.append(pad, 'Z');
    out.append((const char *)data, n);
    entries.push_back(e);
  }
  void finish() {
    uint32_t cd = (uint32_t)out.size();
    for (const entry &e : entries) {
      u32(0x02014b50);
      u16(20); /* made by */
      u16(20); /* needed */
      u16(0);
      u16(0);
      u16(0);
      u16(0x21);
      u32(e.crc);
      u32(e.size);
      u32(e.size);
      u16((uint16_t)e.name.size());
      u16(0); /* extra */
      u16(0); /* comment */
      u16(0); /* disk */
      u16(0); /* internal attributes */
      u32(0); /* external attributes */
      u32(e.offset);
      out += e.name;
    }
    uint32_t cd_size = (uint32_t)out.size() - cd;
    u32(0x06054b50);
    u16(0);
    u16(0);
    u16((uint16_t)entries.size());
    u16((uint16_t)entries.size());
    u32(cd_size);
    u32(cd);
    u16(0);
  }
};
}  // namespace

extern "C" int pb_nn_export_torch(pb_nn_t *const *nets,
                                  const char *const *prefix, int n,
                                  const char *path, pb_err_t *err) {
  if (nets == nullptr || prefix == nullptr || path == nullptr || n < 1)
    return pb_err_set(err, PB_EINVAL,
                      "pb_nn_export_torch: need n >= 1 networks, prefixes "
                      "and a path");
  for (int i = 0; i < n; i++)
    if (nets[i] == nullptr || prefix[i] == nullptr || prefix[i][0] == '\0')
      return pb_err_set(err, PB_EINVAL,
                        "pb_nn_export_torch: network or prefix %d is missing",
                        i);
  return pb__guard(err, "pb_nn_export_torch", [&]() -> int {
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> blobs;
    std::vector<const pb__param *> params;
    for (int i = 0; i < n; i++) {
      const pb_nn *nn = nets[i];
      torch::Tensor flat = pb__cpu(nn->theta);
      for (const pb__param &p : nn->params) {
        std::string key = std::string(prefix[i]) + "." + p.name;
        for (const std::string &k : keys)
          if (k == key)
            return pb_err_set(err, PB_EINVAL,
                              "pb_nn_export_torch: duplicate key \"%s\" (two "
                              "networks with the same prefix?)",
                              key.c_str());
        std::vector<uint8_t> b((size_t)p.numel * 4);
        pb__put_floats(b.data(), flat.data_ptr<float>() + p.offset, p.numel);
        keys.push_back(key);
        blobs.push_back(std::move(b));
        params.push_back(&p);
      }
    }
    if (keys.size() > 60000)
      return pb_err_set(err, PB_EINVAL, "pb_nn_export_torch: too many tensors");

    pb__pickle pk;
    pk.op('\x80');
    pk.op(2); /* PROTO 2 */
    pk.op('}');
    pk.op('(');
    for (size_t i = 0; i < keys.size(); i++) {
      const pb__param &p = *params[i];
      std::vector<int64_t> stride(p.shape.size());
      int64_t st = 1;
      for (size_t d = p.shape.size(); d-- > 0;) {
        stride[d] = st;
        st *= p.shape[d];
      }
      pk.str(keys[i]);
      pk.global("torch._utils", "_rebuild_tensor_v2");
      pk.op('(');
      pk.op('(');
      pk.str("storage");
      pk.global("torch", "FloatStorage");
      pk.str(std::to_string(i));
      pk.str("cpu");
      pk.integer(p.numel);
      pk.op('t');
      pk.op('Q'); /* BINPERSID */
      pk.integer(0);
      pk.tuple(p.shape);
      pk.tuple(stride);
      pk.op('\x89'); /* NEWFALSE: requires_grad */
      pk.global("collections", "OrderedDict");
      pk.op(')');
      pk.op('R');
      pk.op('t');
      pk.op('R');
    }
    pk.op('u'); /* SETITEMS */
    pk.op('.');

    pb__zip zip;
    zip.add("archive/data.pkl", pk.s.data(), pk.s.size());
    for (size_t i = 0; i < keys.size(); i++)
      zip.add("archive/data/" + std::to_string(i), blobs[i].data(),
              blobs[i].size());
    zip.add("archive/version", "3\n", 2);
    zip.add("archive/byteorder", "little", 6);
    zip.finish();
    if (zip.out.size() > 0xFFFFFFF0u)
      return pb_err_set(err, PB_EINVAL,
                        "pb_nn_export_torch: %zu bytes is too large for a "
                        "zip without zip64",
                        zip.out.size());

    /* Written beside the target and renamed, so a reader never sees half a
     * file. */
    std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr)
      return pb_err_set(err, PB_EIO, "pb_nn_export_torch: cannot create %s: %s",
                        tmp.c_str(), std::strerror(errno));
    bool ok =
        std::fwrite(zip.out.data(), 1, zip.out.size(), f) == zip.out.size();
    int e = errno;
    if (std::fclose(f) != 0 && ok) {
      ok = false;
      e = errno;
    }
    if (!ok || std::rename(tmp.c_str(), path) != 0) {
      if (ok) e = errno;
      std::remove(tmp.c_str());
      return pb_err_set(err, PB_EIO, "pb_nn_export_torch: cannot write %s: %s",
                        path, std::strerror(e));
    }
    return 0;
  });
}
