/* zlib-ng's inflate for inflate_bench.c, in a translation unit of its own:
 * zlib-ng.h (2.x) and zlib.h declare conflicting types and cannot be
 * included together. */
#include <stddef.h>
#include <stdint.h>
#include <zlib-ng.h>

const char *zngw_version(void) { return ZLIBNG_VERSION; }

void *zngw_new(void)
{
    static zng_stream z;
    return zng_inflateInit2(&z, -15) == Z_OK ? &z : NULL;
}

size_t zngw_inflate(void *ctx, const uint8_t *in, size_t inlen, uint8_t *out, size_t cap)
{
    zng_stream *z = ctx;
    if (zng_inflateReset(z) != Z_OK)
        return (size_t)-1;
    z->next_in = in;
    z->avail_in = (uint32_t)inlen;
    z->next_out = out;
    z->avail_out = (uint32_t)cap;
    if (zng_inflate(z, Z_FINISH) != Z_STREAM_END)
        return (size_t)-1;
    return z->total_out;
}

uint32_t zngw_crc(const uint8_t *b, size_t n) { return (uint32_t)zng_crc32(0, b, (uint32_t)n); }
