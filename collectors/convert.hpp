#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"

namespace perfwatch {

// How a binary report (.ncu-rep, .nsys-rep) becomes one perfwatch reads: a vendor command run
// without a shell. "{input}" in an argument is replaced by the report's path and "{output}" by a
// fresh temporary file; without "{output}" the command's standard output is the converted report.
struct Converter {
    std::string extension;             // ".nsys-rep"; matched at the end of the file name
    std::vector<std::string> command;  // argv; command[0] is looked up on PATH
    std::string output_suffix;         // suffix of the {output} file: ".sqlite"
    int timeout_s = 600;
};

// ncu --import for .ncu-rep; nsys export to SQLite for .nsys-rep and .qdrep.
const std::vector<Converter>& default_converters();

// The converter for `path` by its extension, or nullptr.
const Converter* converter_for(const std::vector<Converter>& converters, const std::string& path);

// Full path of `program` (a name looked up on $PATH, or a path), or empty when not executable.
std::string find_program(const std::string& program);

// A converted report in a temporary directory, removed when this is destroyed.
class ConvertedReport {
public:
    ConvertedReport() = default;
    ConvertedReport(std::string dir, std::string path) : m_dir(std::move(dir)), m_path(std::move(path)) {}
    ConvertedReport(ConvertedReport&& other) noexcept;
    ConvertedReport& operator=(ConvertedReport&&) = delete;
    ConvertedReport(const ConvertedReport&) = delete;
    ConvertedReport& operator=(const ConvertedReport&) = delete;
    ~ConvertedReport();
    const std::string& path() const { return m_path; }

private:
    std::string m_dir, m_path;
};

// Runs `converter` on `input`. A missing tool is an Error with `skipped` set, naming the tool;
// a failing or hanging one an Error quoting the end of its standard error.
Result<ConvertedReport> convert_report(const Converter& converter, const std::string& input);

// The command as it would run on `input`, for messages and notes.
std::string describe_command(const Converter& converter, const std::string& input);

}  // namespace perfwatch
