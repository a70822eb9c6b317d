// Map: Racer opens the device, cuBLASLt and the tail kernels once per
// candidate and dtype; race() lays out the tensors of one shape (rotated
// sets), computes the reference rows, builds the points, verifies and times
// them.
#include "generator/cublaslt/gemm_racer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "common/errors.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/gemm_launch.h"
#include "fusekit/kernel_launch.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/op_traits.h"
#include "generator/gemm_workload.h"
#include "schedules/pointwise_template.h"

namespace fusekit {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct TailKernel {
  Config config;
  KernelArtifact artifact;
  std::unique_ptr<LoadedKernel> loaded;
};

// Output rows [begin, end) and the reference's values there.
struct ReferenceRows {
  int64_t begin = 0, end = 0;
  HostTensor values;
};

class Racer final : public GemmRacer {
 public:
  Racer(const GemmCandidate& c, DType dtype, const GemmRaceOptions& o)
      : cand_(c), dtype_(dtype), opt_(o), mapping_(map_to_cublaslt(c)) {
    open_device();
    Status st = load_cublaslt(&lt_);
    if (!st.ok()) throw UserError("GEMM tuning needs cuBLASLt: " + st.message());
    size_t ws = 0;
    for (size_t w : o.workspaces) ws = std::max(ws, w);
    sessions_ = std::make_unique<GemmSessions>(*drv_, *lt_, ws);
    workload_ = make_gemm_workload(c, dtype);
    build_tails();
  }

  ~Racer() override {
    tails_.clear();
    sessions_.reset();
    if (stream_) drv_->cuStreamDestroy(stream_);
    drv_->cuDevicePrimaryCtxRelease(dev_);
  }

  const DeviceInfo& device() const override { return info_; }
  const LtEpilogueMapping& mapping() const override { return mapping_; }

  GemmRace race(const GemmDims& dims) override {
    dims_ = dims;
    shape_ = GemmShape{dims.m, dims.n, dims.k, cand_.b_transposed, dtype_};
    problem_ = workload_->problem(gemm_domain(dims));
    prepare_inputs();
    GemmRace race;
    race.points = space();
    measure(&race, 0, {});
    if (opt_.space_points > 0) widen(&race);
    race.winner = choose_gemm_winner(race.points, race.results);
    race.heuristic_first = heuristic_first(race);
    race.best_heuristic = fastest(race, [](const GemmPoint& p) { return p.rank < kGemmSpaceRank; });
    drv_->cuMemFree(base_);
    base_ = 0;
    return race;
  }

 private:
  void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw UserError(std::string("GPU set-up failed: ") + what + ": " + cuda_error_text(*drv_, r));
  }

