/* The memory bound of counting into a count-min sketch on this machine:
 * N k-mers (random 64-bit hashes), each incrementing one byte counter in
 * each of four tables of ~200 M entries (kmer count -N 4 -x 2e8: 800 MB),
 * on huge pages, with the tables' lines prefetched D k-mers ahead; then
 * a lookup pass (the least of the four counters, as filter-abund reads
 * them). Nothing else: no reading, parsing or k-mer hashing, no first
 * touch (the tables are zeroed before the clock starts). ENTRIES (default
 * 2e8) sets the tables' size (1e8: filter-abund-single -x 1e8).
 *
 *   gcc -O2 -o update-bound bench/kmer/update-bound.c
 *   ./update-bound 100000000 32                 # one core
 *   ./update-bound 50000000 32 & ./update-bound 50000000 32 & wait   # two
 *   ./update-bound 20000000 32 1e8              # 400 MB of tables
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s N_KMERS PREFETCH_DISTANCE [ENTRIES]\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    uint64_t ahead = strtoull(argv[2], NULL, 10);
    uint64_t entries = argc == 4 ? (uint64_t)strtod(argv[3], NULL) : 200000000ULL;
    /* four sizes just below ENTRIES (khmer takes primes; any odd sizes
     * spread the hashes alike) */
    uint64_t size[4];
    for (int k = 0; k < 4; k++) size[k] = entries - 1 - 2 * k;
    const uint64_t huge = 1ULL << 21;
    uint8_t *table[4];
    for (int k = 0; k < 4; k++) {
        uint64_t bytes = (size[k] + huge) & ~(huge - 1);
        table[k] = aligned_alloc(huge, bytes);
        madvise(table[k], bytes, MADV_HUGEPAGE);
        memset(table[k], 0, bytes);
    }
    double start = now();
    for (uint64_t i = 0; i < n; i++) {
        if (ahead) {
            uint64_t h = mix(i + ahead);
            for (int k = 0; k < 4; k++) __builtin_prefetch(table[k] + h % size[k], 1, 0);
        }
        uint64_t h = mix(i);
        for (int k = 0; k < 4; k++) {
            uint8_t *c = table[k] + h % size[k];
            if (*c != 255) (*c)++;
        }
    }
    double took = now() - start;
    start = now();
    uint64_t low = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (ahead) {
            uint64_t h = mix(i + ahead);
            for (int k = 0; k < 4; k++) __builtin_prefetch(table[k] + h % size[k], 0, 0);
        }
        uint64_t h = mix(i);
        uint8_t least = 255;
        for (int k = 0; k < 4; k++) {
            uint8_t c = table[k][h % size[k]];
            if (c < least) least = c;
        }
        low += least < 2;
    }
    double looked = now() - start;
    uint64_t sum = 0;  /* keeps the updates observable */
    for (int k = 0; k < 4; k++)
        for (uint64_t j = 0; j < size[k]; j += 4096) sum += table[k][j];
    printf("%llu k-mers, prefetch %llu ahead, 4 x %llu entries: updates %.2f s (%.1f ns per k-mer), "
           "lookups %.2f s (%.1f ns per k-mer) [%llu %llu]\n",
           (unsigned long long)n, (unsigned long long)ahead, (unsigned long long)entries, took, took / n * 1e9,
           looked, looked / n * 1e9, (unsigned long long)sum, (unsigned long long)low);
    return 0;
}
