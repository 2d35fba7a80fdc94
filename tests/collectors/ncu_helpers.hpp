#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace perfwatch::test {

inline RunBatch collect_ok(const std::string& path) {
    auto b = collect_file(path);
    if (!b) ADD_FAILURE() << b.error().to_string();
    return b ? std::move(*b) : RunBatch{};
}

inline std::vector<const Entity*> of_kind(const RunBatch& b, EntityKind kind) {
    std::vector<const Entity*> out;
    for (const Entity& e : b.entities)
        if (e.kind == kind) out.push_back(&e);
    return out;
}

inline const Entity* kernel_named(const RunBatch& b, const std::string& name) {
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::kernel && e.name == name) return &e;
    return nullptr;
}

inline double metric(const Entity* e, const std::string& name) {
    if (e == nullptr) {
        ADD_FAILURE() << "no entity";
        return -1;
    }
    auto v = e->value(name);
    if (!v) ADD_FAILURE() << e->name << " lacks metric " << name;
    return v.value_or(-1);
}

}  // namespace perfwatch::test
