#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

// A reader's answer as bytes, to cross from a reader process to its parent: the runs of one
// report, or the Error that refused it. Little-endian, length-prefixed, with a magic and version.
std::string encode_runs(const std::vector<RunBatch>& runs);
std::string encode_error(const Error& error);

// What a reader process sent: its runs, or its Error (`refused` holds it).
struct WireAnswer {
    std::vector<RunBatch> runs;
    std::optional<Error> refused;
};

// Decodes what encode_runs or encode_error wrote. Every length, count, index and enum is checked
// against the bytes that remain: anything else (truncated, trailing bytes, a parent index out of
// range, an unknown kind) is an Error naming the byte offset, never undefined behaviour. The
// texts are taken as they are: the caller sanitizes them (a reader process is not trusted).
Result<WireAnswer> decode_answer(std::string_view bytes);

}  // namespace perfwatch
