#pragma once

#include <string>

namespace perfwatch {

// `perfwatch regressions list`: every regression followed over history, newest first (only the
// open ones with `open_only`), as a table or JSON. Exit 0, or 2 when the database cannot be read.
int run_regressions_list(const std::string& db_path, bool open_only, const std::string& format);

// `perfwatch regressions accept ID`: the open regression's new level becomes its series' baseline
// (the runs from its first bad run on), so it stops alerting. Exit 0, or 2 when there is no open
// regression ID.
int run_regressions_accept(const std::string& db_path, long long id, const std::string& comment);

}  // namespace perfwatch
