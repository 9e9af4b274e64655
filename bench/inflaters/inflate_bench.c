/*
 * inflate_bench.c — which raw-DEFLATE inflater is fastest for BGZF blocks?
 *
 * Memory-maps a BGZF file (e.g. a BAM), indexes its blocks, then inflates
 * every block's raw DEFLATE payload into a 64 KiB buffer, single-threaded,
 * with each available library.  Two modes are timed per library:
 *   inflate      : decompression only
 *   inflate+crc  : decompression plus the block's CRC32 using the same
 *                  library's CRC routine, compared with the BGZF trailer
 *                  (this is what fasthts does for every block).
 * Every timed call also checks that the output size equals ISIZE.  Before
 * timing, one untimed pass per library checks every block's CRC32 (computed
 * with zlib's crc32 as the reference) so a fast wrong answer is impossible.
 *
 * Libraries (compile-time switches, see run.sh):
 *   libdeflate        system libdeflate (-ldeflate)             always
 *   libdeflate-crate  libdeflate bundled in the libdeflate-sys crate, linked
 *                     as a relocatable object whose public symbols were
 *                     renamed ld26_*                      (-DHAVE_LD_CRATE)
 *   isal              ISA-L isal_inflate, crc_flag=ISAL_DEFLATE, CRC via
 *                     crc32_gzip_refl                            always
 *   isal-fused        ISA-L isal_inflate with crc_flag=ISAL_GZIP_NO_HDR: the
 *                     CRC is computed inside the inflate loop (inflate+crc
 *                     mode only)                                 always
 *   zlib              inflateInit2(-15)/inflateReset/inflate + crc32 always
 *   zlib-ng           zng_ API                              (-DHAVE_ZLIBNG)
 *
 * Usage: inflate_bench FILE.bam [REPEATS=5]
 * Build: see run.sh
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libdeflate.h>
#include <isa-l/igzip_lib.h>
#include <isa-l/crc.h>
#include <zlib.h>
#ifdef HAVE_ZLIBNG
/* zng_wrap.c: zlib-ng.h cannot be included beside zlib.h. */
const char *zngw_version(void);
void *zngw_new(void);
size_t zngw_inflate(void *ctx, const uint8_t *in, size_t inlen, uint8_t *out, size_t cap);
uint32_t zngw_crc(const uint8_t *b, size_t n);
#endif

#ifdef HAVE_LD_CRATE
/* The crate-bundled libdeflate, symbols renamed by objcopy in run.sh.  Same
 * ABI as the system header's functions. */
struct libdeflate_decompressor *ld26_alloc_decompressor(void);
enum libdeflate_result ld26_deflate_decompress(struct libdeflate_decompressor *,
                                               const void *, size_t, void *,
                                               size_t, size_t *);
uint32_t ld26_crc32(uint32_t, const void *, size_t);
#endif

#define OUTCAP 65536

/* ------------------------------------------------------------------ */
/* BGZF block index                                                    */

struct block {
    const uint8_t *payload; /* raw deflate data */
    uint32_t clen;          /* payload length */
    uint32_t isize;         /* uncompressed size from trailer */
    uint32_t crc;           /* CRC32 from trailer */
};

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static struct block *index_blocks(const uint8_t *base, size_t size, size_t *nout,
                                  uint64_t *usum, uint64_t *csum)
{
    size_t cap = 1 << 16, n = 0, off = 0;
    struct block *b = malloc(cap * sizeof *b);
    *usum = 0;
    *csum = 0;
    while (off < size) {
        const uint8_t *h = base + off;
        if (size - off < 18 + 8 || h[0] != 31 || h[1] != 139 || h[2] != 8 ||
            !(h[3] & 4)) {
            fprintf(stderr, "bad gzip/BGZF header at offset %zu\n", off);
            exit(2);
        }
        unsigned xlen = le16(h + 10);
        if (12 + (size_t)xlen > size - off) {
            fprintf(stderr, "truncated extra field at offset %zu\n", off);
            exit(2);
        }
        /* find the BC subfield (SI1='B', SI2='C', SLEN=2) */
        long bsize = -1;
        for (unsigned x = 0; x + 4 <= xlen;) {
            const uint8_t *sf = h + 12 + x;
            unsigned slen = le16(sf + 2);
            if (sf[0] == 'B' && sf[1] == 'C' && slen == 2 && x + 6 <= xlen)
                bsize = le16(sf + 4);
            x += 4 + slen;
        }
        if (bsize < 0) {
            fprintf(stderr, "no BC subfield at offset %zu\n", off);
            exit(2);
        }
        size_t total = (size_t)bsize + 1;
        size_t hdr = 12 + xlen;
        if (total > size - off || total < hdr + 8) {
            fprintf(stderr, "bad BSIZE %ld at offset %zu\n", bsize, off);
            exit(2);
        }
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap * sizeof *b);
        }
        b[n].payload = h + hdr;
        b[n].clen = (uint32_t)(total - hdr - 8);
        b[n].crc = le32(h + total - 8);
        b[n].isize = le32(h + total - 4);
        if (b[n].isize > OUTCAP) {
            fprintf(stderr, "ISIZE %u > 64 KiB at offset %zu\n", b[n].isize, off);
            exit(2);
        }
        *usum += b[n].isize;
        *csum += total;
        n++;
        off += total;
    }
    *nout = n;
    return b;
}

