// The GPU measurer: verifies every artifact against the CPU reference on
// random inputs, then times it with CUDA events after warm-up. A batch's
// candidates are timed in interleaved rounds (each round times a block of
// launches of every candidate in turn, the order rotated per round), so
// that a drift of the machine's speed over the batch falls on all of them
// alike instead of on whichever ran during it.
//
// Inputs are rotated over several copies (at least two; more when a set
// would fit in L2), so small sizes are timed from DRAM like large ones. Every candidate of a
// problem reads the same buffers, so on sm_80+ each block of launches starts
// with the L2 eviction priority of those buffers set back to normal: a
// kernel with L2::evict_last loads leaves lines that outlast a later
// kernel's own normal-priority traffic, and that kernel would be timed with
// part of its input in L2 (docs/architecture.md, "Decisions and findings"). With
// MeasureOptions::queued a block first waits behind a gate, a kernel that
// spins on every SM until the host, having issued the whole block, releases
// it from a second stream; the launches then run back to back (a
// few-microsecond kernel launched as the host issues it is timed partly as
// the host's launch, nvbench's blocking kernel is the same idea). A kernel that faults the
// context (illegal address, ...) becomes a fault record and the
// primary context is reset before the next candidate. The host data (inputs,
// reference) comes prepared (search/host_problem.h), so the same executor
// serves this process and a measuring worker.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "common/errors.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/kernel_launch.h"
#include "search/device_executor.h"

namespace fusekit {
namespace {

constexpr size_t kAlign = 256;
// How long a gate waits for the host before it lets its block run as issued.
constexpr int64_t kGateLimitNs = 20000000;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// fk_l2_evict_normal(base, lines): applypriority.global.L2::evict_normal on
// `lines` 128-byte lines from `base` (sm_80+, PTX ISA 7.4), grid-stride.
constexpr const char* kL2ResetPtx = R"ptx(.version 7.4
.target sm_80
.address_size 64
.visible .entry fk_l2_evict_normal(.param .u64 fk_base, .param .u64 fk_lines)
{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [fk_base];
  ld.param.u64 %rd2, [fk_lines];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd3, %r1, %r2;
  cvt.u64.u32 %rd4, %r3;
  add.u64 %rd3, %rd3, %rd4;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd5, %r4, %r2;
$L_loop:
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra $L_done;
  shl.b64 %rd6, %rd3, 7;
  add.u64 %rd7, %rd1, %rd6;
  applypriority.global.L2::evict_normal [%rd7], 128;
  add.u64 %rd3, %rd3, %rd5;
  bra.uni $L_loop;
$L_done:
  ret;
}
)ptx";

// fk_gate(word, seq): each thread waits until the 32-bit word at `word` is
// at least `seq`, or kGateLimitNs of the GPU's global timer have passed,
// when it adds one to the word after it (the host reads that count: a
// released gate never times out).
std::string gate_ptx() {
  return R"ptx(.version 7.0
.target sm_70
.address_size 64
.visible .entry fk_gate(.param .u64 fk_word, .param .u64 fk_seq)
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [fk_word];
  ld.param.u64 %rd2, [fk_seq];
  cvta.to.global.u64 %rd1, %rd1;
  cvt.u32.u64 %r1, %rd2;
  mov.u64 %rd3, %globaltimer;
$L_wait:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra $L_done;
  mov.u64 %rd4, %globaltimer;
  sub.u64 %rd5, %rd4, %rd3;
  setp.lt.u64 %p2, %rd5, )ptx" + std::to_string(kGateLimitNs) + R"ptx(;
  @%p2 bra $L_wait;
  red.global.add.u32 [%rd1+4], 1;
$L_done:
  ret;
}
)ptx";
}

// One of the measurer's own PTX kernels as an artifact, so it loads and
// launches as candidates do.
KernelArtifact measurer_artifact(std::string ptx, const char* entry, int block, LaunchExpr grid,
                                 std::vector<KernelParam> params) {
  KernelArtifact a;
  a.backend = "measurer";
  a.image_kind = ImageKind::kPtx;
  a.image = std::move(ptx);
  a.entry = entry;
  a.block[0] = block;
  a.grid[0] = std::move(grid);
  a.params = std::move(params);
  return a;
}

