/* The memory bound of counting into a count-min sketch on this machine:
 * N k-mers (random 64-bit hashes), each incrementing one byte counter in
 * each of four tables of ~200 M entries (kmer count -N 4 -x 2e8: 800 MB),
 * on huge pages, with the tables' lines prefetched D k-mers ahead.
 * Nothing else: no reading, parsing or k-mer hashing, no first touch
 * (the tables are zeroed before the clock starts).
 *
 *   gcc -O2 -o update-bound bench/kmer/update-bound.c
 *   ./update-bound 100000000 32                 # one core
 *   ./update-bound 50000000 32 & ./update-bound 50000000 32 & wait   # two
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
    if (argc != 3) {
        fprintf(stderr, "usage: %s N_KMERS PREFETCH_DISTANCE\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    uint64_t ahead = strtoull(argv[2], NULL, 10);
    const uint64_t size[4] = {199999999ULL, 199999991ULL, 199999973ULL, 199999971ULL};
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
    uint64_t sum = 0;  /* keeps the updates observable */
    for (int k = 0; k < 4; k++)
        for (uint64_t j = 0; j < size[k]; j += 4096) sum += table[k][j];
    printf("%llu k-mers, prefetch %llu ahead: %.2f s (%.1f ns per k-mer, 4 updates) [%llu]\n",
           (unsigned long long)n, (unsigned long long)ahead, took, took / n * 1e9, (unsigned long long)sum);
    return 0;
}