/* ------------------------------------------------------------------ */
/* Inflater back-ends: each returns output length, or (size_t)-1.      */

typedef size_t (*inflate_fn)(void *ctx, const uint8_t *in, size_t inlen,
                             uint8_t *out, size_t cap);
typedef uint32_t (*crc_fn)(const uint8_t *buf, size_t len);
/* fused: inflate and compute CRC in one call; returns len, sets *crc */
typedef size_t (*fused_fn)(void *ctx, const uint8_t *in, size_t inlen,
                           uint8_t *out, size_t cap, uint32_t *crc);

/* libdeflate (system) */
static size_t ld_inflate(void *ctx, const uint8_t *in, size_t inlen,
                         uint8_t *out, size_t cap)
{
    size_t got;
    if (libdeflate_deflate_decompress(ctx, in, inlen, out, cap, &got) !=
        LIBDEFLATE_SUCCESS)
        return (size_t)-1;
    return got;
}
static uint32_t ld_crc(const uint8_t *b, size_t n) { return libdeflate_crc32(0, b, n); }

#ifdef HAVE_LD_CRATE
static size_t ld26_inflate(void *ctx, const uint8_t *in, size_t inlen,
                           uint8_t *out, size_t cap)
{
    size_t got;
    if (ld26_deflate_decompress(ctx, in, inlen, out, cap, &got) !=
        LIBDEFLATE_SUCCESS)
        return (size_t)-1;
    return got;
}
static uint32_t ld26_crc(const uint8_t *b, size_t n) { return ld26_crc32(0, b, n); }
#endif

/* ISA-L */
static size_t isal_inflate_blk(void *ctx, const uint8_t *in, size_t inlen,
                               uint8_t *out, size_t cap)
{
    struct inflate_state *s = ctx;
    isal_inflate_reset(s);
    s->crc_flag = ISAL_DEFLATE;
    s->next_in = (uint8_t *)in;
    s->avail_in = (uint32_t)inlen;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    int r = isal_inflate(s);
    if (r != ISAL_DECOMP_OK || s->block_state != ISAL_BLOCK_FINISH)
        return (size_t)-1;
    return s->total_out;
}
static uint32_t isal_crc(const uint8_t *b, size_t n) { return crc32_gzip_refl(0, b, n); }
static size_t isal_fused_blk(void *ctx, const uint8_t *in, size_t inlen,
                             uint8_t *out, size_t cap, uint32_t *crc)
{
    struct inflate_state *s = ctx;
    isal_inflate_reset(s);
    /* raw deflate, gzip CRC tracked, no header/trailer parsing */
    s->crc_flag = ISAL_GZIP_NO_HDR;
    s->next_in = (uint8_t *)in;
    s->avail_in = (uint32_t)inlen;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    int r = isal_inflate(s);
    if (r != ISAL_DECOMP_OK || s->block_state != ISAL_BLOCK_FINISH)
        return (size_t)-1;
    *crc = s->crc;
    return s->total_out;
}

