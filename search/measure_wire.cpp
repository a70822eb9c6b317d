// Frames and field encoding for the measuring worker (see measure_wire.h).
#include "search/measure_wire.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"

namespace fusekit {

void Writer::u64(uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out_.append(b, 8);
}
void Writer::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  u64(bits);
}
void Writer::str(const std::string& s) {
  u64(s.size());
  out_ += s;
}
void Writer::bytes(const std::vector<uint8_t>& b) {
  u64(b.size());
  out_.append(reinterpret_cast<const char*>(b.data()), b.size());
}

uint64_t Reader::u64() {
  if (data_.size() - at_ < 8) throw InternalError("measure worker: truncated message");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[at_ + i])) << (8 * i);
  at_ += 8;
  return v;
}
double Reader::f64() {
  const uint64_t bits = u64();
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}
std::string Reader::str() {
  const uint64_t n = u64();
  if (data_.size() - at_ < n) throw InternalError("measure worker: truncated string");
  std::string s = data_.substr(at_, n);
  at_ += n;
  return s;
}
std::vector<uint8_t> Reader::bytes() {
  const uint64_t n = u64();
  if (data_.size() - at_ < n) throw InternalError("measure worker: truncated bytes");
  std::vector<uint8_t> b(data_.begin() + at_, data_.begin() + at_ + n);
  at_ += n;
  return b;
}

namespace {

void write_dims(Writer& w, const std::vector<int64_t>& dims) {
  w.u64(dims.size());
  for (int64_t d : dims) w.i64(d);
}
std::vector<int64_t> read_dims(Reader& r) {
  std::vector<int64_t> dims(r.u64());
  for (auto& d : dims) d = r.i64();
  return dims;
}
void write_dims_list(Writer& w, const std::vector<std::vector<int64_t>>& list) {
  w.u64(list.size());
  for (const auto& d : list) write_dims(w, d);
}
std::vector<std::vector<int64_t>> read_dims_list(Reader& r) {
  std::vector<std::vector<int64_t>> list(r.u64());
  for (auto& d : list) d = read_dims(r);
  return list;
}
void write_tensors(Writer& w, const std::vector<HostTensor>& ts) {
  w.u64(ts.size());
  for (const auto& t : ts) {
    w.u64(static_cast<uint64_t>(t.dtype));
    write_dims(w, t.dims);
    w.bytes(t.bytes);
  }
}
std::vector<HostTensor> read_tensors(Reader& r) {
  std::vector<HostTensor> ts(r.u64());
  for (auto& t : ts) {
    t.dtype = static_cast<DType>(r.u64());
    t.dims = read_dims(r);
    t.bytes = r.bytes();
  }
  return ts;
}
LaunchExpr read_expr(Reader& r) {
  LaunchExpr e;
  const Status st = LaunchExpr::parse(r.str(), &e);
  if (!st.ok()) throw InternalError("measure worker: " + st.message());
  return e;
}

}  // namespace

void write_device(Writer& w, const DeviceInfo& d) {
  w.str(d.gpu_name);
  w.i64(d.arch.major);
  w.i64(d.arch.minor);
  w.i64(d.sm_count);
  w.f64(d.l2_bytes);
  w.str(d.driver_version);
  w.u64(d.measured);
}
DeviceInfo read_device(Reader& r) {
  DeviceInfo d;
  d.gpu_name = r.str();
  d.arch.major = static_cast<int>(r.i64());
  d.arch.minor = static_cast<int>(r.i64());
  d.sm_count = static_cast<int>(r.i64());
  d.l2_bytes = r.f64();
  d.driver_version = r.str();
  d.measured = r.u64() != 0;
  return d;
}

void write_problem(Writer& w, const HostProblem& p) {
  w.str(p.key);
  write_dims(w, p.problem.domain);
  w.str(p.problem.shape_text);
  write_dims_list(w, p.problem.input_dims);
  write_dims_list(w, p.problem.output_dims);
  write_tensors(w, p.inputs);
  write_tensors(w, p.reference);
  w.f64(p.tolerance.atol);
  w.f64(p.tolerance.rtol);
  w.i64(p.tolerance.row_length);
  w.u64(p.params.size());
  for (float v : p.params) w.f64(v);
}
HostProblem read_problem(Reader& r) {
  HostProblem p;
  p.key = r.str();
  p.problem.domain = read_dims(r);
  p.problem.shape_text = r.str();
  p.problem.input_dims = read_dims_list(r);
  p.problem.output_dims = read_dims_list(r);
  p.inputs = read_tensors(r);
  p.reference = read_tensors(r);
  p.tolerance.atol = r.f64();
  p.tolerance.rtol = r.f64();
  p.tolerance.row_length = r.i64();
  p.params.resize(r.u64());
  for (float& v : p.params) v = static_cast<float>(r.f64());
  return p;
}

