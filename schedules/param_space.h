// ParamSpace and Config: named finite integer domains plus constraints.
// A Config prints canonically ("ept=2 threads=256 vec=4", names sorted) and
// hashes stably, so it can key database records.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fusekit {

class Config {
 public:
  Config() = default;
  explicit Config(std::map<std::string, int64_t> values) : values_(std::move(values)) {}

  int64_t get(const std::string& name) const;              // throws InternalError if absent
  int64_t get_or(const std::string& name, int64_t fallback) const;
  void set(const std::string& name, int64_t value) { values_[name] = value; }
  const std::map<std::string, int64_t>& values() const { return values_; }

  std::string to_string() const;                          // canonical text
  static Config parse(const std::string& text);            // inverse; throws UserError
  uint64_t hash() const;                                   // xxh64 of to_string()
  bool operator==(const Config& o) const { return values_ == o.values_; }
  bool operator<(const Config& o) const { return values_ < o.values_; }

 private:
  std::map<std::string, int64_t> values_;
};

// One tunable dimension.
struct ParamDomain {
  std::string name;
  std::vector<int64_t> values;
  // A parameter added after records were written: the value a config
  // without it has (constraints read it with get_or and the same value).
  std::optional<int64_t> absent;
  // false: every value is legal, but enumerate() and sample() give only
  // `absent` (a parameter the tuner sets itself, on schedules it chose).
  bool searched = true;
};

// A predicate over configs with the reason printed when it prunes one, or
// (why_not set) a rule that names the reason itself: empty when it holds.
struct Constraint {
  std::string description;
  std::function<bool(const Config&)> holds;
  std::function<std::string(const Config&)> why_not;
};

class ParamSpace {
 public:
  void add(std::string name, std::vector<int64_t> values, std::optional<int64_t> absent = std::nullopt);
  // A parameter outside the search (ParamDomain::searched = false).
  void add_unsearched(std::string name, std::vector<int64_t> values, int64_t absent);
  void require(std::string description, std::function<bool(const Config&)> holds);
  // A rule that says why a config breaks it (empty when it holds), such as
  // a template's can_implement, which the printers call too.
  void require_that(std::function<std::string(const Config&)> why_not);
  // Two parameters whose product matters more than either (a row's threads
  // per block and the blocks it is split over): a search's step from one
  // schedule to the next also doubles one while it halves the other.
  void trade(std::string a, std::string b) { trades_.emplace_back(std::move(a), std::move(b)); }
  const std::vector<std::pair<std::string, std::string>>& trades() const { return trades_; }

  const std::vector<ParamDomain>& domains() const { return domains_; }
  // Product of the searched domains' sizes, legal or not.
  uint64_t raw_size() const;
  // Empty when legal, else the description of the first violated constraint.
  std::string violation(const Config& config) const;
  bool legal(const Config& config) const { return violation(config).empty(); }
  // `config` with every parameter it lacks that has an absent value set to
  // it: the spelling enumerate() gives the same schedule.
  Config complete(const Config& config) const;
  // Every legal config of the searched values, in a deterministic order.
  std::vector<Config> enumerate() const;
  // A uniformly drawn config of the searched values (may be illegal).
  Config sample(std::mt19937_64& rng) const;

 private:
  std::vector<ParamDomain> domains_;
  std::vector<Constraint> constraints_;
  std::vector<std::pair<std::string, std::string>> trades_;
};

}  // namespace fusekit