  void open_device() {
    Status st = load_cuda_driver(&drv_);
    if (!st.ok()) throw UserError("no usable GPU: " + st.message());
    int count = 0;
    check(drv_->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) throw UserError("no usable GPU: the CUDA driver reports no devices");
    check(drv_->cuDeviceGet(&dev_, 0), "cuDeviceGet");
    char name[256] = {0};
    check(drv_->cuDeviceGetName(name, sizeof name, dev_), "cuDeviceGetName");
    int major = 0, minor = 0, sms = 0, l2 = 0, version = 0;
    check(drv_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_), "attr");
    check(drv_->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_), "attr");
    check(drv_->cuDriverGetVersion(&version), "cuDriverGetVersion");
    check(drv_->cuDeviceTotalMem(&total_mem_, dev_), "cuDeviceTotalMem");
    info_.gpu_name = name;
    info_.arch = Arch{major, minor};
    info_.sm_count = sms;
    info_.l2_bytes = l2;
    info_.driver_version = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    info_.measured = true;
    check(drv_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    check(drv_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    check(drv_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  void build_tails() {
    const ArchLimits* limits = find_arch_limits(info_.arch);
    if (!limits) throw UserError("no schedule limits for " + info_.arch.name() + "; the tail kernels need them");
    auto builder = make_kernel_builder(cand_.epilogue, dtype_, *limits);
    // The template's legal seeds for this epilogue, spread over the list
    // (it runs from small blocks of one vector to large blocks of four).
    const int eb = static_cast<int>(dtype_bytes(dtype_));
    const ParamSpace space = PointwiseTemplate::space(*limits, Backend::kNvrtc, eb, op_traits(cand_.epilogue, dtype_));
    std::vector<Config> legal;
    for (const Config& cfg : PointwiseTemplate::seeds(Backend::kNvrtc, eb))
      if (space.legal(cfg)) legal.push_back(cfg);
    std::vector<Candidate> batch;
    const size_t want = std::min<size_t>(legal.size(), std::max(1, opt_.tail_schedules));
    for (size_t i = 0; i < want; ++i) batch.push_back({Backend::kNvrtc, legal[i * legal.size() / want]});
    std::vector<BuildResult> built = builder->build(batch);
    for (size_t i = 0; i < built.size(); ++i) {
      if (!built[i].ok) {
        tail_errors_ += batch[i].config.to_string() + ": " + built[i].error.substr(0, 400) + "\n";
        continue;
      }
      TailKernel t;
      t.config = batch[i].config;
      t.artifact = std::move(built[i].artifact);
      t.loaded = std::make_unique<LoadedKernel>();
      Status st = t.loaded->load(*drv_, t.artifact);
      if (!st.ok()) {
        tail_errors_ += t.config.to_string() + ": " + st.message() + "\n";
        continue;
      }
      tails_.push_back(std::move(t));
    }
  }

  // Workload input index of epilogue input `i` (-1 for the accumulators).
  int workload_input(int i) const {
    const std::vector<size_t> ops = cand_.operand_inputs();
    for (size_t j = 0; j < ops.size(); ++j)
      if (static_cast<int>(ops[j]) == i) return 1 + cand_.accumulators + static_cast<int>(j);
    return -1;
  }

  uint64_t input_ptr(int set, int workload_index) const {
    return base_ + set * set_bytes_ + input_offsets_[workload_index];
  }
  uint64_t acc_ptr(int set, int w) const { return base_ + set * set_bytes_ + acc_offsets_[w]; }
  uint64_t out_ptr(int set) const { return base_ + set * set_bytes_ + out_offset_; }

  // Rows [r0, r1) of input `workload_index`: A and full operands are
  // row-major [M, *], a [row] operand is [M]; weights and [col] operands are
  // whole.
  HostTensor slice_rows(const HostTensor& t, size_t workload_index, int64_t r0, int64_t r1) const {
    int64_t width = 0;
    if (workload_index == 0) {
      width = dims_.k;
    } else if (workload_index > static_cast<size_t>(cand_.accumulators)) {
      const InputSpec& spec = cand_.epilogue.inputs[cand_.operand_inputs()[workload_index - 1 - cand_.accumulators]];
      width = spec.full() ? dims_.n : spec.axes == std::vector<int>{1} ? 1 : 0;
    }
    if (width == 0) return t;
    std::vector<int64_t> d = t.dims;
    d.back() = r1 - r0;
    HostTensor s = HostTensor::make(dtype_, d);
    const size_t eb = dtype_bytes(dtype_);
    std::memcpy(s.bytes.data(), t.bytes.data() + r0 * width * eb, (r1 - r0) * width * eb);
    return s;
  }

  void prepare_inputs() {
    host_.clear();
    for (size_t i = 0; i < problem_.input_dims.size(); ++i) {
      host_.push_back(HostTensor::make(dtype_, problem_.input_dims[i]));
      workload_->fill_input(i, opt_.seed * 1000 + i, &host_.back());
    }
    // Reference rows at both ends of the output.
    refs_.clear();
    std::vector<std::pair<int64_t, int64_t>> ranges = {{0, std::min<int64_t>(dims_.m, 128)}};
    if (dims_.m > 128) ranges.push_back({std::max<int64_t>(128, dims_.m - 64), dims_.m});
    for (auto [r0, r1] : ranges) {
      std::vector<HostTensor> in;
      for (size_t i = 0; i < host_.size(); ++i) in.push_back(slice_rows(host_[i], i, r0, r1));
      Problem ps = workload_->problem(gemm_domain({r1 - r0, dims_.n, dims_.k}));
      std::vector<HostTensor> out;
      workload_->reference(ps, in, &out);
      refs_.push_back({r0, r1, std::move(out[0])});
    }
    // One set: the inputs, the products (tail path) and the output.
    const size_t eb = dtype_bytes(dtype_);
    size_t off = 0;
    input_offsets_.clear();
    for (const auto& t : host_) {
      input_offsets_.push_back(off);
      off += align_up(t.bytes.size());
    }
    acc_offsets_.clear();
    for (int w = 0; w < cand_.accumulators; ++w) {
      acc_offsets_.push_back(off);
      off += align_up(dims_.m * dims_.n * eb);
    }
    out_offset_ = off;
    off += align_up(dims_.m * dims_.n * eb);
    set_bytes_ = off;
    const double l2 = std::max(info_.l2_bytes, 1.0);
    sets_ = std::max(2, static_cast<int>(std::ceil(3 * l2 / set_bytes_)));
    sets_ = std::max(1, std::min<int>(sets_, static_cast<int>(total_mem_ / 3 / set_bytes_)));
    check(drv_->cuMemAlloc(&base_, set_bytes_ * sets_), "cuMemAlloc of the GEMM tensors");
    for (size_t i = 0; i < host_.size(); ++i)
      check(drv_->cuMemcpyHtoD(input_ptr(0, static_cast<int>(i)), host_[i].bytes.data(), host_[i].bytes.size()),
            "cuMemcpyHtoD");
    for (int s = 1; s < sets_; ++s)
      check(drv_->cuMemcpyDtoDAsync(base_ + s * set_bytes_, base_, set_bytes_, stream_), "cuMemcpyDtoDAsync");
    check(drv_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  // Verifies points [first, end) and times those that pass together with
  // `rerun` (earlier points, their samples taken again in the same rounds).
  void measure(GemmRace* race, size_t first, const std::vector<size_t>& rerun) {
    race->results.resize(race->points.size());
    std::vector<size_t> timed = rerun;
    for (size_t i : rerun) race->results[i].samples_us.clear();
    for (size_t i = first; i < race->points.size(); ++i) {
      race->results[i] = verify(race->points[i]);
      if (race->results[i].status == RecordStatus::kOk) timed.push_back(i);
    }
    time_points(race->points, timed, &race->results);
    for (size_t i : timed) race->results[i].summarize();
  }

  template <typename Pred>
  static int fastest(const GemmRace& race, Pred keep) {
    int best = -1;
    for (size_t i = 0; i < race.points.size(); ++i)
      if (race.results[i].status == RecordStatus::kOk && keep(race.points[i]) &&
          (best < 0 || race.results[i].median_us < race.results[best].median_us))
        best = static_cast<int>(i);
    return best;
  }

  // The second pass: the algorithm space of each plan beyond the
  // heuristic's answers, timed with the first pass's contenders (cuBLASLt's
  // first answer and the fastest point of each backend).
  void widen(GemmRace* race) {
    const int best_tail = fastest(*race, [](const GemmPoint& p) { return p.tail; });
    std::set<size_t> rerun;
    for (int i : {heuristic_first(*race), fastest(*race, [](const GemmPoint& p) { return !p.tail; }), best_tail})
      if (i >= 0) rerun.insert(static_cast<size_t>(i));
    const size_t first = race->points.size();
    for (int tail = 0; tail < 2; ++tail) {
      if (seeds_[tail].empty() || (tail && best_tail < 0)) continue;
      const GemmPlan base = plan_bases_[tail];
      // The session's workspace is the largest of opt_.workspaces.
      const std::vector<GemmHeuristic> found =
          search_algo_space(*lt_, *sessions_, shape_, base, bias_ptr(0), sessions_->workspace_bytes(), stream_,
                            seeds_[tail], opt_.space, static_cast<size_t>(opt_.space_points), &race->space[tail]);
      for (size_t j = 0; j < found.size(); ++j) {
        GemmPoint p = point_of(tail != 0, kGemmSpaceRank + static_cast<int>(j), base, found[j]);
        if (tail) p.tail_config = race->points[best_tail].tail_config;
        race->points.push_back(p);
      }
      race->space_timed[tail] = static_cast<int>(found.size());
    }
    if (race->points.size() > first) measure(race, first, {rerun.begin(), rerun.end()});
  }

  GemmPoint point_of(bool tail, int rank, const GemmPlan& base, const GemmHeuristic& h) const {
    GemmPoint p;
    p.tail = tail;
    p.rank = rank;
    p.plan = base;
    p.plan.has_algo = true;
    p.plan.algo = h.algo;
    p.plan.workspace_bytes = h.workspace_bytes;
    p.plan.cublaslt_version = lt_->cublasLtGetVersion();
    p.plan.tuned = shape_;
    return p;
  }

  uint64_t bias_ptr(int set) const {
    return mapping_.bias_input >= 0 ? input_ptr(set, workload_input(mapping_.bias_input)) : 0;
  }

  void add_points(bool tail, const GemmPlan& base, std::vector<GemmPoint>* out) {
    std::set<std::string> seen;
    plan_bases_[tail] = base;
    seeds_[tail].clear();
    for (size_t wi = 0; wi < opt_.workspaces.size(); ++wi) {
      std::vector<GemmHeuristic> found;
      Status st = sessions_->heuristic(shape_, base, bias_ptr(0), opt_.workspaces[wi], std::min(8, opt_.top_k), stream_,
                                       &found);
      if (!st.ok()) {
        space_notes_ += std::string(tail ? "tail" : "fused") + " heuristic: " + st.message() + "\n";
        continue;
      }
      for (size_t i = 0; i < found.size(); ++i) {
        if (!seen.insert(gemm_algo_hex(found[i].algo)).second) continue;
        seeds_[tail].push_back(found[i]);
        GemmPoint p = point_of(tail, static_cast<int>(wi * 100 + i), base, found[i]);
        if (!tail) {
          out->push_back(p);
          continue;
        }
        for (const TailKernel& t : tails_) {
          p.tail_config = t.config;
          out->push_back(p);
        }
      }
    }
  }

  std::vector<GemmPoint> space() {
    std::vector<GemmPoint> points;
    for (auto& s : seeds_) s.clear();
    if (mapping_.fused) {
      GemmPlan fused;
      fused.epilogue = mapping_.epilogue;
      fused.residual = mapping_.residual_input >= 0;
      add_points(false, fused, &points);
    }
    add_points(true, GemmPlan(), &points);
    if (points.empty())
      throw UserError("no GEMM point to time for " + cand_.name + ": " + space_notes_ + tail_errors_);
    return points;
  }

  const TailKernel& tail_of(const GemmPoint& p) const {
    for (const TailKernel& t : tails_)
      if (t.config.to_string() == p.tail_config.to_string()) return t;
    throw InternalError("GEMM point names a tail schedule that was not built");
  }

  Status run(const GemmPoint& p, int set) {
    const uint64_t a = input_ptr(set, 0);
    if (!p.tail) {
      GemmOperands ops{a, input_ptr(set, 1), bias_ptr(set),
                       mapping_.residual_input >= 0 ? input_ptr(set, workload_input(mapping_.residual_input)) : 0,
                       out_ptr(set)};
      return sessions_->launch(shape_, p.plan, ops, stream_);
    }
    for (int w = 0; w < cand_.accumulators; ++w) {
      Status st = sessions_->launch(shape_, p.plan, {a, input_ptr(set, 1 + w), 0, 0, acc_ptr(set, w)}, stream_);
      if (!st.ok()) return st;
    }
    const TailKernel& t = tail_of(p);
    LaunchShape ls;
    ls.domain = {dims_.n, dims_.m};
    LaunchArgs args;
    for (size_t i = 0; i < cand_.epilogue.inputs.size(); ++i) {
      ls.inputs.push_back(cand_.epilogue.input_dims(i, ls.domain));
      const int wi = workload_input(static_cast<int>(i));
      args.inputs.push_back(wi >= 0 ? input_ptr(set, wi)
                                    : acc_ptr(set, static_cast<int>(i) == cand_.accumulator_input(0) ? 0 : 1));
    }
    ls.outputs = {ls.domain};
    ls.sm_count = info_.sm_count;
    ls.resident_blocks = t.loaded->resident_blocks();
    args.outputs = {out_ptr(set)};
    args.params = workload_->param_values();
    return launch_kernel(*drv_, t.artifact, t.loaded->function(), ls, args, stream_);
  }

  MeasureResult verify(const GemmPoint& p) {
    MeasureResult r;
    const size_t eb = dtype_bytes(dtype_);
    check(drv_->cuMemsetD8(out_ptr(0), 0xff, dims_.m * dims_.n * eb), "cuMemsetD8");  // NaN where nothing is written
    Status st = run(p, 0);
    CUresult sync = drv_->cuStreamSynchronize(stream_);
    if (!st.ok() || sync != CUDA_SUCCESS) {
      r.status = RecordStatus::kLaunchError;
      r.error = st.ok() ? cuda_error_text(*drv_, sync) : st.message();
      return r;
    }
    const Tolerance tol = workload_->tolerance(problem_);
    for (const ReferenceRows& ref : refs_) {
      HostTensor got = HostTensor::make(dtype_, ref.values.dims);
      check(drv_->cuMemcpyDtoH(got.bytes.data(), out_ptr(0) + ref.begin * dims_.n * eb, got.bytes.size()),
            "cuMemcpyDtoH");
      Comparison cmp = compare_outputs({got}, {ref.values}, tol);
      r.verify_error = std::max(r.verify_error, cmp.max_ratio);
      if (!cmp.passed()) {
        r.status = RecordStatus::kVerifyError;
        r.error = "rows " + std::to_string(ref.begin) + "-" + std::to_string(ref.end) + ": " + cmp.detail;
        return r;
      }
    }
    return r;
  }

  void time_points(const std::vector<GemmPoint>& points, const std::vector<size_t>& timed,
                   std::vector<MeasureResult>* results) {
    if (timed.empty()) return;
    CUevent e0 = nullptr, e1 = nullptr;
    check(drv_->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
    check(drv_->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
    int counter = 0;
    // Calls per block, from one warm block of 3 calls.
    std::vector<int> calls(points.size(), 3);
    auto block = [&](size_t i, int n) -> double {
      drv_->cuEventRecord(e0, stream_);
      for (int j = 0; j < n; ++j) {
        Status st = run(points[i], counter++ % sets_);
        if (!st.ok()) {
          (*results)[i].status = RecordStatus::kLaunchError;
          (*results)[i].error = st.message();
          break;
        }
      }
      drv_->cuEventRecord(e1, stream_);
      float ms = 0;
      if (drv_->cuEventSynchronize(e1) != CUDA_SUCCESS || drv_->cuEventElapsedTime(&ms, e0, e1) != CUDA_SUCCESS) {
        (*results)[i].status = RecordStatus::kLaunchError;
        (*results)[i].error = "timing events failed";
      }
      return ms * 1000.0 / n;
    };
    for (size_t i : timed) {
      const double us = block(i, 3);
      calls[i] = std::clamp(static_cast<int>(opt_.block_us / std::max(us, 1.0)), 3, 500);
    }
    for (int r = 0; r < opt_.rounds; ++r)
      for (size_t k = 0; k < timed.size(); ++k) {
        const size_t i = timed[(k + r) % timed.size()];
        if ((*results)[i].status != RecordStatus::kOk) continue;
        const double us = block(i, calls[i]);
        if ((*results)[i].status == RecordStatus::kOk) (*results)[i].samples_us.push_back(us);
      }
    drv_->cuEventDestroy(e0);
    drv_->cuEventDestroy(e1);
  }

  int heuristic_first(const GemmRace& race) const {
    int best = -1;
    for (size_t i = 0; i < race.points.size(); ++i) {
      const GemmPoint& p = race.points[i];
      if (p.rank != 0 || race.results[i].status != RecordStatus::kOk) continue;
      if (!p.tail) return static_cast<int>(i);
      if (best < 0 || race.results[i].median_us < race.results[best].median_us) best = static_cast<int>(i);
    }
    return best;
  }

  const GemmCandidate cand_;
  const DType dtype_;
  const GemmRaceOptions opt_;
  const LtEpilogueMapping mapping_;
  const CudaDriver* drv_ = nullptr;
  const CublasLt* lt_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  size_t total_mem_ = 0;
  DeviceInfo info_;
  std::unique_ptr<GemmSessions> sessions_;
  std::unique_ptr<Workload> workload_;
  std::vector<TailKernel> tails_;
  // Per plan (fused [0], tail [1]) of the shape being raced: its base and the heuristic's answers.
  GemmPlan plan_bases_[2];
  std::vector<GemmHeuristic> seeds_[2];
  std::string tail_errors_, space_notes_;
  // The shape being raced.
  GemmDims dims_;
  GemmShape shape_;
  Problem problem_;
  std::vector<HostTensor> host_;
  std::vector<ReferenceRows> refs_;
  std::vector<size_t> input_offsets_, acc_offsets_;
  size_t out_offset_ = 0, set_bytes_ = 0;
  int sets_ = 1;
  CUdeviceptr base_ = 0;
};

}  // namespace

std::unique_ptr<GemmRacer> make_gemm_racer(const GemmCandidate& candidate, DType dtype, const GemmRaceOptions& options) {
  return std::make_unique<Racer>(candidate, dtype, options);
}

}  // namespace fusekit
