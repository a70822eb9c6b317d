// fusekit: the command line. The dispatcher only: it picks the command,
// parses that command's own options (so `fusekit tune --help` shows tune's)
// and calls it. Each command lives in cli/cmd_<name>.cpp and validates all
// of its arguments before it opens or creates a file.
//
//   fusekit list
//   fusekit plan MODEL.onnx|GRAPH.json [--dim batch=1,8] [--out plan.json]
//   fusekit tune --arch sm_90 [--pattern NAME ...|--expr TEXT|--plan plan.json] [--shard I/N] [...]
//   fusekit db show|export|import|sync --db FILE|URI [JSONL...]
//   fusekit verify --arch sm_90 [--db FILE] | verify --package DIR
//   fusekit build --arch sm_80,sm_86,sm_90 --out DIR [--db FILE]
//   fusekit source --pattern NAME|--expr TEXT --arch sm_90 [--params ...]
//   fusekit report --db FILE [--plan plan.json] [--package DIR] --out report.html
//   fusekit model train|eval --db FILE [--out FILE]
#include <cstdio>
#include <iostream>

#include "cli/cmd_build.h"
#include "cli/cmd_db.h"
#include "cli/cmd_eval.h"
#include "cli/cmd_list.h"
#include "cli/cmd_measure_worker.h"
#include "cli/cmd_model.h"
#include "cli/cmd_plan.h"
#include "cli/cmd_report.h"
#include "cli/cmd_source.h"
#include "cli/cmd_tune.h"
#include "cli/cmd_verify.h"
#include "common/errors.h"

#include <Halide.h>

namespace fusekit {
namespace {

struct Command {
  const char* name;
  const char* usage;
  po::options_description (*options)();
  int (*run)(const po::variables_map&, const std::vector<std::string>&);
};

const Command kCommands[] = {
    {"list", "fusekit list", cmd_list_options, cmd_list},
    {"plan", "fusekit plan MODEL.onnx|GRAPH.json [--dim NAME=V,V] [--out plan.json]", cmd_plan_options, cmd_plan},
    {"tune", "fusekit tune --arch SM [--pattern NAME,...|--expr TEXT|--plan plan.json] [--shard I/N] [options]",
     cmd_tune_options, cmd_tune},
    {"db", "fusekit db show|export FILE|import FILE...|sync DB DB [--db FILE|URI]", cmd_db_options, cmd_db},
    {"verify", "fusekit verify --arch SM [--db FILE] | fusekit verify --package DIR", cmd_verify_options, cmd_verify},
    {"build", "fusekit build --arch SM,SM --out DIR [--db FILE] --pattern NAME,...|--expr TEXT [--name N]|--plan plan.json",
     cmd_build_options, cmd_build},
    {"source", "fusekit source --pattern NAME|--expr TEXT --arch SM [--params ...]", cmd_source_options, cmd_source},
    {"report", "fusekit report --db FILE [--plan plan.json] [--package DIR] --out report.html", cmd_report_options,
     cmd_report},
    {"model", "fusekit model train|eval --db FILE [--out FILE]", cmd_model_options, cmd_model},
    // A developer command for the numpy oracle; not in the usage list.
    {"eval", nullptr, cmd_eval_options, cmd_eval},
    // The measuring worker a tune starts; not in the usage list.
    {"measure-worker", nullptr, cmd_measure_worker_options, cmd_measure_worker},
};

std::string command_names() {
  std::string names;
  for (const auto& c : kCommands)
    if (c.usage) names += std::string(names.empty() ? "" : " ") + c.name;
  return names;
}

void print_usage() {
  std::cout << "usage:\n";
  for (const auto& c : kCommands)
    if (c.usage) std::cout << "  " << c.usage << "\n";
  std::cout << "`fusekit COMMAND --help` lists a command's options.\n"
               "exit status: 0 done, 1 a check failed (verify), a tune left a requested op/dtype/size without a "
               "kernel or an import met conflicting records, 2 bad input, 3 internal error\n";
}

int run(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage();
    return 0;
  }
  const Command* cmd = nullptr;
  for (const auto& c : kCommands)
    if (name == c.name) cmd = &c;
  if (!cmd) throw UserError("unknown command '" + name + "'; known: " + command_names());
  set_command_args(std::vector<std::string>(argv + 2, argv + argc));
  po::options_description opts = cmd->options();
  opts.add_options()("help,h", "show this command's options");
  po::options_description all;
  all.add(opts);
  all.add_options()("args", po::value<std::vector<std::string>>(), "");  // positional, not shown
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string(e.what()) + "; see `fusekit " + name + " --help`");
  }
  if (vm.count("help")) {
    std::cout << "usage: " << (cmd->usage ? cmd->usage : "fusekit " + name + " [options]") << "\n" << opts << "\n";
    return 0;
  }
  return cmd->run(vm, vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>{});
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  try {
    return fusekit::run(argc, argv);
  } catch (const fusekit::UserError& e) {
    std::fprintf(stderr, "fusekit: error: %s\n", e.what());
    return 2;
  } catch (const Halide::Error& e) {
    std::fprintf(stderr, "fusekit: Halide error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusekit: internal error: %s\n", e.what());
    return 3;
  }
}
