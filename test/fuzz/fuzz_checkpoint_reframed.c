/* The checkpoint loader's payload parser, behind valid framing.
 *
 * Input: a mode byte, then a checkpoint payload (the bytes `zstd -d` gives
 * for a checkpoint: "SIVECKPT", header, parameters, payload hash).  The
 * target wraps the payload into a file that passes every check before the
 * payload parser (the bits apply in this order):
 *   mode bit 2  "re-counted": the parameter count (offset 80) is set to
 *               the one the layer sizes (offsets 16..47) imply, so that
 *               any change of the sizes passes the count check;
 *   mode bit 0  "re-hashed": the payload's last 8 bytes are replaced by
 *               the FNV-1a 64 of the bytes before them, so the payload
 *               hash holds too and the fuzzer reaches the header checks,
 *               the model construction and the metadata;
 *   mode bit 1  "claimed size": instead of compressing with libzstd (true
 *               content size, checksum), the frame is written by hand as
 *               raw blocks and declares the content size the payload's
 *               parameter count implies (88 + 4 * count + 8), whatever the
 *               payload really holds - a header and a frame that claim up
 *               to 2^32 parameters around a few bytes (issue 14 #1);
 *   mode bit 3  with bit 1: no block is marked as the last one, so the
 *               frame is cut short rather than complete (zstd itself
 *               reports a complete frame of the wrong size at its last
 *               block, before the loader could act on the claim);
 * and always the trailer with the FNV-1a 64 of the frame.
 *
 * Oracle: as fuzz_checkpoint.c (check_checkpoint in fuzz_common.h), on
 * the file the target built. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A zstd frame written by hand: 8-byte content size `claim`, no checksum,
 * 1 MiB window, the payload as raw blocks of at most 128 KiB, the last one
 * marked as such when `end`. */
static void frame_claiming(buf *out, const uint8_t *p, size_t n,
                           uint64_t claim, int end)
{
    uint8_t h[14];
    put32(h, 0xFD2FB528u);
    h[4] = 0xC0; /* content size on 8 bytes, no single segment, no checksum */
    h[5] = 0x50; /* window 2^20 */
    put64(h + 6, claim);
    buf_put(out, h, sizeof h);
    size_t done = 0;
    do {
        size_t m = n - done > ((size_t)128 << 10) ? (size_t)128 << 10 : n - done;
        uint32_t bh = (uint32_t)m << 3 | (end && done + m == n); /* raw */
        uint8_t b[3] = {(uint8_t)bh, (uint8_t)(bh >> 8), (uint8_t)(bh >> 16)};
        buf_put(out, b, 3);
        if (m)
            buf_put(out, p + done, m);
        done += m;
    } while (done < n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static memfile f;
    if (!f.path[0])
        memfile_open(&f, "checkpoint");
    if (size < 1)
        return 0;
    int mode = data[0];
    buf payload = {0}, file = {0};
    buf_put(&payload, data + 1, size - 1);
    size_t n = payload.n;
    if ((mode & 4) && n >= 88) {
        uint64_t z[4];
        for (int k = 0; k < 4; k++)
            z[k] = le64(payload.p + 16 + 8 * k);
        put64(payload.p + 80,
              z[1] * (z[0] + 1) + z[2] * (z[1] + 1) + z[3] * (z[2] + 1));
    }
    if ((mode & 1) && n >= 8)
        put64(payload.p + n - 8, ref_fnv(FNV_OFFSET, payload.p, n - 8));
    if (mode & 2) {
        uint64_t claim = n;
        if (n >= 88) {
            uint64_t count = le64(payload.p + 80);
            claim = count <= ((uint64_t)1 << 40) ? 88 + 4 * count + 8 : count;
        }
        frame_claiming(&file, payload.p, n, claim, !(mode & 8));
    } else {
        buf_put_zstd(&file, payload.p, n);
    }
    uint8_t t[20];
    put32(t, 0x184D2A53u);
    put32(t + 4, 12);
    memcpy(t + 8, "SIVE", 4);
    put64(t + 12, ref_fnv(FNV_OFFSET, file.p, file.n));
    buf_put(&file, t, sizeof t);
    memfile_set(&f, file.p, file.n);
    check_checkpoint(f.path, file.p, file.n);
    buf_free(&payload);
    buf_free(&file);
    return 0;
}
