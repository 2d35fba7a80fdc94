#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "collectors/readers/byte_source.hpp"

namespace perfwatch {

// How a text report is encoded, as far as its first bytes tell: UTF-8 (or ASCII) without a byte
// order mark, UTF-8 with one, UTF-16 (Windows PowerShell's `>` writes UTF-16LE with a BOM), or
// UTF-8 whose lines end in a bare CR (old Mac files, a terminal's progress output saved whole).
enum class TextEncoding { plain, utf8_bom, utf16le, utf16be, cr_lines };

// The encoding of the data starting with `head`: by its byte order mark, or UTF-16 without one
// when the first characters are ASCII with a NUL byte beside each; `cr_lines` for text (no NUL)
// with a CR and no LF in `head`. `plain` for anything else, binary data included.
TextEncoding text_encoding(std::string_view head);

// Short name for messages ("UTF-16LE").
std::string_view encoding_name(TextEncoding encoding);

// `inner` (text in `encoding`, from its first byte) as UTF-8 without a byte order mark and with LF
// line ends where they were bare CRs (a CRLF stays), read as a stream in bounded memory. An
// unpaired surrogate or a lone last byte becomes U+FFFD. `inner` must outlive it.
std::unique_ptr<ByteSource> to_utf8(ByteSource& inner, TextEncoding encoding);

// The same for text in memory (a report's head, cut anywhere: a code unit cut at its end is dropped).
std::string to_utf8(std::string_view text, TextEncoding encoding);

}  // namespace perfwatch
