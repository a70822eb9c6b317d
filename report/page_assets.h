// The page's own script and style (report_page.js, report_page.css), compiled
// into the library so the binary needs only the plot library beside it.
#pragma once

namespace fusekit {

extern const char kReportPageJs[];
extern const char kReportPageCss[];

}  // namespace fusekit
