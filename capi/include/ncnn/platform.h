/* ncnn_c: the build switches ncnn's headers test, with the values of a Linux build of ncnn
 * that has Vulkan. libncnn_c.so always provides every feature listed here; turning one off
 * in a program only hides declarations, it does not change the library.
 */

#ifndef NCNN_PLATFORM_H
#define NCNN_PLATFORM_H

#define NCNN_STDIO 1
#define NCNN_STRING 1
#define NCNN_SIMPLEOCV 0
#define NCNN_SIMPLEOMP 0
#define NCNN_SIMPLESTL 0
#define NCNN_SIMPLEMATH 0
#define NCNN_THREADS 1
#define NCNN_BENCHMARK 0
#define NCNN_C_API 1
#define NCNN_PLATFORM_API 1
#define NCNN_PIXEL 1
#define NCNN_PIXEL_ROTATE 1
#define NCNN_PIXEL_AFFINE 1
#define NCNN_PIXEL_DRAWING 1
#define NCNN_VULKAN 1
#define NCNN_SYSTEM_GLSLANG 0
#define NCNN_RUNTIME_CPU 1
#define NCNN_GNU_INLINE_ASM 1
#define NCNN_INT8 1
#define NCNN_BF16 1
#define NCNN_FORCE_INLINE inline __attribute__((__always_inline__))
#define NCNN_BATCH 1

#define NCNN_VERSION_STRING "0.1.0"

/* The library is built with hidden visibility and exports exactly the functions declared in
 * c_api.h. Programs see a plain NCNN_EXPORT, which is also valid on the "struct NCNN_EXPORT"
 * lines ncnn's header uses. */
#ifndef NCNN_EXPORT
#if defined(NCNN_C_BUILDING_LIBRARY) && (defined(__GNUC__) || defined(__clang__))
#define NCNN_EXPORT __attribute__((visibility("default")))
#else
#define NCNN_EXPORT
#endif
#endif

#include <stdio.h> /* FILE, for ncnn_datareader_create_from_stdio */

#endif /* NCNN_PLATFORM_H */