void write_options(Writer& w, const MeasureOptions& o) {
  w.u64(o.time);
  w.i64(o.min_samples);
  w.i64(o.max_samples);
  w.f64(o.target_ms);
  w.i64(o.rounds);
  w.u64(o.seed);
  w.f64(o.launch_deadline_s);
}
MeasureOptions read_options(Reader& r) {
  MeasureOptions o;
  o.time = r.u64() != 0;
  o.min_samples = static_cast<int>(r.i64());
  o.max_samples = static_cast<int>(r.i64());
  o.target_ms = r.f64();
  o.rounds = static_cast<int>(r.i64());
  o.seed = r.u64();
  o.launch_deadline_s = r.f64();
  return o;
}

void write_artifact(Writer& w, const KernelArtifact& a) {
  w.str(a.backend);
  w.u64(static_cast<uint64_t>(a.image_kind));
  w.str(a.image);
  w.str(a.entry);
  w.i64(a.target_sm);
  for (int i = 0; i < 3; ++i) w.i64(a.block[i]);
  for (int i = 0; i < 3; ++i) w.str(a.grid[i].to_string());
  w.i64(a.shared_bytes);
  w.u64(a.params.size());
  for (const auto& p : a.params) {
    w.u64(static_cast<uint64_t>(p.kind));
    w.u64(static_cast<uint64_t>(p.type));
    w.i64(p.index);
    w.str(p.expr.to_string());
  }
  w.i64(a.pointer_alignment);
  w.i64(a.row_length);
  w.i64(a.row_multiple);
  w.i64(a.registers);
  w.i64(a.static_shared_bytes);
}
KernelArtifact read_artifact(Reader& r) {
  KernelArtifact a;
  a.backend = r.str();
  a.image_kind = static_cast<ImageKind>(r.u64());
  a.image = r.str();
  a.entry = r.str();
  a.target_sm = static_cast<int>(r.i64());
  for (int i = 0; i < 3; ++i) a.block[i] = static_cast<int>(r.i64());
  for (int i = 0; i < 3; ++i) a.grid[i] = read_expr(r);
  a.shared_bytes = static_cast<int>(r.i64());
  a.params.resize(r.u64());
  for (auto& p : a.params) {
    p.kind = static_cast<KernelParam::Kind>(r.u64());
    p.type = static_cast<KernelParam::Type>(r.u64());
    p.index = static_cast<int>(r.i64());
    p.expr = read_expr(r);
  }
  a.pointer_alignment = static_cast<int>(r.i64());
  a.row_length = r.i64();
  a.row_multiple = static_cast<int>(r.i64());
  a.registers = static_cast<int>(r.i64());
  a.static_shared_bytes = static_cast<int>(r.i64());
  return a;
}

void write_results(Writer& w, const std::vector<MeasureResult>& results) {
  w.u64(results.size());
  for (const auto& m : results) {
    w.u64(static_cast<uint64_t>(m.status));
    w.u64(m.samples_us.size());
    for (double s : m.samples_us) w.f64(s);
    w.f64(m.verify_error);
    w.str(m.error);
  }
}
std::vector<MeasureResult> read_results(Reader& r) {
  std::vector<MeasureResult> out(r.u64());
  for (auto& m : out) {
    m.status = static_cast<RecordStatus>(r.u64());
    m.samples_us.resize(r.u64());
    for (double& s : m.samples_us) s = r.f64();
    m.verify_error = r.f64();
    m.error = r.str();
    m.summarize();
  }
  return out;
}

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

bool write_frame(int fd, WireTag tag, const std::string& body) {
  Writer head;
  head.u64(body.size());
  std::string h = head.data();
  h += static_cast<char>(tag);
  return write_all(fd, h.data(), h.size()) && write_all(fd, body.data(), body.size());
}

FrameRead read_frame(int fd, int timeout_ms, WireTag* tag, std::string* body) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return FrameRead::kTimedOut;
    break;
  }
  char h[9];
  if (!read_all(fd, h, sizeof(h))) return FrameRead::kClosed;
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<uint64_t>(static_cast<uint8_t>(h[i])) << (8 * i);
  if (size > (uint64_t{1} << 40)) return FrameRead::kClosed;
  *tag = static_cast<WireTag>(h[8]);
  body->assign(size, '\0');
  return read_all(fd, body->data(), size) ? FrameRead::kOk : FrameRead::kClosed;
}

}  // namespace fusekit
