#include "schedules/param_space.h"

#include <xxhash.h>

#include <sstream>

#include "common/errors.h"

namespace fusekit {

int64_t Config::get(const std::string& name) const {
  auto it = values_.find(name);
  FUSEKIT_INTERNAL_ASSERT(it != values_.end(), "config " + to_string() + " has no '" + name + "'");
  return it->second;
}

int64_t Config::get_or(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string Config::to_string() const {
  std::string s;
  for (const auto& [k, v] : values_) {
    if (!s.empty()) s += ' ';
    s += k + "=" + std::to_string(v);
  }
  return s;
}

Config Config::parse(const std::string& text) {
  Config c;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UserError("malformed config item '" + item + "' in '" + text + "'; expected name=value");
    try {
      size_t used = 0;
      int64_t v = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument(item);
      c.set(item.substr(0, eq), v);
    } catch (const std::logic_error&) {
      throw UserError("config value in '" + item + "' is not an integer");
    }
  }
  return c;
}

uint64_t Config::hash() const {
  std::string s = to_string();
  return XXH64(s.data(), s.size(), 0);
}

void ParamSpace::add(std::string name, std::vector<int64_t> values, std::optional<int64_t> absent) {
  FUSEKIT_INTERNAL_ASSERT(!values.empty(), "empty domain for " + name);
  domains_.push_back({std::move(name), std::move(values), absent});
}

void ParamSpace::add_unsearched(std::string name, std::vector<int64_t> values, int64_t absent) {
  add(std::move(name), std::move(values), absent);
  domains_.back().searched = false;
}

namespace {
// The values a search visits.
std::vector<int64_t> searched_values(const ParamDomain& d) {
  return d.searched ? d.values : std::vector<int64_t>{*d.absent};
}
}  // namespace

void ParamSpace::require(std::string description, std::function<bool(const Config&)> holds) {
  constraints_.push_back({std::move(description), std::move(holds), {}});
}

void ParamSpace::require_that(std::function<std::string(const Config&)> why_not) {
  constraints_.push_back({"", {}, std::move(why_not)});
}

uint64_t ParamSpace::raw_size() const {
  uint64_t n = 1;
  for (const auto& d : domains_) n *= searched_values(d).size();
  return n;
}

std::string ParamSpace::violation(const Config& config) const {
  for (const auto& d : domains_) {
    auto it = config.values().find(d.name);
    if (it == config.values().end() && !d.absent) return "missing parameter " + d.name;
    const int64_t value = it == config.values().end() ? *d.absent : it->second;
    bool in_domain = false;
    for (int64_t v : d.values) in_domain |= (v == value);
    if (!in_domain) return d.name + "=" + std::to_string(value) + " is outside its domain";
  }
  for (const auto& c : constraints_) {
    if (c.why_not) {
      if (std::string why = c.why_not(config); !why.empty()) return why;
    } else if (!c.holds(config)) {
      return c.description;
    }
  }
  return "";
}

Config ParamSpace::complete(const Config& config) const {
  Config c = config;
  for (const auto& d : domains_)
    if (d.absent && !c.values().count(d.name)) c.set(d.name, *d.absent);
  return c;
}

std::vector<Config> ParamSpace::enumerate() const {
  std::vector<Config> out;
  std::vector<size_t> idx(domains_.size(), 0);
  if (domains_.empty()) return out;
  std::vector<std::vector<int64_t>> values;
  for (const auto& d : domains_) values.push_back(searched_values(d));
  // One config stepped like an odometer: only the digits that turned are
  // set again (a row space has about a million legal points).
  Config c;
  for (size_t i = 0; i < domains_.size(); ++i) c.set(domains_[i].name, values[i][0]);
  for (;;) {
    if (legal(c)) out.push_back(c);
    size_t k = 0;
    while (k < idx.size() && ++idx[k] == values[k].size()) {
      idx[k] = 0;
      c.set(domains_[k].name, values[k][0]);
      ++k;
    }
    if (k == idx.size()) break;
    c.set(domains_[k].name, values[k][idx[k]]);
  }
  return out;
}

Config ParamSpace::sample(std::mt19937_64& rng) const {
  Config c;
  for (const auto& d : domains_) {
    const std::vector<int64_t> values = searched_values(d);
    std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
    c.set(d.name, values[pick(rng)]);
  }
  return c;
}

}  // namespace fusekit
