/* rng.h — the seeded random numbers of fastlora: a counter-based hash (splitmix64) so that any
 * element's draw is a pure function of (seed, stream, index). That is what lets dropout masks be
 * regenerated in the backward pass instead of stored, and lets threads fill arrays in any order
 * with the same result. Not a cryptographic generator. */
#ifndef FL_RNG_H
#define FL_RNG_H

#include <stdint.h>

static inline uint64_t fl_hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A stream key from a seed and up to three small identifiers (step, layer, projection, ...). */
static inline uint64_t fl_rng_stream(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    return fl_hash64(fl_hash64(fl_hash64(seed ^ 0x5eedull) ^ a) ^ (b << 20) ^ (c << 40));
}

/* Uniform in [0, 1) with 24 random bits, for element `index` of `stream`. */
static inline float fl_rng_uniform(uint64_t stream, uint64_t index) {
    return (float)(fl_hash64(stream ^ (index * 0xd1b54a32d192ed03ull)) >> 40) * (1.0f / 16777216.0f);
}

/* Fills n floats with U(lo, hi). */
void fl_rng_fill_uniform(float *out, size_t n, uint64_t stream, float lo, float hi);

#endif
