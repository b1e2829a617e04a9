/* A service that keeps its Vulkan pipeline caches in SQLite.
 *
 *   cache_service DB PARAM BIN IMAGE.ppm [LABELS] [DEVICE_INDEX]
 *
 * A long-running service (or a fleet of short-lived workers) starts faster when it does not
 * compile its shaders again: at start it looks up the cache of (model, device) in its
 * database and hands the bytes to ncnn_pipelinecache_load_memory before loading the model;
 * after the first inference it stores ncnn_pipelinecache_save_memory's bytes back. Run it
 * twice: the first run is a miss (cold), the second loads the row (warm).
 *
 * The device part of the key is the Vulkan device index and this machine's name: a row
 * written by another GPU or driver would be rejected by load_memory (a miss, then replaced),
 * so the key only keeps one valid row per device. Link with -lsqlite3.
 * Compiles unchanged against ncnn's own c_api.h.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c_api.h"
#include "common.h"

static const char* SCHEMA = "CREATE TABLE IF NOT EXISTS pipeline_cache ("
                            " model TEXT NOT NULL, device TEXT NOT NULL, data BLOB NOT NULL,"
                            " saved_at INTEGER NOT NULL, PRIMARY KEY (model, device))";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Loads the row of (model, device) into the cache. 0: loaded; -1: miss (none, or rejected). */
static int cache_from_db(sqlite3* db, const char* model, const char* device, ncnn_pipelinecache_t pc, int* bytes)
{
    sqlite3_stmt* st = NULL;
    int ret = -1;
    *bytes = 0;
    if (sqlite3_prepare_v2(db, "SELECT data FROM pipeline_cache WHERE model = ?1 AND device = ?2", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
    {
        const unsigned char* data = (const unsigned char*)sqlite3_column_blob(st, 0);
        *bytes = sqlite3_column_bytes(st, 0);
        /* a stale or foreign cache is rejected as a whole: the service just starts cold */
        ret = data && ncnn_pipelinecache_load_memory(pc, data, (size_t)*bytes) == 0 ? 0 : -1;
    }
    sqlite3_finalize(st);
    return ret;
}

/* Stores the cache's bytes as the row of (model, device). Returns the size, or -1. */
static long cache_to_db(sqlite3* db, const char* model, const char* device, ncnn_pipelinecache_t pc)
{
    sqlite3_stmt* st = NULL;
    unsigned char* buf;
    size_t size = 0;
    long ret = -1;
    /* ask for the size first, then fill a buffer of that size */
    if (ncnn_pipelinecache_save_memory(pc, NULL, &size) != 0 || size == 0)
        return -1;
    buf = (unsigned char*)malloc(size);
    if (!buf || ncnn_pipelinecache_save_memory(pc, buf, &size) != 0)
    {
        free(buf);
        return -1;
    }
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO pipeline_cache (model, device, data, saved_at) VALUES (?1, ?2, ?3, ?4)",
                           -1, &st, NULL)
            == SQLITE_OK)
    {
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, device, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, buf, (int)size, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
        if (sqlite3_step(st) == SQLITE_DONE)
            ret = (long)size;
    }
    sqlite3_finalize(st);
    free(buf);
    return ret;
}

int main(int argc, char** argv)
{
    const float mean_vals[3] = {104.f, 117.f, 123.f};
    const char *dbpath, *param, *bin, *model;
    char device[300], host[256];
    int device_index = 0, w = 0, h = 0, bytes = 0, loaded, ret = 1;
    long stored;
    double t0, t1;
    unsigned char* bgr;
    sqlite3* db = NULL;
    ncnn_pipelinecache_t pc;
    ncnn_net_t net;
    ncnn_option_t opt;
    ncnn_mat_t in, out = NULL;
    ncnn_extractor_t ex;

    if (argc < 5)
    {
        fprintf(stderr, "usage: %s DB PARAM BIN IMAGE.ppm [LABELS] [DEVICE_INDEX]\n", argv[0]);
        return 2;
    }
    dbpath = argv[1];
    param = argv[2];
    bin = argv[3];
    if (argc > 6)
        device_index = atoi(argv[6]);
    model = strrchr(param, '/') ? strrchr(param, '/') + 1 : param;
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "localhost");
    host[sizeof(host) - 1] = 0;
    snprintf(device, sizeof(device), "vulkan:%d@%s", device_index, host);

    bgr = read_ppm_bgr(argv[4], &w, &h);
    if (!bgr)
        return 2;
    if (sqlite3_open(dbpath, &db) != SQLITE_OK || sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
    {
        fprintf(stderr, "cannot open the database %s: %s\n", dbpath, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        free(bgr);
        return 1;
    }
    pc = ncnn_pipelinecache_create(device_index);
    if (!pc)
    {
        fprintf(stderr, "no Vulkan device %d\n", device_index);
        sqlite3_close(db);
        free(bgr);
        return 1;
    }
    loaded = cache_from_db(db, model, device, pc, &bytes) == 0;
    if (loaded)
        printf("cache: loaded %d bytes for (%s, %s)\n", bytes, model, device);
    else
        printf("cache: miss for (%s, %s)\n", model, device);

    net = ncnn_net_create();
    opt = ncnn_net_get_option(net);
    ncnn_net_set_vulkan_device(net, device_index);
    ncnn_option_set_use_vulkan_compute(opt, 1);
    ncnn_option_set_pipeline_cache(opt, pc); /* before load_model: pipelines are made there */
    t0 = now_ms();
    if (ncnn_net_load_param(net, param) != 0 || ncnn_net_load_model(net, bin) != 0)
    {
        fprintf(stderr, "cannot load %s / %s\n", param, bin);
        goto done;
    }
    t1 = now_ms();
    printf("load_model: %.1f ms (%s)\n", t1 - t0, loaded ? "warm" : "cold");

    in = ncnn_mat_from_pixels_resize(bgr, NCNN_MAT_PIXEL_BGR, w, h, w * 3, 227, 227, NULL);
    ncnn_mat_substract_mean_normalize(in, mean_vals, NULL);
    ex = ncnn_extractor_create(net);
    if (ncnn_extractor_input(ex, "data", in) == 0 && ncnn_extractor_extract(ex, "prob", &out) == 0)
    {
        print_topk((const float*)ncnn_mat_get_data(out), ncnn_mat_get_w(out), 5, argc > 5 ? argv[5] : NULL);
        stored = cache_to_db(db, model, device, pc);
        if (stored > 0)
        {
            printf("cache: stored %ld bytes (%zu pipelines)\n", stored, ncnn_pipelinecache_get_size(pc));
            ret = 0;
        }
        else
        {
            fprintf(stderr, "cache: cannot store: %s\n", sqlite3_errmsg(db));
        }
    }
    else
    {
        fprintf(stderr, "inference failed\n");
    }
    ncnn_mat_destroy(out);
    ncnn_extractor_destroy(ex);
    ncnn_mat_destroy(in);

done:
    ncnn_net_destroy(net);
    ncnn_pipelinecache_destroy(pc);
    sqlite3_close(db);
    free(bgr);
    return ret;
}
