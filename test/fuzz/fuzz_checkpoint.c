/* The checkpoint loader on hostile file bytes.
 *
 * Input: the file, as is, handed to sive_checkpoint_load() as a memfd.
 * Most mutations break the trailer's FNV-1a hash of the frame and are
 * rejected there (libFuzzer's comparison tracing does get past it at
 * times); fuzz_checkpoint_reframed.c reaches the payload parser directly.
 *
 * Oracle (fuzz_common.h, check_checkpoint): the file is checked and
 * decoded independently from mlp.h's description of format version 1; the
 * library must accept exactly the files the reference accepts, with the
 * same layer sizes, parameters (bit for bit) and metadata, and reject the
 * others with SIVE_E_FORMAT, a message naming the file and NULL outputs;
 * sive_checkpoint_from_bytes() on the same bytes must agree, and an
 * accepted checkpoint must go to bytes and back unchanged. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static memfile f;
    if (!f.path[0])
        memfile_open(&f, "checkpoint");
    memfile_set(&f, data, size);
    check_checkpoint(f.path, data, size);
    return 0;
}
