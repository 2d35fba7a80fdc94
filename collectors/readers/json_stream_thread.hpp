#pragma once

#include <cstdint>
#include <string>

#include "collectors/readers/json_stream.hpp"

namespace perfwatch {

// A JsonEventStream scanned on a thread of its own while the caller handles what it found (from
// `beside_from` bytes of input on, by the source's size hint; a smaller input is scanned on the
// caller's thread, with no thread to start): the
// scanner copies events and wanted members into batches (a few, at most 256 KB each past one
// large event, so memory stays flat) and the callbacks run on the caller's thread in the
// document's order, with the same texts, hints and padding as JsonEventStream gives. An error the
// scanner meets comes back after the events before it; an error a callback returns stops the
// scanner. `want_member` runs on the scanning thread: it must not touch the callbacks' state.
class JsonEventStreamThread {
public:
    static constexpr std::uint64_t k_beside_bytes = 1 << 20;
    // k_beside_bytes where this process may run on 4 or more CPUs, else never: the scanner's copy
    // of each event into a batch and the event crossing to the caller's core cost more than the
    // thread gains when a read-ahead thread and a hashing thread already share two cores.
    static std::uint64_t default_beside_from();

    JsonEventStreamThread(const std::string& path, ByteSource& source, std::uint64_t beside_from = default_beside_from())
        : m_path(path), m_source(source), m_beside_from(beside_from) {}

    Result<void> run(const JsonEventStream::WantFn& want_member, const JsonEventStream::MemberFn& on_member,
                     const JsonEventStream::EventFn& on_event);

    // Bytes of the input consumed up to the end of the event or member being handed over.
    std::uint64_t offset() const { return m_in_place != nullptr ? m_in_place->offset() : m_offset; }

private:
    const std::string& m_path;
    ByteSource& m_source;
    std::uint64_t m_beside_from;
    std::uint64_t m_offset = 0;
    const JsonEventStream* m_in_place = nullptr;  // the stream scanned on the caller's thread, while it runs
};

}  // namespace perfwatch
