#pragma once

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/convert.hpp"
#include "collectors/reader_process.hpp"
#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

// Sidecar file names: `<report>.labels.yaml` beside a report, or this one for a whole directory.
inline constexpr std::string_view k_directory_sidecar = "perfwatch-labels.yaml";
inline constexpr std::string_view k_sidecar_suffix = ".labels.yaml";

// True for a file that is a label sidecar, not a report.
bool is_label_sidecar(std::string_view path);

// Labels from the sidecars of `report_path`: the directory's perfwatch-labels.yaml, then the
// report's own <report>.labels.yaml (which wins). Each is a flat YAML mapping of names to
// scalars; a malformed one is an error naming the file, line and column.
Result<std::map<std::string, std::string>> sidecar_labels(const std::string& report_path);

// What a path template made of a path: the captured labels, and the text its wildcards matched
// ("bert/fp16.json" for "{branch}/{commit}/**"), segments joined by '/'.
struct TemplateMatch {
    std::map<std::string, std::string> labels;
    std::string wildcards;
};

// A path template such as "/builds/{project}/{branch}/{commit}/**": `{name}` captures text
// within one path segment, `*` matches within a segment, `**` any number of segments. A template
// starting with '/' matches the whole absolute path; others match its trailing segments.
class PathTemplate {
public:
    // nullopt with `error` set when the template is malformed.
    static std::optional<PathTemplate> compile(std::string_view text, std::string& error);
    // The captured labels when `path` (made absolute) matches.
    std::optional<std::map<std::string, std::string>> match(const std::string& path) const;
    std::optional<TemplateMatch> match_parts(const std::string& path) const;
    const std::string& text() const { return m_text; }

private:
    std::string m_text;
    std::regex m_regex;
    std::vector<std::string> m_names;
    std::vector<int> m_groups;  // per regex group: the index of its name, or -1 for a wildcard
};

// Labels of the first template in `templates` matching `path`; empty when none does.
std::map<std::string, std::string> path_labels(const std::vector<PathTemplate>& templates, const std::string& path);

// Labels of a report, weakest first: the report's own, the derived `benchmark` (and `rank`),
// the first matching path template, the static labels of its watched directory, the directory's perfwatch-labels.yaml, the report's
// <report>.labels.yaml, then those given on the command line.
struct LabelSources {
    std::map<std::string, std::string> given;  // --label
    std::vector<PathTemplate> path_templates;
    std::map<std::string, std::string> directory;  // a watched directory's `labels`
    std::string root;  // the watched directory the report was found under; "" on the command line
};

// The `benchmark` label a report gets unless its own labels, a template, a sidecar or --label
// name one: the text the first matching template's wildcards matched, else the path below
// `sources.root`, else the file name; read by benchmark_from_path. When that leaves nothing
// (a PyTorch trace named after its host, pid and time) the folder's name, else `format`.
// A rank found in the name goes to `rank` ("" when none).
std::string derived_benchmark(const LabelSources& sources, const std::string& path, const std::string& format,
                              std::string* rank = nullptr);

// Collects one report (converting it first when a converter names its extension) and labels it.
Result<RunBatch> collect_labelled(const std::string& file, const LabelSources& labels,
                                  const std::vector<Converter>& converters);

// Every run of one report (one per session of a log holding several, labelled session=N), each
// labelled as collect_labelled does, read as `reader` says (check, ingest and the daemon: in a
// sandboxed reader process).
Result<std::vector<RunBatch>> collect_labelled_runs(const std::string& file, const LabelSources& labels,
                                                    const std::vector<Converter>& converters,
                                                    const ReaderOptions& reader = {});

}  // namespace perfwatch
