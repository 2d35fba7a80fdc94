#include <algorithm>
#include <map>

#include "web/pages.hpp"
#include "core/text.hpp"

namespace perfwatch::web {

Result<SearchHits> search(PageContext& ctx, std::string_view needle, std::size_t limit) {
    const std::string want = ascii_lower(needle);
    auto indexed = ctx.series_index();
    if (!indexed) return std::unexpected(indexed.error());
    SearchHits out;
    std::map<std::string, std::int64_t> commits;  // commit -> its newest run
    for (const SeriesEntry* s : (*indexed)->series()) {
        if ((ascii_lower(s->key).find(want) != std::string::npos || ascii_lower(series_title(s->key)).find(want) != std::string::npos))
            out.series.push_back(s);
        for (const SeriesRun& r : s->runs)
            if (!r.commit.empty() && ascii_lower(r.commit).find(want) != std::string::npos) {
                std::int64_t& newest = commits[r.commit];
                newest = std::max(newest, r.id);
            }
    }
    for (const auto& [commit, run] : commits) {
        if (out.commits.size() == limit) break;
        out.commits.emplace_back(commit, run);
    }
    auto kernels = ctx.db.browse().kernels_named(needle, limit);
    if (!kernels) return std::unexpected(kernels.error());
    out.kernels = std::move(*kernels);
    return out;
}

}  // namespace perfwatch::web
