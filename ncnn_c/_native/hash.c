
#include <stdint.h>
#include <stddef.h>

const char ncnnc_hash_build_stamp[] = "NCNNC_STAMP:@STAMP@";

uint32_t ncnnc_fnv1a32(const uint8_t* data, size_t size)
{
    uint32_t h = 0x811c9dc5u;
    size_t i;
    for (i = 0; i < size; i++)
    {
        h ^= data[i];
        h *= 0x01000193u;
    }
    return h;
}

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

uint32_t ncnnc_murmur3_32(const uint8_t* data, size_t size, uint32_t seed)
{
    const uint32_t c1 = 0xcc9e2d51u;
    const uint32_t c2 = 0x1b873593u;
    uint32_t h = seed;
    uint32_t k;
    size_t nblocks = size / 4;
    size_t i;
    const uint8_t* tail;

    for (i = 0; i < nblocks; i++)
    {
        const uint8_t* p = data + i * 4;
        k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5u + 0xe6546b64u;
    }

    tail = data + nblocks * 4;
    k = 0;
    switch (size & 3)
    {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= (uint32_t)tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }

    h ^= (uint32_t)size;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
