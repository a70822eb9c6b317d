// render_report_html: head (error hook, style, library), the data, the script.
#include "report/html_writer.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "report/page_assets.h"

namespace fusekit {
namespace {

// Replaces every `from` in `text` by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Inside <script> the only sequence that ends it early is "</script"
// (any case); "<\/" means the same to JavaScript in strings and regexes.
std::string script_safe(const std::string& js) { return replace_all(replace_all(js, "</script", "<\\/script"), "</SCRIPT", "<\\/SCRIPT"); }

// Records the first script error where --dump-dom and a reader both see it;
// it runs before the library so an error while loading is caught too.
constexpr const char* kErrorHook = R"JS(
window.fkErrors = [];
function fkFail(message) {
  window.fkErrors.push(String(message));
  document.documentElement.setAttribute('data-error', window.fkErrors.join(' | '));
  var show = function () {
    var d = document.getElementById('fk-error') || document.createElement('div');
    d.id = 'fk-error'; d.textContent = 'report script error: ' + window.fkErrors.join(' | ');
    if (!d.parentNode) document.body.insertBefore(d, document.body.firstChild);
  };
  if (document.body) show(); else document.addEventListener('DOMContentLoaded', show);
}
window.addEventListener('error', function (e) { fkFail(e.message + ' (' + (e.filename || '') + ':' + (e.lineno || 0) + ')'); });
window.addEventListener('unhandledrejection', function (e) { fkFail('unhandled rejection: ' + (e.reason && e.reason.message || e.reason)); });
)JS";

}  // namespace

std::string read_plot_library(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw UserError("cannot read the plot library '" + path +
                    "'; install Debian's python3-plotly (apt-get install python3-plotly) or pass --plotly-js FILE");
  std::stringstream s;
  s << f.rdbuf();
  std::string js = s.str();
  if (js.find("plotly.js") == std::string::npos || js.find("newPlot") == std::string::npos)
    throw UserError("'" + path + "' is not plotly.js; pass --plotly-js with Plotly's bundle, e.g. " + kDefaultPlotlyJs);
  return js;
}

std::string render_report_html(const nlohmann::json& data, const std::string& plot_library) {
  // JSON inside <script type="application/json">: "<" only occurs in
  // strings, where "\u003c" is the same text and cannot open or close a tag.
  const std::string json_text =
      replace_all(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "<", "\\u003c");
  std::string html;
  html.reserve(plot_library.size() + json_text.size() + 64 * 1024);
  html += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>fusekit report</title>\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<script>" + std::string(kErrorHook) + "</script>\n";
  html += "<style>\n" + std::string(kReportPageCss) + "</style>\n";
  html += "<script>\n" + script_safe(plot_library) + "\n</script>\n</head>\n<body>\n<div id=\"app\"></div>\n";
  html += "<script type=\"application/json\" id=\"fk-data\">" + json_text + "</script>\n";
  html += "<script>\n" + script_safe(kReportPageJs) + "\n</script>\n</body></html>\n";
  return html;
}

void write_report_file(const std::string& path, const std::string& html) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw UserError("cannot write '" + path + "'; pass --out with a path in a writable folder");
    f.write(html.data(), static_cast<std::streamsize>(html.size()));
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError("cannot write '" + path + "' (disk full?); pass --out with another path");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError("cannot write '" + path + "': " + ec.message() + "; pass --out with another path");
  }
}

}  // namespace fusekit