/* zlib */
static size_t zlib_inflate_blk(void *ctx, const uint8_t *in, size_t inlen,
                               uint8_t *out, size_t cap)
{
    z_stream *z = ctx;
    if (inflateReset(z) != Z_OK)
        return (size_t)-1;
    z->next_in = (Bytef *)in;
    z->avail_in = (uInt)inlen;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    if (inflate(z, Z_FINISH) != Z_STREAM_END)
        return (size_t)-1;
    return z->total_out;
}
static uint32_t zlib_crc(const uint8_t *b, size_t n) { return (uint32_t)crc32(0, b, (uInt)n); }


struct inflater {
    const char *name;
    void *ctx;
    inflate_fn inflate; /* NULL for fused-only entries */
    crc_fn crc;
    fused_fn fused;     /* non-NULL: only inflate+crc mode, done by this */
};

/* ------------------------------------------------------------------ */

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n)
{
    double *t = malloc(n * sizeof *t);
    memcpy(t, v, n * sizeof *t);
    qsort(t, n, sizeof *t, cmpd);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

static uint8_t outbuf[OUTCAP] __attribute__((aligned(64)));

/* One timed pass. mode 0: inflate only; mode 1: inflate+CRC (checked). */
static void run_pass(const struct inflater *f, int mode, const struct block *b,
                     size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t got;
        if (f->fused) {
            uint32_t c;
            got = f->fused(f->ctx, b[i].payload, b[i].clen, outbuf, OUTCAP, &c);
            if (got == b[i].isize && c != b[i].crc)
                goto crcfail;
        } else {
            got = f->inflate(f->ctx, b[i].payload, b[i].clen, outbuf, OUTCAP);
            if (mode == 1 && got == b[i].isize && f->crc(outbuf, got) != b[i].crc)
                goto crcfail;
        }
        if (got != b[i].isize) {
            fprintf(stderr, "%s: block %zu: got %zd bytes, ISIZE %u\n", f->name,
                    i, (ssize_t)got, b[i].isize);
            exit(3);
        }
        continue;
    crcfail:
        fprintf(stderr, "%s: block %zu: CRC mismatch\n", f->name, i);
        exit(3);
    }
}

/* Untimed verification: every block's size and CRC (zlib crc32 as the
 * reference, independent of the library under test). */
static void verify(const struct inflater *f, const struct block *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t got;
        uint32_t fc = 0;
        if (f->fused)
            got = f->fused(f->ctx, b[i].payload, b[i].clen, outbuf, OUTCAP, &fc);
        else
            got = f->inflate(f->ctx, b[i].payload, b[i].clen, outbuf, OUTCAP);
        if (got != b[i].isize) {
            fprintf(stderr, "verify %s: block %zu: size %zd != ISIZE %u\n",
                    f->name, i, (ssize_t)got, b[i].isize);
            exit(3);
        }
        uint32_t ref = (uint32_t)crc32(0, outbuf, (uInt)got);
        if (ref != b[i].crc || (f->fused && fc != b[i].crc) ||
            (!f->fused && f->crc(outbuf, got) != b[i].crc)) {
            fprintf(stderr, "verify %s: block %zu: CRC mismatch\n", f->name, i);
            exit(3);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.bam [REPEATS=5]\n", argv[0]);
        return 1;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1)
        reps = 1;

    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    struct stat st;
    fstat(fd, &st);
    size_t size = (size_t)st.st_size;
    const uint8_t *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise((void *)base, size, MADV_WILLNEED);
    /* touch every page so page faults are not timed */
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < size; i += 4096)
        sink ^= base[i];
    (void)sink;

    size_t nblk;
    uint64_t usum, csum;
    struct block *blk = index_blocks(base, size, &nblk, &usum, &csum);
    printf("file: %s\n", argv[1]);
    printf("blocks: %zu  compressed: %.1f MB  uncompressed: %.1f MB  reps: %d\n",
           nblk, csum / 1e6, usum / 1e6, reps);

    /* set up inflaters */
    struct inflater inf[8];
    int ni = 0;
    struct libdeflate_decompressor *ld = libdeflate_alloc_decompressor();
    inf[ni++] = (struct inflater){"libdeflate-" LIBDEFLATE_VERSION_STRING, ld,
                                  ld_inflate, ld_crc, NULL};
