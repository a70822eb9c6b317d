// Frames and field encoding for the measuring worker (see measure_wire.h).
#include "search/measure_wire.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "common/errors.h"
#include "common/parallel_chunks.h"

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
void Writer::bytes(const uint8_t* data, size_t size) {
  u64(size);
  if (bulk_)
    bulk_->push_back({data, size});
  else
    out_.append(reinterpret_cast<const char*>(data), size);
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
namespace {

// memcpy in parallel chunks of at least 1 MiB (parallel_chunks).
void parallel_copy(uint8_t* to, const uint8_t* from, size_t n) {
  parallel_chunks(static_cast<int64_t>(n), [&](int64_t begin, int64_t end, size_t) {
    std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin));
  });
}

}  // namespace

template <class Bytes>
void Reader::bytes(Bytes* out) {
  const uint64_t n = u64();
  const uint8_t* from = nullptr;
  if (shared_) {
    if (bulk_.size - bulk_at_ < n) throw InternalError("measure worker: truncated shared bytes");
    from = bulk_.data + bulk_at_;
    bulk_at_ += n;
  } else {
    if (data_.size() - at_ < n) throw InternalError("measure worker: truncated bytes");
    from = reinterpret_cast<const uint8_t*>(data_.data()) + at_;
    at_ += n;
  }
  out->resize(n);  // HostBytes: unwritten, so the parallel copy is what faults its pages in
  if (n > 0) parallel_copy(out->data(), from, n);
}
template void Reader::bytes(std::vector<uint8_t>*);
template void Reader::bytes(HostBytes*);

namespace {

// The fields of each message in wire order: one list per message, walked
// by Encode to write and by Decode to read, so the two cannot drift apart.
template <class Io, class M>
void walk(Io& io, M& m) {
  using T = std::remove_const_t<M>;
  if constexpr (std::is_same_v<T, DeviceInfo>) {
    io.fields(m.gpu_name, m.arch.major, m.arch.minor, m.sm_count, m.l2_bytes, m.driver_version, m.measured);
  } else if constexpr (std::is_same_v<T, HostTensor>) {
    io.fields(m.dtype, m.dims, m.bytes);
  } else if constexpr (std::is_same_v<T, Problem>) {
    io.fields(m.domain, m.shape_text, m.input_dims, m.output_dims);
  } else if constexpr (std::is_same_v<T, Tolerance>) {
    io.fields(m.atol, m.rtol, m.row_length);
  } else if constexpr (std::is_same_v<T, HostProblem>) {
    io.fields(m.key, m.problem, m.inputs, m.reference, m.slack, m.tolerance, m.params);
  } else if constexpr (std::is_same_v<T, MeasureOptions>) {
    io.fields(m.time, m.min_samples, m.max_samples, m.target_ms, m.rounds, m.seed, m.launch_deadline_s,
              m.queued);
  } else if constexpr (std::is_same_v<T, KernelParam>) {
    io.fields(m.kind, m.type, m.index, m.expr);
  } else if constexpr (std::is_same_v<T, KernelArtifact>) {
    io.fields(m.backend, m.image_kind, m.image, m.entry, m.target_sm, m.block, m.grid, m.shared_bytes, m.params,
              m.pointer_alignment, m.row_length, m.row_multiple, m.registers, m.static_shared_bytes);
  } else if constexpr (std::is_same_v<T, MeasureResult>) {
    // Without the summary fields: the reader recomputes them from the samples.
    io.fields(m.status, m.samples_us, m.verify_error, m.error);
  } else {
    static_assert(sizeof(T) == 0, "no field list for this message type");
  }
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

// Writes a value: bools, enums and unsigned as u64, signed integers as i64,
// floating point as f64, a vector as its size then its elements, a fixed
// array as its elements, a message as its field list (walk).
class Encode {
 public:
  explicit Encode(Writer& w) : w_(w) {}
  void operator()(const std::string& s) { w_.str(s); }
  void operator()(const std::vector<uint8_t>& b) { w_.bytes(b.data(), b.size()); }
  void operator()(const HostBytes& b) { w_.bytes(b.data(), b.size()); }
  void operator()(const LaunchExpr& e) { w_.str(e.to_string()); }
  template <class... V>
  void fields(const V&... v) {
    ((*this)(v), ...);
  }
  template <class T>
  void operator()(const T& v) {
    if constexpr (std::is_enum_v<T> || std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      w_.u64(static_cast<uint64_t>(v));
    } else if constexpr (std::is_integral_v<T>) {
      w_.i64(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      w_.f64(v);
    } else if constexpr (std::is_array_v<T>) {
      for (const auto& e : v) (*this)(e);
    } else if constexpr (IsVector<T>::value) {
      w_.u64(v.size());
      for (const auto& e : v) (*this)(e);
    } else {
      walk(*this, v);
    }
  }

 private:
  Writer& w_;
};

// Reads back what Encode wrote, value for value.
class Decode {
 public:
  explicit Decode(Reader& r) : r_(r) {}
  void operator()(std::string& s) { s = r_.str(); }
  void operator()(std::vector<uint8_t>& b) { r_.bytes(&b); }
  void operator()(HostBytes& b) { r_.bytes(&b); }
  void operator()(LaunchExpr& e) {
    LaunchExpr parsed;
    const Status st = LaunchExpr::parse(r_.str(), &parsed);
    if (!st.ok()) throw InternalError("measure worker: " + st.message());
    e = parsed;
  }
  template <class... V>
  void fields(V&... v) {
    ((*this)(v), ...);
  }
  template <class T>
  void operator()(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      v = r_.u64() != 0;
    } else if constexpr (std::is_enum_v<T> || std::is_unsigned_v<T>) {
      v = static_cast<T>(r_.u64());
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(r_.i64());
    } else if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(r_.f64());
    } else if constexpr (std::is_array_v<T>) {
      for (auto& e : v) (*this)(e);
    } else if constexpr (IsVector<T>::value) {
      v.resize(r_.u64());
      for (auto& e : v) (*this)(e);
    } else {
      walk(*this, v);
    }
  }

 private:
  Reader& r_;
};

template <class T>
T decoded(Reader& r) {
  T v{};
  Decode{r}(v);
  return v;
}

}  // namespace

