// What every command shares: option declarations, list parsing, the size
// and dtype checks and the one place that resolves the --db default. Each
// command validates all of its options through these before any file is
// opened or created.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"
#include "schedules/arch_limits.h"
#include "search/interfaces.h"

namespace fusekit {

namespace po = boost::program_options;

// A size is an element count ("65536") or a shape, outermost first.
using SizeSpec = std::vector<int64_t>;

std::vector<std::string> split_list(const std::vector<std::string>& items);
std::vector<DType> parse_dtypes(const std::vector<std::string>& items);
std::vector<SizeSpec> parse_sizes(const std::vector<std::string>& items);

// The iteration domain (innermost first) of a size for a candidate.
std::vector<int64_t> domain_for(const FusionCandidate& cand, const SizeSpec& size);

// --sizes as given, or (left at its default) the pointwise element counts
// for pointwise ops and the row shapes for row reductions.
std::vector<SizeSpec> sizes_for(const po::variables_map& vm, const FusionCandidate& cand);

// --pattern or --expr or (neither) the whole catalog; an empty --pattern is
// refused.
std::vector<FusionCandidate> selected_candidates(const po::variables_map& vm);

// --db, else $FUSEKIT_DB, else the XDG default.
std::string resolve_db_path(const po::variables_map& vm);
// The same, refused when no database file is there (for reads).
std::string existing_db_path(const po::variables_map& vm, const std::string& hint);

// A value of an option as an int, refused below `min` with the option's
// name and what the value means.
int int_at_least(const po::variables_map& vm, const char* name, int min, const char* meaning);

std::string host_name();

// The arguments after the command's name, as given (set by main), for a
// command that starts copies of itself.
void set_command_args(std::vector<std::string> args);
const std::vector<std::string>& command_args();

// This binary's path and the command line of its measuring worker on GPU
// `device` (`fusekit measure-worker --device N`).
std::string self_binary();
std::vector<std::string> worker_argv(int device);

// The measurer of a tune: a measuring worker on GPU `device` when that GPU
// is the requested arch, else (or with `model_only`) the analytic model,
// with the reason on stderr. With `require_gpu` there is no fallback: a GPU
// that is missing or of another arch is a UserError.
std::unique_ptr<Measurer> pick_measurer(const ArchLimits& arch, bool model_only, int device, bool require_gpu,
                                        const std::shared_ptr<CostModel>& learned = nullptr);

// Shared option declarations.
void add_arch_option(po::options_description& o, const char* text);
void add_selection_options(po::options_description& o);  // --pattern --expr
void add_dtype_option(po::options_description& o);
void add_sizes_option(po::options_description& o);
void add_db_option(po::options_description& o);
void add_backend_option(po::options_description& o);

}  // namespace fusekit
