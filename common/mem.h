/*
 * common/mem.h: zeroed allocations for blocks made and freed per request.
 *
 * glibc 2.36 (Debian 12) serves calloc from its arenas only, never from the
 * per-thread cache (tcache) that malloc and free use, so a small calloc costs
 * about 260 instructions (callgrind) where malloc and memset cost well under
 * 100, and a freed block goes back to a cache calloc never reads.  Blocks
 * that live for one request use these; long-lived ones keep calloc.
 */
#ifndef COMMON_MEM_H
#define COMMON_MEM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* mem_zalloc - n zeroed bytes (n > 0), or NULL. */
static inline void *
mem_zalloc(size_t n)
{
    void *p = malloc(n);
    if (p != NULL) {
        /* an empty asm that may read and write memory: without it GCC turns
           malloc + memset back into calloc */
        __asm__ volatile("" : : "r"(p) : "memory");
        memset(p, 0, n);
    }
    return p;
}

/* mem_zalloc_array - count zeroed elements of size bytes, or NULL (also on overflow). */
static inline void *
mem_zalloc_array(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        return NULL;
    }
    return mem_zalloc(count * size);
}

#endif
