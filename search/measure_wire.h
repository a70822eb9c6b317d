// The byte format between a tuning process and its measuring worker
// (search/measure_worker.h): length-prefixed frames of a tag byte and a
// body, the body written field by field with Writer and read back with
// Reader, which throws InternalError on a short or malformed body. A
// problem's tensor bytes may travel apart from its frame, in shared memory
// (send_problem).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/host_problem.h"
#include "search/interfaces.h"

namespace fusekit {

// Frame tags. Parent to worker: kHello, kProblem, kMeasure, kQuit.
// Worker to parent: kDevice (reply to kHello), kStep, kResults, kError.
// kSharedProblem is a kProblem whose tensor bytes are in a memory file
// passed beside the frame (send_problem).
enum class WireTag : uint8_t { kHello = 1, kProblem, kMeasure, kQuit, kDevice, kStep, kResults, kError, kSharedProblem };

// Bytes held elsewhere (a vector being sent, a mapped memory file).
struct ByteSpan {
  const uint8_t* data;
  size_t size;
};

class Writer {
 public:
  Writer() = default;
  // Byte arrays go to `bulk` as spans of the written vectors (not copied, so
  // those must outlive the spans' use), their sizes alone into the body.
  explicit Writer(std::vector<ByteSpan>* bulk) : bulk_(bulk) {}
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void str(const std::string& s);
  void bytes(const uint8_t* data, size_t size);
  const std::string& data() const { return out_; }

 private:
  std::string out_;
  std::vector<ByteSpan>* bulk_ = nullptr;
};

class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  // Byte arrays come from `bulk` in order, as a Writer with bulk wrote them.
  Reader(const std::string& data, ByteSpan bulk) : data_(data), bulk_(bulk), shared_(true) {}
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  std::string str();
  // A byte array into `out`, resized to fit (std::vector<uint8_t> or HostBytes).
  template <class Bytes>
  void bytes(Bytes* out);

 private:
  const std::string& data_;
  size_t at_ = 0;
  ByteSpan bulk_{nullptr, 0};
  bool shared_ = false;
  size_t bulk_at_ = 0;
};

void write_device(Writer& w, const DeviceInfo& d);
DeviceInfo read_device(Reader& r);
void write_problem(Writer& w, const HostProblem& p);
HostProblem read_problem(Reader& r);

// Sends a problem to a worker: where `bulk_fd` is a Unix socket to it, its
// tensor bytes go into a memory file (memfd) passed over that socket and the
// frame on `frame_fd` is a kSharedProblem of the rest; else (or where the
// memory file cannot be made) one kProblem frame holds it all. One parallel
// copy on each side instead of four serial ones (encode, the pipe both
// ways, decode). False when the worker is gone.
bool send_problem(int frame_fd, int bulk_fd, const HostProblem& p);
// The problem of a kProblem or kSharedProblem frame's body (the memory file
// is read from `bulk_fd`); throws InternalError when it is not there.
HostProblem receive_problem(WireTag tag, const std::string& body, int bulk_fd);
void write_options(Writer& w, const MeasureOptions& o);
MeasureOptions read_options(Reader& r);
void write_artifact(Writer& w, const KernelArtifact& a);
KernelArtifact read_artifact(Reader& r);
void write_results(Writer& w, const std::vector<MeasureResult>& results);
std::vector<MeasureResult> read_results(Reader& r);

// Writes one frame; false when the other end is gone.
bool write_frame(int fd, WireTag tag, const std::string& body);
// Reads one frame, waiting at most `timeout_ms` (< 0: forever). kOk, or
// kTimedOut with nothing consumed, or kClosed on end of file or a torn frame.
enum class FrameRead { kOk, kTimedOut, kClosed };
FrameRead read_frame(int fd, int timeout_ms, WireTag* tag, std::string* body);

}  // namespace fusekit
