#include "collectors/readers/json_stream_thread.hpp"

#include <pthread.h>
#include <sched.h>

#include <array>
#include <exception>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "collectors/readers/bounded_queue.hpp"

namespace perfwatch {

namespace {

// An event (or a member: its key, then its text) copied into a batch's text, with its hints as
// offsets from its start.
struct Item {
    bool member = false;
    std::size_t at = 0, key_length = 0, length = 0;
    std::uint64_t end_offset = 0;
    std::array<std::uint32_t, 6> hint_at{}, hint_length{};
    bool ascii = false;
};

struct Batch {
    std::string text;
    std::vector<Item> items;
    std::optional<Error> error;  // where the scan stopped with an error, after the items
    bool last = false;           // the scan ended: nothing follows
};

constexpr std::size_t k_batch_bytes = 256 << 10;

constexpr std::array<std::string_view JsonEventStream::Hints::*, 6> k_hints = {
    &JsonEventStream::Hints::ph, &JsonEventStream::Hints::cat, &JsonEventStream::Hints::name,
    &JsonEventStream::Hints::ts, &JsonEventStream::Hints::dur, &JsonEventStream::Hints::args};

}  // namespace

std::uint64_t JsonEventStreamThread::default_beside_from() {
    static const std::uint64_t k_from = [] {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        const int usable = sched_getaffinity(0, sizeof(cpus), &cpus) == 0
                               ? CPU_COUNT(&cpus)
                               : static_cast<int>(std::thread::hardware_concurrency());
        return usable >= 4 ? k_beside_bytes : std::numeric_limits<std::uint64_t>::max();
    }();
    return k_from;
}

Result<void> JsonEventStreamThread::run(const JsonEventStream::WantFn& want_member,
                                        const JsonEventStream::MemberFn& on_member,
                                        const JsonEventStream::EventFn& on_event) {
    if (m_source.size_hint() < m_beside_from) {
        // The callbacks are called as they are, reading the offset from the stream.
        JsonEventStream stream(m_path, m_source);
        struct InPlace {
            JsonEventStreamThread& self;
            const JsonEventStream& stream;
            ~InPlace() {
                self.m_offset = stream.offset();
                self.m_in_place = nullptr;
            }
        } in_place{*this, stream};
        m_in_place = &stream;
        return stream.run(want_member, on_member, on_event);
    }
    BoundedQueue<Batch> queue(4);
    // The scanner's side: items gathered into a batch, which is handed over when full.
    std::thread scanner([&] {
        pthread_setname_np(pthread_self(), "pw-json-scan");
        Batch batch = queue.spare();
        const Error stopped{.file = m_path, .message = "the reader stopped"};
        auto hand_over = [&](bool last) {
            batch.text.append(k_json_padding, ' ');  // simdjson reads past an item's end
            batch.last = last;
            const bool taken = queue.push(std::move(batch));
            batch = queue.spare();
            batch.text.clear();
            batch.items.clear();
            batch.error.reset();
            batch.last = false;
            return taken;
        };
        auto add = [&](Item item, std::string_view key, std::string_view json) -> Result<void> {
            item.at = batch.text.size();
            item.key_length = key.size();
            item.length = json.size();
            batch.text.append(key);
            batch.text.append(json);
            batch.items.push_back(item);
            if (batch.text.size() >= k_batch_bytes && !hand_over(false)) return std::unexpected(stopped);
            return {};
        };
        try {
            JsonEventStream stream(m_path, m_source);
            auto r = stream.run(
                want_member,
                [&](std::string_view key, std::string_view json) {
                    return add(Item{.member = true, .end_offset = stream.offset()}, key, json);
                },
                [&](std::string_view json, const JsonEventStream::Hints& hints) {
                    Item item{.end_offset = stream.offset(), .ascii = hints.ascii};
                    for (std::size_t h = 0; h < k_hints.size(); ++h) {
                        const std::string_view hint = hints.*k_hints[h];
                        if (hint.empty()) continue;
                        item.hint_at[h] = static_cast<std::uint32_t>(hint.data() - json.data());
                        item.hint_length[h] = static_cast<std::uint32_t>(hint.size());
                    }
                    return add(item, {}, json);
                });
            if (!r) batch.error = r.error();
        } catch (const std::exception& e) {
            batch.error = Error{.file = m_path, .message = std::string("cannot scan: ") + e.what()};
        }
        hand_over(true);
    });

    // The caller's side: items handed to the callbacks in order. However it ends (a result, an
    // error, an exception from a callback), the scanner is stopped and joined.
    struct Stop {
        BoundedQueue<Batch>& queue;
        std::thread& scanner;
        ~Stop() {
            queue.close();
            scanner.join();
        }
    } stop{queue, scanner};
    while (auto batch = queue.pop()) {
        for (const Item& item : batch->items) {
            m_offset = item.end_offset;
            const std::string_view text(batch->text.data() + item.at, item.key_length + item.length);
            Result<void> r;
            if (item.member) {
                r = on_member(text.substr(0, item.key_length), text.substr(item.key_length));
            } else {
                JsonEventStream::Hints hints;
                hints.ascii = item.ascii;
                for (std::size_t h = 0; h < k_hints.size(); ++h)
                    if (item.hint_length[h] > 0) hints.*k_hints[h] = text.substr(item.hint_at[h], item.hint_length[h]);
                r = on_event(text, hints);
            }
            if (!r) return r;
        }
        if (batch->error) return std::unexpected(*batch->error);
        if (batch->last) return {};
        queue.recycle(std::move(*batch));
    }
    return std::unexpected(Error{.file = m_path, .message = "the JSON scanner ended without a result"});
}

}  // namespace perfwatch
