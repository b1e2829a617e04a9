/* ncnn_c's own additions to ncnn's C API, served by the same libncnn_c.so.
 *
 * c_api.h stays exactly ncnn's (tests compare the two both ways); everything here is ours
 * and has no counterpart in ncnn. A program that uses these functions is tied to ncnn_c:
 * test NCNN_C_API_EXT to keep it buildable against ncnn as well.
 *
 * capi/build.py reads this file as it reads c_api.h: one "NCNN_EXPORT ret name(args);"
 * per line.
 */

#ifndef NCNN_C_API_EXT_H
#define NCNN_C_API_EXT_H

#include "c_api.h"

#define NCNN_C_API_EXT 1

#if NCNN_C_API

#ifdef __cplusplus
extern "C" {
#endif

#if NCNN_VULKAN
/* Why the last ncnn_pipelinecache_load / ncnn_pipelinecache_load_memory on this cache was
 * rejected (a rejection is a cache miss: the field, the file offset, what the file has and
 * what this library and device expect), or NULL when that load succeeded or none was made.
 * The string belongs to the cache and stays valid until the cache is destroyed. */
NCNN_EXPORT const char* ncnn_pipelinecache_last_error(const ncnn_pipelinecache_t pipelinecache);
#endif /* NCNN_VULKAN */

#ifdef __cplusplus
}
#endif

#endif /* NCNN_C_API */

#endif /* NCNN_C_API_EXT_H */
