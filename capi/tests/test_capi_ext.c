/* ncnn_c's C extensions (c_api_ext.h), from C: ncnn_pipelinecache_last_error.
 *
 * Usage: test_capi_ext [MISSING_PATH]. Prints one line per check and "N passed, M failed". */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_ext.h"

#ifndef NCNN_C_API_EXT
#error "c_api_ext.h must define NCNN_C_API_EXT"
#endif

static int passed = 0, failed = 0;

static void check(int ok, const char* what, const char* detail)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
    if (ok)
        passed++;
    else
        failed++;
}

static int contains(const char* s, const char* needle)
{
    return s != NULL && strstr(s, needle) != NULL;
}

int main(int argc, char** argv)
{
    const char* missing = argc > 1 ? argv[1] : "/nonexistent/ncnn_c_test.vkcache";
    ncnn_pipelinecache_t pc = ncnn_pipelinecache_create(0);
    check(pc != NULL, "create", NULL);
    if (!pc)
        return 1;

    check(ncnn_pipelinecache_last_error(pc) == NULL, "no load yet: NULL", NULL);

    /* a valid (empty) cache of this device, loaded back: accepted, no error */
    size_t size = 0;
    check(ncnn_pipelinecache_save_memory(pc, NULL, &size) == 0 && size >= 128, "save_memory size", NULL);
    unsigned char* good = (unsigned char*)malloc(size);
    check(ncnn_pipelinecache_save_memory(pc, good, &size) == 0, "save_memory", NULL);

    /* garbage: rejected, the reason names what failed */
    unsigned char junk[16] = {1, 2, 3};
    check(ncnn_pipelinecache_load_memory(pc, junk, sizeof(junk)) != 0, "junk rejected", NULL);
    const char* e = ncnn_pipelinecache_last_error(pc);
    check(contains(e, "shorter than"), "junk reason", e);
    /* the string stays valid while the cache lives, and the same reason gives the same pointer */
    check(ncnn_pipelinecache_load_memory(pc, junk, sizeof(junk)) != 0 && ncnn_pipelinecache_last_error(pc) == e,
          "same reason, same string", NULL);

    /* one flipped header byte: the checksum field is named */
    unsigned char* bad = (unsigned char*)malloc(size);
    memcpy(bad, good, size);
    bad[36] ^= 1;
    check(ncnn_pipelinecache_load_memory(pc, bad, size) != 0, "flipped byte rejected", NULL);
    e = ncnn_pipelinecache_last_error(pc);
    check(contains(e, "header_fnv1a"), "flipped byte reason", e);

    /* a missing file is a miss with its own reason */
    check(ncnn_pipelinecache_load(pc, missing) != 0, "missing file", NULL);
    e = ncnn_pipelinecache_last_error(pc);
    check(contains(e, missing), "missing file reason names the path", e);

    /* a successful load clears it */
    check(ncnn_pipelinecache_load_memory(pc, good, size) == 0, "good load", NULL);
    check(ncnn_pipelinecache_last_error(pc) == NULL, "after a good load: NULL", NULL);

    /* a bad handle gives NULL (and a log line), never a crash */
    check(ncnn_pipelinecache_last_error(NULL) == NULL, "NULL handle", NULL);

    free(bad);
    free(good);
    ncnn_pipelinecache_destroy(pc);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
