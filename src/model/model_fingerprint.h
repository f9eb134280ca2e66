// What identifies a model file's numbers for the states kept on disk (serve/lifecycle/state_file.h): a state
// computed with one file must never be loaded into a server running another, even one with the
// same shapes (a requantised file, another seed of a generated model).
#pragma once

#include <cstdint>

namespace tandem {

class GgufFile;

// A 64-bit digest of the file's size, its metadata keys and scalar values, every tensor's name,
// type, shape and offset, and samples of every tensor's data (its first, middle and last 256
// bytes). Reads a few hundred KiB of a multi-GiB file: cheap at load and at reload; a change of
// bytes outside the samples is not seen (the file size, tensor table and samples change with any
// requantisation or retraining, which is what it guards against).
uint64_t model_fingerprint(const GgufFile& file);

}  // namespace tandem