void write_device(Writer& w, const DeviceInfo& d) { Encode{w}(d); }
DeviceInfo read_device(Reader& r) { return decoded<DeviceInfo>(r); }

void write_problem(Writer& w, const HostProblem& p) { Encode{w}(p); }
HostProblem read_problem(Reader& r) { return decoded<HostProblem>(r); }

void write_options(Writer& w, const MeasureOptions& o) { Encode{w}(o); }
MeasureOptions read_options(Reader& r) { return decoded<MeasureOptions>(r); }

void write_artifact(Writer& w, const KernelArtifact& a) { Encode{w}(a); }
KernelArtifact read_artifact(Reader& r) { return decoded<KernelArtifact>(r); }

void write_results(Writer& w, const std::vector<MeasureResult>& results) { Encode{w}(results); }
std::vector<MeasureResult> read_results(Reader& r) {
  std::vector<MeasureResult> out = decoded<std::vector<MeasureResult>>(r);
  for (auto& m : out) m.summarize();
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

namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// Allocates the pages of [m, m + size) of a shared mapping, on every core:
// MADV_POPULATE_WRITE reports a shortage as an error where a touch would be
// a SIGBUS; a kernel without it gets fallocate (one thread).
bool populate(int fd, uint8_t* m, size_t size) {
  std::atomic<bool> ok{true}, unsupported{false};
  parallel_chunks(static_cast<int64_t>(size), [&](int64_t begin, int64_t end, size_t) {
    const long page = sysconf(_SC_PAGESIZE);
    const int64_t from = begin / page * page;
    if (madvise(m + from, static_cast<size_t>(end - from), MADV_POPULATE_WRITE) == 0) return;
    if (errno == EINVAL)
      unsupported = true;
    else
      ok = false;
  });
  if (unsupported) return fallocate(fd, 0, 0, static_cast<off_t>(size)) == 0;
  return ok;
}

// A memory file holding the spans back to back; -1 where none can be made
// (no memfd, or not enough memory: populate says so now, not a SIGBUS later).
int memory_file_of(const std::vector<ByteSpan>& spans) {
  size_t total = 0;
  for (const auto& s : spans) total += s.size;
  const int fd = memfd_create("fusekit-problem", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (total == 0) return fd;
  void* m = ftruncate(fd, static_cast<off_t>(total)) == 0
                ? mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (m == MAP_FAILED || !populate(fd, static_cast<uint8_t*>(m), total)) {
    if (m != MAP_FAILED) munmap(m, total);
    close(fd);
    return -1;
  }
  uint8_t* at = static_cast<uint8_t*>(m);
  for (const auto& s : spans) {
    if (s.size > 0) parallel_copy(at, s.data, s.size);
    at += s.size;
  }
  munmap(m, total);
  return fd;
}

// A socket message of one byte with room for one fd beside it (SCM_RIGHTS).
struct FdMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

// Passes `fd` over a Unix socket.
bool send_fd(int socket, int fd) {
  FdMessage m;
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  for (;;) {
    const ssize_t k = sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    return k == 1;
  }
}

// The fd send_fd passed, waiting at most `timeout_ms`; -1 if none came.
int receive_fd(int socket, int timeout_ms) {
  pollfd p{socket, POLLIN, 0};
  int ready;
  while ((ready = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (ready <= 0) return -1;
  FdMessage m;
  msghdr& msg = m.msg;
  if (recvmsg(socket, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

// A memory file mapped for reading, unmapped and closed when this goes.
class MappedFile {
 public:
  explicit MappedFile(int fd) : fd_(fd) {
    struct stat st {};
    if (fstat(fd_, &st) != 0) throw InternalError(std::string("measure worker: fstat: ") + std::strerror(errno));
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return;
    void* m = mmap(nullptr, size_, PROT_READ, MAP_SHARED | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) throw InternalError(std::string("measure worker: mmap: ") + std::strerror(errno));
    data_ = static_cast<const uint8_t*>(m);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
    close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ByteSpan span() const { return {data_, size_}; }

 private:
  int fd_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

bool send_problem(int frame_fd, int bulk_fd, const HostProblem& p) {
  if (bulk_fd >= 0) {
    std::vector<ByteSpan> spans;
    Writer w(&spans);
    write_problem(w, p);
    const int file = memory_file_of(spans);
    if (file >= 0) {
      const bool sent = send_fd(bulk_fd, file);
      close(file);
      return sent && write_frame(frame_fd, WireTag::kSharedProblem, w.data());
    }
  }
  Writer w;
  write_problem(w, p);
  return write_frame(frame_fd, WireTag::kProblem, w.data());
}

HostProblem receive_problem(WireTag tag, const std::string& body, int bulk_fd) {
  if (tag == WireTag::kProblem) {
    Reader r(body);
    return read_problem(r);
  }
  // send_problem passed the file before it wrote the frame.
  const int fd = bulk_fd >= 0 ? receive_fd(bulk_fd, 10000) : -1;
  if (fd < 0) throw InternalError("measure worker: a shared problem's memory file did not arrive");
  const MappedFile file(fd);
  Reader r(body, file.span());
  return read_problem(r);
}

}  // namespace fusekit
