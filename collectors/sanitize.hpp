#pragma once

#include "core/model.hpp"

namespace perfwatch {

// Makes a collected batch safe to store and send, whatever the report held: every text valid
// UTF-8 (invalid bytes become U+FFFD; names and labels lose control characters the same way, and
// an entity whose name changed keeps the SHA-256 of its original bytes as `name_sha256`), and no
// metric or sample that is not a finite number (such values are stored as missing, with a note).
void sanitize_batch(RunBatch& batch);

// The same for labels alone (labels given after collection: path templates, sidecars, --label).
void sanitize_labels(RunBatch& batch);

}  // namespace perfwatch
