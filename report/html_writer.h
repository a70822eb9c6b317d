// Writes a report's data as one self-contained HTML page: the plot library
// (Plotly's bundle, Debian's python3-plotly) and the page script are inlined,
// so the page needs no network when it is viewed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fusekit {

#ifndef FUSEKIT_PLOTLY_JS
#define FUSEKIT_PLOTLY_JS "/usr/share/python3-plotly/plotly.js"
#endif
// The default plot library: where Debian's python3-plotly ships plotly.js.
constexpr const char* kDefaultPlotlyJs = FUSEKIT_PLOTLY_JS;

// Reads the plot library; throws UserError naming the path and the fix when
// it is missing or is not Plotly.
std::string read_plot_library(const std::string& path);

// The page: `data` (extract_report_data and friends) as inline JSON, the
// library and the page script. Once every plot has drawn the page sets
// body[data-rendered] to the number of plots; a script error sets
// html[data-error] and shows the message.
std::string render_report_html(const nlohmann::json& data, const std::string& plot_library);

// Writes `html` to `path` through a temporary file beside it, so a failure
// leaves nothing (or the old file) behind. Throws UserError naming the path.
void write_report_file(const std::string& path, const std::string& html);

}  // namespace fusekit
