#include <cctype>
#include <algorithm>
#include <map>

#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    return out;
}

}  // namespace

Result<SearchHits> search(PageContext& ctx, std::string_view needle, std::size_t limit) {
    const std::string want = lower(needle);
    auto indexed = ctx.series_index();
    if (!indexed) return std::unexpected(indexed.error());
    SearchHits out;
    std::map<std::string, std::int64_t> commits;  // commit -> its newest run
    for (const SeriesEntry* s : (*indexed)->series()) {
        if ((lower(s->key).find(want) != std::string::npos || lower(series_title(s->key)).find(want) != std::string::npos))
            out.series.push_back(s);
        for (const SeriesRun& r : s->runs)
            if (!r.commit.empty() && lower(r.commit).find(want) != std::string::npos) {
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
