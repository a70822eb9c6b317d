// fusekit report: read and check the database, the plan and the package,
// extract the data, then write the page in one step.
#include "cli/cmd_report.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/errors.h"
#include "report/html_writer.h"
#include "report/package_view.h"
#include "report/plan_coverage.h"
#include "report/report_data.h"
#include "tunedb/tune_db.h"

#ifndef FUSEKIT_VERSION
#define FUSEKIT_VERSION "0.0.0"
#endif

namespace po = boost::program_options;

namespace fusekit {

po::options_description cmd_report_options() {
  po::options_description o("report options");
  o.add_options()
      ("db", po::value<std::string>(), "the tuning database to show: a SQLite file or postgresql:// URI (required)")
      ("out", po::value<std::string>(), "the HTML file to write (required)")
      ("plan", po::value<std::string>(), "also show this plan's coverage (plan.json)")
      ("package", po::value<std::string>(), "also show this built package's dispatch")
      ("plotly-js", po::value<std::string>()->default_value(kDefaultPlotlyJs), "the plotly.js bundle the page inlines");
  return o;
}

int cmd_report(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("report takes no positional arguments, got '" + args[0] + "'");
  if (!vm.count("db")) throw UserError("report needs --db FILE, the tuning database to show");
  if (!vm.count("out")) throw UserError("report needs --out FILE, e.g. --out report.html");
  const std::string db_path = vm["db"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  if (std::filesystem::is_directory(out)) throw UserError("--out '" + out + "' is a folder; pass a file, e.g. report.html");
  if (!is_postgres_uri(db_path) && access(db_path.c_str(), R_OK) != 0)
    throw UserError("no database at '" + db_path + "'; pass --db FILE");
  const std::string library = read_plot_library(vm["plotly-js"].as<std::string>());
  const nlohmann::json manifest =
      vm.count("package") ? read_package_manifest(vm["package"].as<std::string>()) : nlohmann::json();
  const nlohmann::json plan = vm.count("plan") ? read_plan(vm["plan"].as<std::string>()) : nlohmann::json();

  auto db = open_tune_db(db_path, OpenMode::kMustExist);
  const std::vector<TuningRecord> records = db->all();
  if (records.empty())
    throw UserError("database '" + db_path + "' has no records; run `fusekit tune` or `fusekit db import` into it first");
  nlohmann::json data = extract_report_data(records);
  data["source"] = {{"db", db_path}, {"written", utc_timestamp()}, {"fusekit_version", FUSEKIT_VERSION}};
  data["plan"] = plan.is_null() ? nlohmann::json() : plan_coverage(plan, records);
  data["package"] = manifest.is_null() ? nlohmann::json() : package_view(manifest, vm["package"].as<std::string>());
  const std::string html = render_report_html(data, library);
  write_report_file(out, html);
  std::printf("wrote %s: %zu records, %zu ops, %zu of %zu schedule points drawn%s%s (%.1f MB)\n", out.c_str(),
              records.size(), data["ops"].size(), data["points"]["shown"].get<size_t>(), records.size(),
              plan.is_null() ? "" : ", plan coverage", manifest.is_null() ? "" : ", package dispatch",
              html.size() / 1e6);
  return 0;
}

}  // namespace fusekit