#ifdef HAVE_LD_CRATE
    inf[ni++] = (struct inflater){"libdeflate-crate-" LD_CRATE_VERSION,
                                  ld26_alloc_decompressor(), ld26_inflate,
                                  ld26_crc, NULL};
#endif
    static struct inflate_state is1, is2;
    isal_inflate_init(&is1);
    isal_inflate_init(&is2);
    inf[ni++] = (struct inflater){"isa-l", &is1, isal_inflate_blk, isal_crc, NULL};
    inf[ni++] = (struct inflater){"isa-l-fused-crc", &is2, NULL, NULL, isal_fused_blk};
    static z_stream zs;
    if (inflateInit2(&zs, -15) != Z_OK) {
        fprintf(stderr, "inflateInit2 failed\n");
        return 1;
    }
    inf[ni++] = (struct inflater){"zlib-" ZLIB_VERSION, &zs, zlib_inflate_blk,
                                  zlib_crc, NULL};
#ifdef HAVE_ZLIBNG
    void *zn = zngw_new();
    if (!zn) {
        fprintf(stderr, "zng_inflateInit2 failed\n");
        return 1;
    }
    static char zng_name[64];
    snprintf(zng_name, sizeof zng_name, "zlib-ng-%s", zngw_version());
    inf[ni++] = (struct inflater){zng_name, zn, zngw_inflate, zngw_crc, NULL};
#endif

    /* correctness first */
    for (int k = 0; k < ni; k++)
        verify(&inf[k], blk, nblk);
    printf("verified: all %d inflaters match ISIZE and CRC32 on every block\n", ni);

    /* timing: [inflater][mode][rep] */
    double (*wall)[2][64] = calloc(ni, sizeof *wall);
    double (*cpu)[2][64] = calloc(ni, sizeof *cpu);
    if (reps > 64)
        reps = 64;
    for (int r = 0; r < reps; r++) {
        /* alternate: rotate the starting inflater each repetition */
        for (int j = 0; j < ni; j++) {
            int k = (j + r) % ni;
            for (int mode = 0; mode < 2; mode++) {
                if (inf[k].fused && mode == 0)
                    continue;
                double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
                run_pass(&inf[k], mode, blk, nblk);
                double c1 = now(CLOCK_PROCESS_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);
                wall[k][mode][r] = w1 - w0;
                cpu[k][mode][r] = c1 - c0;
            }
        }
        fprintf(stderr, "rep %d/%d done\n", r + 1, reps);
    }

    /* report */
    double refw[2], refc[2];
    for (int mode = 0; mode < 2; mode++) {
        refw[mode] = median(wall[0][mode], reps);
        refc[mode] = median(cpu[0][mode], reps);
    }
    printf("\nmedians of %d reps; MB = 10^6 uncompressed bytes; ratio = time / %s time "
           "in the same mode (<1 = faster)\n",
           reps, inf[0].name);
    printf("%-24s %-12s %9s %9s %7s | %9s %9s %7s | %s\n", "inflater", "mode",
           "wall_s", "MB/s", "ratio", "cpu_s", "cpuMB/s", "ratio", "wall min..max");
    for (int mode = 0; mode < 2; mode++) {
        for (int k = 0; k < ni; k++) {
            if (inf[k].fused && mode == 0)
                continue;
            double mw = median(wall[k][mode], reps), mc = median(cpu[k][mode], reps);
            double lo = wall[k][mode][0], hi = lo;
            for (int r = 1; r < reps; r++) {
                if (wall[k][mode][r] < lo) lo = wall[k][mode][r];
                if (wall[k][mode][r] > hi) hi = wall[k][mode][r];
            }
            printf("%-24s %-12s %9.3f %9.1f %7.3f | %9.3f %9.1f %7.3f | %.3f..%.3f\n",
                   inf[k].name, mode ? "inflate+crc" : "inflate", mw, usum / 1e6 / mw,
                   mw / refw[mode], mc, usum / 1e6 / mc, mc / refc[mode], lo, hi);
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("\nprocess totals: user %.2f s, sys %.2f s, involuntary ctx switches %ld\n",
           ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, ru.ru_nivcsw);
    return 0;
}
