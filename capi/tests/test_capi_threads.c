/* 8 threads at once, each with its own net, all sharing one pipeline cache.
 *
 *   test_capi_threads MODEL_DIR [cpu|vulkan]
 *
 * The main thread runs squeezenet once for the reference output; then 8 threads each load
 * their own net (with the shared cache in its option when on Vulkan) and run it twice on
 * the same input. Every output must match the reference (same top-1, max difference below
 * 1e-4). Prints "threads ok <top1>" and exits 0, or prints what differed and exits 1.
 * A deadlock shows up as the caller's timeout.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"

#define NTHREADS 8

static const char* g_dir;
static int g_vulkan;
static ncnn_pipelinecache_t g_cache;
static float g_ref[1000];
static int g_ref_n;

static int run_once(float* out, int* n)
{
    char param[1024], bin[1024];
    ncnn_net_t net = ncnn_net_create();
    ncnn_option_t opt = ncnn_net_get_option(net);
    ncnn_mat_t in = ncnn_mat_create_3d(227, 227, 3, NULL);
    ncnn_mat_t prob = 0;
    ncnn_extractor_t ex;
    int ret = -1, q, i;

    ncnn_option_set_num_threads(opt, 1);
    if (g_vulkan)
    {
        ncnn_option_set_use_vulkan_compute(opt, 1);
        ncnn_option_set_pipeline_cache(opt, g_cache);
    }
    snprintf(param, sizeof(param), "%s/squeezenet_v1.1.param", g_dir);
    snprintf(bin, sizeof(bin), "%s/squeezenet_v1.1.bin", g_dir);
    if (ncnn_net_load_param(net, param) || ncnn_net_load_model(net, bin))
        goto done;
    for (q = 0; q < 3; q++)
    {
        float* p = (float*)ncnn_mat_get_channel_data(in, q);
        for (i = 0; i < 227 * 227; i++)
            p[i] = (float)((i * 7 + q * 31) % 255) - 120.f;
    }
    for (int rep = 0; rep < 2; rep++)
    {
        ex = ncnn_extractor_create(net);
        ncnn_extractor_input(ex, "data", in);
        ret = ncnn_extractor_extract(ex, "prob", &prob);
        ncnn_extractor_destroy(ex);
        if (ret != 0 || !prob)
        {
            ret = -1;
            goto done;
        }
        *n = ncnn_mat_get_w(prob);
        if (*n > 1000)
            *n = 1000;
        memcpy(out, ncnn_mat_get_data(prob), (size_t)*n * sizeof(float));
        ncnn_mat_destroy(prob);
        prob = 0;
    }
    ret = 0;
done:
    ncnn_mat_destroy(in);
    ncnn_net_destroy(net);
    return ret;
}

static int argmax(const float* v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static void* worker(void* arg)
{
    float out[1000];
    int n = 0;
    long bad = 0;
    (void)arg;
    if (run_once(out, &n) != 0 || n != g_ref_n)
        return (void*)1;
    for (int i = 0; i < n; i++)
        if (fabsf(out[i] - g_ref[i]) > 1e-4f)
            bad = 1;
    if (argmax(out, n) != argmax(g_ref, n))
        bad = 1;
    return (void*)bad;
}

int main(int argc, char** argv)
{
    pthread_t th[NTHREADS];
    int failed = 0;
    if (argc < 2)
    {
        fprintf(stderr, "usage: %s MODEL_DIR [cpu|vulkan]\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    g_vulkan = argc > 2 && strcmp(argv[2], "vulkan") == 0;
    if (g_vulkan)
    {
        g_cache = ncnn_pipelinecache_create(0);
        if (!g_cache)
        {
            fprintf(stderr, "no Vulkan device\n");
            return 1;
        }
    }
    if (run_once(g_ref, &g_ref_n) != 0)
    {
        fprintf(stderr, "reference run failed\n");
        return 1;
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, worker, NULL);
    for (int t = 0; t < NTHREADS; t++)
    {
        void* r = 0;
        pthread_join(th[t], &r);
        if (r)
        {
            fprintf(stderr, "thread %d: wrong or failed result\n", t);
            failed = 1;
        }
    }
    if (g_cache)
    {
        if (ncnn_pipelinecache_get_size(g_cache) == 0)
        {
            fprintf(stderr, "the shared pipeline cache stayed empty\n");
            failed = 1;
        }
        ncnn_pipelinecache_destroy(g_cache);
    }
    if (!failed)
        printf("threads ok %d\n", argmax(g_ref, g_ref_n));
    return failed;
}