// The gate: the word (input 0) and the sequence number it waits for (the
// domain's n); a block of 32 threads per SM, so every SM stays busy.
KernelArtifact gate_artifact() {
  return measurer_artifact(gate_ptx(), "fk_gate", 32, LaunchExpr::symbol("sm_count"),
                           {{KernelParam::Kind::kInput, KernelParam::Type::kPtr, 0, {}},
                            {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("n")}});
}

// The reset: one pointer (input 0) and the line count (the domain's n), 4
// blocks of 256 threads per SM.
KernelArtifact l2_reset_artifact() {
  return measurer_artifact(kL2ResetPtx, "fk_l2_evict_normal", 256,
                           LaunchExpr::make(LaunchExpr::Op::kMul, {LaunchExpr(4), LaunchExpr::symbol("sm_count")}),
                           {{KernelParam::Kind::kInput, KernelParam::Type::kPtr, 0, {}},
                            {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("n")}});
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

// Device copies of one problem's host data.
struct PreparedProblem {
  std::string key;
  const HostProblem* host = nullptr;                  // valid during run()
  std::vector<size_t> input_offsets, output_offsets;  // within one set
  size_t set_bytes = 0;
  int sets = 1;
  CUdeviceptr base = 0;
};

class GpuExecutor final : public DeviceExecutor {
 public:
  explicit GpuExecutor(int device) {
    Status st = load_cuda_driver(&drv_);
    if (!st.ok()) throw UserError("no usable GPU: " + st.message());
    int count = 0;
    check(drv_->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) throw UserError("no usable GPU: the CUDA driver reports no devices");
    if (device < 0 || device >= count)
      throw UserError("no GPU " + std::to_string(device) + ": the CUDA driver reports " + std::to_string(count) +
                      " (0 to " + std::to_string(count - 1) + ")");
    count_ = count;
    check(drv_->cuDeviceGet(&dev_, device), "cuDeviceGet");
    char name[256] = {0};
    check(drv_->cuDeviceGetName(name, sizeof(name), dev_), "cuDeviceGetName");
    int major = 0, minor = 0, sms = 0, l2 = 0, version = 0;
    check(drv_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_), "attr");
    check(drv_->cuDriverGetVersion(&version), "cuDriverGetVersion");
    info_.gpu_name = name;
    info_.arch = Arch{major, minor};
    info_.sm_count = sms;
    info_.l2_bytes = l2;
    info_.driver_version = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    info_.measured = true;
    size_t memory = 0;
    check(drv_->cuDeviceTotalMem(&memory, dev_), "cuDeviceTotalMem");
    problem_budget_ = memory / 4;
    open_context();
  }

  ~GpuExecutor() override {
    release_problems();
    modules_.clear();
    destroy_events();
    if (gate_word_) drv_->cuMemFree(gate_word_);
    if (gate_stream_) drv_->cuStreamDestroy(gate_stream_);
    if (stream_) drv_->cuStreamDestroy(stream_);
    drv_->cuDevicePrimaryCtxRelease(dev_);
  }

  const DeviceInfo& device() const override { return info_; }
  int device_count() const override { return count_; }

  std::vector<MeasureResult> run(const HostProblem& host, const std::vector<const KernelArtifact*>& batch,
                                 const MeasureOptions& options, const StepFn& step) override {
    prepare(host);
    const Problem& problem = host.problem;
    std::vector<MeasureResult> out(batch.size());
    std::vector<Timer> timers;
    for (size_t i = 0; i < batch.size(); ++i) {
      Timer t;
      if (step) step(i, 0.0);
      out[i] = verify_one(problem, *batch[i], options, &t);
      if (out[i].status == RecordStatus::kOk && t.samples > 0) {
        t.index = i;
        timers.push_back(std::move(t));
      }
      if (broken_) recover(host);
    }
    const int rounds = std::max(1, options.rounds);
    for (int r = 0; r < rounds; ++r)
      for (size_t k = 0; k < timers.size(); ++k) {
        Timer& t = timers[(k + r) % timers.size()];
        MeasureResult& res = out[t.index];
        if (res.status != RecordStatus::kOk) continue;  // failed in an earlier round
        const int n = t.samples * (r + 1) / rounds - t.samples * r / rounds;
        if (step) step(t.index, 1e-6 * t.est_us * (n + 2) + (options.queued ? 1e-9 * kGateLimitNs : 0.0));
        time_block(t, n, options.queued, &res);
        if (broken_) recover(host);
      }
    if (options.queued) note_gate_timeouts(&out);
    for (MeasureResult& res : out) {
      if (res.status != RecordStatus::kOk) res.samples_us.clear();
      res.summarize();
    }
    return out;
  }

 private:
  void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw UserError(std::string("GPU set-up failed: ") + what + ": " + cuda_error_text(*drv_, r));
  }

  void open_context() {
    check(drv_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    check(drv_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    check(drv_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(drv_->cuStreamCreate(&gate_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate (gate)");
    check(drv_->cuMemAlloc(&gate_word_, 8), "cuMemAlloc (gate)");
    check(drv_->cuMemsetD8(gate_word_, 0, 8), "cuMemsetD8 (gate)");
    check(drv_->cuCtxSynchronize(), "cuCtxSynchronize (gate)");  // the memset runs on the legacy stream
    gate_seq_ = 0;
    gate_timeouts_ = 0;
  }

  // After a sticky fault: drop everything tied to the context and reset it.
  void recover(const HostProblem& host) {
    // Modules, events and problem buffers belong to the dead context:
    // forget them without calling the driver on them.
    for (auto& [k, m] : modules_) m->release();
    modules_.clear();
    events_.clear();
    problem_ = PreparedProblem{};
    parked_.clear();
    stream_ = nullptr;
    gate_stream_ = nullptr;
    gate_word_ = 0;
    drv_->cuDevicePrimaryCtxRelease(dev_);
    drv_->cuDevicePrimaryCtxReset(dev_);
    open_context();
    broken_ = false;
    prepare(host);
  }

  // Frees every problem's device copy.
  void release_problems() {
    park_problem();
    free_parked(0);
  }

  // Sets the current problem aside, still on the device (newest last).
  void park_problem() {
    if (!problem_.base) return;
    // Lines it leaves at evict_last would hold L2 from the next problem.
    MeasureResult ignored;
    reset_l2_priorities(&ignored);
    problem_.host = nullptr;
    parked_.push_back(std::move(problem_));
    problem_ = PreparedProblem{};
  }

  // Takes the parked copy of `key` back as the current problem, if held.
  bool unpark_problem(const std::string& key) {
    const auto it = std::find_if(parked_.begin(), parked_.end(), [&](const auto& p) { return p.key == key; });
    if (it == parked_.end()) return false;
    problem_ = std::move(*it);
    parked_.erase(it);
    return true;
  }

  // Frees the oldest parked copies until they hold at most `keep` bytes.
  void free_parked(size_t keep) {
    auto held = [&] {
      size_t n = 0;
      for (const PreparedProblem& p : parked_) n += p.set_bytes * p.sets;
      return n;
    };
    if (!parked_.empty()) drv_->cuStreamSynchronize(stream_);
    while (!parked_.empty() && held() > keep) {
      drv_->cuMemFree(parked_.front().base);
      parked_.erase(parked_.begin());
    }
  }

  // Device memory for a new problem, within the share that problems may
  // hold; where other processes left less free than that, every parked
  // copy goes before the allocation fails.
  CUdeviceptr allocate_problem(size_t bytes) {
    free_parked(problem_budget_ > bytes ? problem_budget_ - bytes : 0);
    CUdeviceptr base = 0;
    CUresult r = drv_->cuMemAlloc(&base, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !parked_.empty()) {
      free_parked(0);
      r = drv_->cuMemAlloc(&base, bytes);
    }
    check(r, "cuMemAlloc (problem buffers)");
    return base;
  }

  // Sets the L2 eviction priority of the problem's buffers back to normal
  // (sm_80+; older archs have no eviction hints); false, with `res` set to a
  // launch error, if the reset kernel does not load or launch.
  bool reset_l2_priorities(MeasureResult* res) {
    if (info_.arch.major < 8 || !problem_.base || !stream_) return true;
    LaunchArgs args;
    args.inputs = {problem_.base};
    return launch_own(l2_reset_, static_cast<int64_t>((problem_.set_bytes * problem_.sets + 127) / 128), args,
                      "L2 priority reset", res);
  }

  // Queues the gate, which holds every SM until open_gate(); false, with
  // `res` set to a launch error, if it does not load or launch.
  bool close_gate(MeasureResult* res) {
    LaunchArgs args;
    args.inputs = {gate_word_};
    return launch_own(gate_, static_cast<int64_t>(++gate_seq_), args, "queued timing's gate", res);
  }

  // Releases the last gate queued: its word is set from the second stream,
  // which does not wait behind the first.
  void open_gate() {
    drv_->cuMemsetD32Async(gate_word_, static_cast<unsigned>(gate_seq_), 1, gate_stream_);
  }

  // A gate that timed out let part of its block run as the host issued it:
  // the run's timed results say so (the count is the gate word's neighbour).
  void note_gate_timeouts(std::vector<MeasureResult>* out) {
    unsigned count = 0;
    if (broken_ || drv_->cuMemcpyDtoH(&count, gate_word_ + 4, sizeof(count)) != CUDA_SUCCESS) return;
    if (count == gate_timeouts_) return;
    gate_timeouts_ = count;
    for (MeasureResult& res : *out)
      if (res.status == RecordStatus::kOk && !res.samples_us.empty())
        res.error += std::string(res.error.empty() ? "" : "; ") +
                     "queued timing: a gate timed out before the host released it, so some launches ran as issued";
  }

  // Launches one of the measurer's own kernels over a domain of `n`; false,
  // with `res` set to a launch error naming `what`, if it does not load or
  // launch.
  bool launch_own(const KernelArtifact& art, int64_t n, const LaunchArgs& args, const char* what,
                  MeasureResult* res) {
    LoadedKernel* mod = module_for(art, res);
    if (!mod) {
      res->error = std::string(what) + ": " + res->error;
      return false;
    }
    LaunchShape shape;
    shape.domain = {n};
    shape.sm_count = info_.sm_count;
    const Status st = launch_kernel(*drv_, art, mod->function(), shape, args, stream_);
    if (st.ok()) return true;
    res->status = RecordStatus::kLaunchError;
    res->error = std::string(what) + ": " + st.message();
    return false;
  }

  void prepare(const HostProblem& host) {
    if (host.key != problem_.key) {
      park_problem();
      if (!unpark_problem(host.key)) upload_problem(host);
    }
    problem_.host = &host;
  }

  // The problem's inputs copied to the device in as many sets as
  // PreparedProblem::sets, as the current problem.
  void upload_problem(const HostProblem& host) {
    PreparedProblem p;
    p.key = host.key;
    p.host = &host;
    size_t off = 0;
    for (const auto& t : host.inputs) { p.input_offsets.push_back(off); off = align_up(off + t.bytes.size()); }
    for (const auto& t : host.reference) { p.output_offsets.push_back(off); off = align_up(off + t.bytes.size()); }
    p.set_bytes = off;
    // Enough copies that consecutive launches never find their inputs in L2,
    // and at least two: lines a launch reads at evict_last outlast other
    // traffic, so the next launch on the same copy could find some of them
    // (peers.py rotates two sets as well).
    const double want = 2.5 * info_.l2_bytes;
    p.sets = static_cast<int>(std::min(4096.0, std::max(2.0, std::ceil(want / static_cast<double>(off)))));
    p.base = allocate_problem(p.set_bytes * p.sets);
    for (size_t i = 0; i < host.inputs.size(); ++i)
      check(drv_->cuMemcpyHtoD(p.base + p.input_offsets[i], host.inputs[i].bytes.data(), host.inputs[i].bytes.size()),
            "cuMemcpyHtoD");
    for (int s = 1; s < p.sets; ++s)
      check(drv_->cuMemcpyDtoDAsync(p.base + s * p.set_bytes, p.base, p.set_bytes, stream_), "cuMemcpyDtoD");
    check(drv_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
    problem_ = std::move(p);
  }

  LaunchArgs args_for_set(int set) const {
    LaunchArgs a;
    const CUdeviceptr base = problem_.base + static_cast<size_t>(set) * problem_.set_bytes;
    for (size_t off : problem_.input_offsets) a.inputs.push_back(base + off);
    for (size_t off : problem_.output_offsets) a.outputs.push_back(base + off);
    return a;
  }

  // A launch error, or on a sticky error a fault that marks the context
  // broken.
  MeasureResult fail(CUresult r, const std::string& what) {
    MeasureResult res;
    res.status = is_sticky(r) ? RecordStatus::kFault : RecordStatus::kLaunchError;
    res.error = what + ": " + cuda_error_text(*drv_, r);
    if (is_sticky(r)) broken_ = true;
    return res;
  }

  void ensure_events(size_t n) {
    while (events_.size() < n) {
      CUevent e;
      check(drv_->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
      events_.push_back(e);
    }
  }
  void destroy_events() {
    for (CUevent e : events_) drv_->cuEventDestroy(e);
    events_.clear();
  }

  // A verified candidate waiting to be timed.
  struct Timer {
    size_t index = 0;              // in the batch
    const KernelArtifact* art = nullptr;
    LaunchShape shape;
    std::vector<float> params;
    int samples = 0;               // to time in all (0: none)
    int next_set = 1;              // input set of the next launch
    double est_us = 0;             // one launch, from the warm-up
  };

  // The loaded module of `art` (loaded once per context), or nullptr with
  // `res` set to a launch error.
  LoadedKernel* module_for(const KernelArtifact& art, MeasureResult* res) {
    const std::string mkey = art.entry + "#" + std::to_string(std::hash<std::string>()(art.image));
    auto& mod = modules_[mkey];
    if (!mod) {
      mod = std::make_unique<LoadedKernel>();
      Status st = mod->load(*drv_, art);
      if (!st.ok()) {
        modules_.erase(mkey);
        res->status = RecordStatus::kLaunchError;
        res->error = st.message();
        return nullptr;
      }
    }
    return mod.get();
  }

  // Verifies one artifact; if options.time, also warms it up and sizes its
  // sample count into `timer`.
  MeasureResult verify_one(const Problem& problem, const KernelArtifact& art, const MeasureOptions& options,
                           Timer* timer) {
    MeasureResult res;
    LaunchShape shape;
    shape.domain = problem.domain;
    shape.inputs = problem.input_dims;
    shape.outputs = problem.output_dims;
    shape.sm_count = info_.sm_count;

    LoadedKernel* mod = module_for(art, &res);
    if (!mod) return res;
    CUfunction fn = mod->function();
    shape.resident_blocks = mod->resident_blocks();
    LaunchArgs args0 = args_for_set(0);
    args0.params = problem_.host->params;
    const std::vector<HostTensor>& reference = problem_.host->reference;

    // Verify: poison outputs, run once, compare every element.
    for (size_t i = 0; i < reference.size(); ++i)
      drv_->cuMemsetD8(args0.outputs[i], kPoisonByte, reference[i].bytes.size());
    // cuMemsetD8 runs on the legacy stream, which our non-blocking stream
    // does not wait for: without this, a late memset could overwrite what
    // the kernel wrote (a false failure; it never hides a missed write).
    CUresult poisoned = drv_->cuCtxSynchronize();
    if (poisoned != CUDA_SUCCESS) return fail(poisoned, "poisoning outputs");
    Status st = launch_kernel(*drv_, art, fn, shape, args0, stream_);
    if (!st.ok()) {
      res.status = RecordStatus::kLaunchError;
      res.error = st.message();
      return res;
    }
    CUresult r = drv_->cuStreamSynchronize(stream_);
    if (r != CUDA_SUCCESS) return fail(r, "kernel execution");
    // The same host buffers for every candidate: a fresh 256 MB tensor per
    // candidate and size cost its page faults each time.
    got_.resize(reference.size());
    for (size_t i = 0; i < reference.size(); ++i) {
      if (got_[i].dtype != reference[i].dtype || got_[i].dims != reference[i].dims)
        got_[i] = HostTensor::make(reference[i].dtype, reference[i].dims);
      r = drv_->cuMemcpyDtoH(got_[i].bytes.data(), args0.outputs[i], got_[i].bytes.size());
      if (r != CUDA_SUCCESS) return fail(r, "cuMemcpyDtoH");
    }
    Comparison cmp = compare_outputs(got_, reference, problem_.host->tolerance, problem_.host->slack);
    res.verify_error = cmp.max_ratio;
    if (!cmp.passed()) {
      res.status = RecordStatus::kVerifyError;
      res.error = "verification failed at " + problem.shape_text + ": " + cmp.detail;
      return res;
    }
    if (cmp.widened > 0)
      res.error = "verified at " + problem.shape_text + " with the reference's own rounding error added to the "
                  "tolerance at " + std::to_string(cmp.widened) + " elements (the reference is ill-conditioned there: "
                  "its f32 and f64 evaluations disagree)";
    if (!options.time) return res;

    // Warm up, then estimate one launch to size the sample count.
    timer->art = &art;
    timer->shape = shape;
    timer->params = args0.params;
    const int probe = 10;
    ensure_events(2 * static_cast<size_t>(std::max(options.max_samples, probe)) + 2);
    if (!launch_block(*timer, 5, &res)) return res;
    drv_->cuEventRecord(events_[0], stream_);
    if (!launch_block(*timer, probe, &res)) return res;
    drv_->cuEventRecord(events_[1], stream_);
    r = drv_->cuEventSynchronize(events_[1]);
    if (r != CUDA_SUCCESS) return fail(r, "warm-up");
    float probe_ms = 0;
    drv_->cuEventElapsedTime(&probe_ms, events_[0], events_[1]);
    const double est_us = std::max(1.0, 1000.0 * probe_ms / probe);
    timer->est_us = est_us;
    timer->samples = static_cast<int>(
        std::clamp(options.target_ms * 1000.0 / est_us, double(options.min_samples), double(options.max_samples)));
    return res;
  }

  // Launches timer `t` `n` times back to back, rotating input sets (an
  // event pair around each with `timed`); false, with `res` set, if a
  // launch fails.
  bool launch_block(Timer& t, int n, MeasureResult* res, bool timed = false) {
    LoadedKernel* mod = module_for(*t.art, res);  // again after a context reset
    if (!mod) return false;
    // Grid and shape arguments are evaluated once; only pointers change per
    // launch.
    PreparedLaunch prepared;
    Status launched = prepare_launch(*t.art, t.shape, &prepared);
    for (int i = 0; i < n && launched.ok(); ++i) {
      LaunchArgs args = args_for_set(t.next_set++ % problem_.sets);
      args.params = t.params;
      if (timed) drv_->cuEventRecord(events_[2 * i], stream_);
      launched = launch_prepared(*drv_, *t.art, mod->function(), prepared, args, stream_);
      if (timed) drv_->cuEventRecord(events_[2 * i + 1], stream_);
    }
    if (launched.ok()) return true;
    res->status = RecordStatus::kLaunchError;
    res->error = "timed launch: " + launched.message();
    return false;
  }

  // One round's block of `t`: when queued, behind a gate opened once the
  // block is issued; the problem's L2 priorities reset, two launches of
  // warm-up (another kernel ran before), then `n` timed ones, their times
  // appended to res->samples_us.
  void time_block(Timer& t, int n, bool queued, MeasureResult* res) {
    if (n <= 0) return;
    ensure_events(2 * static_cast<size_t>(n));  // again after a context reset
    if (queued && !close_gate(res)) return;
    const bool issued = reset_l2_priorities(res) && launch_block(t, 2, res) && launch_block(t, n, res, true);
    if (queued) open_gate();  // also after a failed launch, so the gate does not wait out its limit
    if (!issued) return;
    const CUresult r = drv_->cuEventSynchronize(events_[2 * n - 1]);
    if (r != CUDA_SUCCESS) {
      *res = fail(r, "timed runs");
      return;
    }
    for (int i = 0; i < n; ++i) {
      float ms = 0;
      drv_->cuEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]);
      res->samples_us.push_back(1000.0 * ms);
    }
  }

  const CudaDriver* drv_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceInfo info_;
  int count_ = 0;
  PreparedProblem problem_;
  // Problems run before, kept on the device (oldest first): a guided
  // search's every batch cycles through its task's timed shapes, and copying
  // each one's inputs up again per batch cost it time the full search's one
  // batch per task did not.
  std::vector<PreparedProblem> parked_;
  size_t problem_budget_ = 0;  // bytes the parked problems may hold: a quarter of the GPU's memory
  std::map<std::string, std::unique_ptr<LoadedKernel>> modules_;
  const KernelArtifact l2_reset_ = l2_reset_artifact();
  const KernelArtifact gate_ = gate_artifact();
  CUstream gate_stream_ = nullptr;  // releases gates: never waits behind stream_
  CUdeviceptr gate_word_ = 0;       // the last gate released, then how many timed out
  uint64_t gate_seq_ = 0;           // the last gate queued
  unsigned gate_timeouts_ = 0;      // the count last read
  std::vector<CUevent> events_;
  std::vector<HostTensor> got_;  // a candidate's outputs, copied back to be verified
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<DeviceExecutor> make_gpu_executor(int device) { return std::make_unique<GpuExecutor>(device); }

std::unique_ptr<Measurer> make_gpu_measurer() { return make_local_measurer(make_gpu_executor(0)); }

}  // namespace fusekit
