/* Exercises every function libncnn_c.so exports, through ncnn's C API only.
 *
 *   test_capi [MODEL_DIR]      live library: behaviour + NULL / wrong-kind / destroyed handles
 *   test_capi --expect-dead    the embedded Python was made to fail: every call must
 *                              return its error value (-1 / 0 / NULL) and nothing may crash
 *
 * Build with -pthread: one part calls the library from several threads at once.
 * MODEL_DIR holds squeezenet_v1.1.{param,param.bin,bin}; without it the net part is skipped.
 * Prints PASS/FAIL lines and a summary; exit status 1 when anything failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"

static int g_pass = 0;
static int g_fail = 0;

static void check(int ok, const char* what)
{
    if (ok)
        g_pass++;
    else
        g_fail++;
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    fflush(stdout);
}

#define CHECK(cond) check((cond) ? 1 : 0, #cond)

typedef int (*opt_getter)(const ncnn_option_t);
typedef void (*opt_setter)(ncnn_option_t, int);

#define FLAG(name) {#name, ncnn_option_get_##name, ncnn_option_set_##name}
static const struct
{
    const char* name;
    opt_getter get;
    opt_setter set;
} g_flags[] = {
    FLAG(use_vulkan_compute), FLAG(use_local_pool_allocator), FLAG(use_winograd_convolution),
    FLAG(use_sgemm_convolution), FLAG(use_packing_layout), FLAG(use_fp16_packed), FLAG(use_fp16_storage),
    FLAG(use_fp16_arithmetic), FLAG(use_int8_packed), FLAG(use_int8_storage), FLAG(use_int8_arithmetic),
    FLAG(use_int16_packed), FLAG(use_int16_storage), FLAG(use_bf16_packed), FLAG(use_bf16_storage),
    FLAG(use_shader_local_memory), FLAG(use_cooperative_matrix),
};
#define NFLAGS ((int)(sizeof(g_flags) / sizeof(g_flags[0])))

static unsigned char* read_file(const char* path, size_t* size)
{
    FILE* fp = fopen(path, "rb");
    unsigned char* buf;
    long n;
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    /* 4-byte aligned and NUL-terminated: the text param loader reads a C string */
    buf = (unsigned char*)malloc((size_t)n + 4);
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n)
    {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf)
    {
        buf[n] = 0;
        *size = (size_t)n;
    }
    return buf;
}

/* Every export with NULL handles and harmless other arguments. The error values are the
 * same whether the library is alive (bad handle) or dead (Python did not start); when
 * dead, constructors must fail too. */
static void null_sweep(int dead)
{
    unsigned char px[4 * 4 * 4] = {0};
    float fbuf[16] = {0};
    float mean[3] = {1.f, 2.f, 3.f};
    size_t sz = 123;
    ncnn_mat_t out = (ncnn_mat_t)&sz; /* must be overwritten with NULL */
    int i;

    if (dead)
    {
        ncnn_allocator_t a;
        ncnn_option_t o;
        ncnn_pipelinecache_t pc;
        ncnn_net_t n;
        CHECK(ncnn_version() == NULL);
        CHECK(ncnn_version_number() == -1);
        a = ncnn_allocator_create_pool_allocator();
        CHECK(a == NULL);
        a = ncnn_allocator_create_unlocked_pool_allocator();
        CHECK(a == NULL);
        o = ncnn_option_create();
        CHECK(o == NULL);
        pc = ncnn_pipelinecache_create(0);
        CHECK(pc == NULL);
        n = ncnn_net_create();
        CHECK(n == NULL);
        CHECK(ncnn_mat_create() == NULL);
        CHECK(ncnn_mat_create_1d(4, NULL) == NULL);
        CHECK(ncnn_mat_create_2d(4, 4, NULL) == NULL);
        CHECK(ncnn_mat_create_3d(4, 4, 3, NULL) == NULL);
        CHECK(ncnn_mat_create_4d(4, 4, 2, 3, NULL) == NULL);
        CHECK(ncnn_mat_create_1d_elem(4, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_2d_elem(4, 4, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_3d_elem(4, 4, 1, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_4d_elem(2, 2, 2, 2, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_external_1d(4, fbuf, NULL) == NULL);
        CHECK(ncnn_mat_create_external_2d(4, 4, fbuf, NULL) == NULL);
        CHECK(ncnn_mat_create_external_3d(4, 2, 2, fbuf, NULL) == NULL);
        CHECK(ncnn_mat_create_external_4d(2, 2, 2, 2, fbuf, NULL) == NULL);
        CHECK(ncnn_mat_create_external_1d_elem(4, fbuf, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_external_2d_elem(4, 4, fbuf, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_external_3d_elem(4, 2, 2, fbuf, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_create_external_4d_elem(2, 2, 2, 2, fbuf, 4, 1, NULL) == NULL);
        CHECK(ncnn_mat_from_pixels(px, NCNN_MAT_PIXEL_RGB, 4, 4, 12, NULL) == NULL);
        CHECK(ncnn_mat_from_pixels_resize(px, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 2, 2, NULL) == NULL);
        CHECK(ncnn_mat_from_pixels_roi(px, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 0, 0, 2, 2, NULL) == NULL);
        CHECK(ncnn_mat_from_pixels_roi_resize(px, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 0, 0, 2, 2, 3, 3, NULL) == NULL);
    }

    ncnn_allocator_destroy(NULL);

    CHECK(ncnn_pipelinecache_create(-1) == NULL);
    ncnn_pipelinecache_destroy(NULL);
    ncnn_pipelinecache_clear(NULL);
    CHECK(ncnn_pipelinecache_get_size(NULL) == 0);
    CHECK(ncnn_pipelinecache_load_memory(NULL, px, sizeof(px)) != 0);
    CHECK(ncnn_pipelinecache_save_memory(NULL, NULL, &sz) != 0);
    CHECK(ncnn_pipelinecache_load(NULL, "/nonexistent.vkcache") != 0);
    CHECK(ncnn_pipelinecache_save(NULL, "/nonexistent/x.vkcache") != 0);

    ncnn_option_destroy(NULL);
    CHECK(ncnn_option_get_num_threads(NULL) == -1);
    ncnn_option_set_num_threads(NULL, 2);
    ncnn_option_set_blob_allocator(NULL, NULL);
    ncnn_option_set_workspace_allocator(NULL, NULL);
    ncnn_option_set_pipeline_cache(NULL, NULL);
    for (i = 0; i < NFLAGS; i++)
    {
        char what[128];
        g_flags[i].set(NULL, 1);
        snprintf(what, sizeof(what), "ncnn_option_get_%s(NULL) == -1", g_flags[i].name);
        check(g_flags[i].get(NULL) == -1, what);
    }

    ncnn_mat_destroy(NULL);
    ncnn_mat_fill_float(NULL, 1.f);
    CHECK(ncnn_mat_clone(NULL, NULL) == NULL);
    CHECK(ncnn_mat_reshape_1d(NULL, 4, NULL) == NULL);
    CHECK(ncnn_mat_reshape_2d(NULL, 2, 2, NULL) == NULL);
    CHECK(ncnn_mat_reshape_3d(NULL, 2, 2, 1, NULL) == NULL);
    CHECK(ncnn_mat_reshape_4d(NULL, 1, 2, 2, 1, NULL) == NULL);
    CHECK(ncnn_mat_get_dims(NULL) == -1);
    CHECK(ncnn_mat_get_w(NULL) == -1);
    CHECK(ncnn_mat_get_h(NULL) == -1);
    CHECK(ncnn_mat_get_d(NULL) == -1);
    CHECK(ncnn_mat_get_c(NULL) == -1);
    CHECK(ncnn_mat_get_n(NULL) == -1);
    CHECK(ncnn_mat_get_elemsize(NULL) == 0);
    CHECK(ncnn_mat_get_elempack(NULL) == -1);
    CHECK(ncnn_mat_get_cstep(NULL) == 0);
    CHECK(ncnn_mat_get_data(NULL) == NULL);
    CHECK(ncnn_mat_get_channel_data(NULL, 0) == NULL);
    CHECK(ncnn_mat_from_pixels(NULL, NCNN_MAT_PIXEL_RGB, 4, 4, 12, NULL) == NULL);
    CHECK(ncnn_mat_from_pixels_resize(NULL, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 2, 2, NULL) == NULL);
    CHECK(ncnn_mat_from_pixels_roi(NULL, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 0, 0, 2, 2, NULL) == NULL);
    CHECK(ncnn_mat_from_pixels_roi_resize(NULL, NCNN_MAT_PIXEL_RGB, 4, 4, 12, 0, 0, 2, 2, 3, 3, NULL) == NULL);
    ncnn_mat_to_pixels(NULL, px, NCNN_MAT_PIXEL_RGB, 12);
    ncnn_mat_to_pixels_resize(NULL, px, NCNN_MAT_PIXEL_RGB, 2, 2, 6);
    ncnn_mat_substract_mean_normalize(NULL, mean, NULL);

    ncnn_net_destroy(NULL);
    CHECK(ncnn_net_get_option(NULL) == NULL);
    ncnn_net_set_option(NULL, NULL);
    ncnn_net_set_vulkan_device(NULL, 0);
    CHECK(ncnn_net_load_param(NULL, "x.param") != 0);
    CHECK(ncnn_net_load_param_bin(NULL, "x.param.bin") != 0);
    CHECK(ncnn_net_load_model(NULL, "x.bin") != 0);
    CHECK(ncnn_net_load_param_memory(NULL, "7767517\n") != 0);
    CHECK(ncnn_net_load_param_bin_memory(NULL, px) == 0);
    CHECK(ncnn_net_load_model_memory(NULL, px) == 0);
    ncnn_net_clear(NULL);
    CHECK(ncnn_net_get_input_count(NULL) == -1);
    CHECK(ncnn_net_get_output_count(NULL) == -1);
    CHECK(ncnn_net_get_input_name(NULL, 0) == NULL);
    CHECK(ncnn_net_get_output_name(NULL, 0) == NULL);
    CHECK(ncnn_net_get_input_index(NULL, 0) == -1);
    CHECK(ncnn_net_get_output_index(NULL, 0) == -1);

    CHECK(ncnn_extractor_create(NULL) == NULL);
    ncnn_extractor_destroy(NULL);
    ncnn_extractor_set_option(NULL, NULL);
    CHECK(ncnn_extractor_input(NULL, "data", NULL) != 0);
    CHECK(ncnn_extractor_input_index(NULL, 0, NULL) != 0);
    out = (ncnn_mat_t)&sz;
    CHECK(ncnn_extractor_extract(NULL, "prob", &out) != 0);
    CHECK(out == NULL);
    out = (ncnn_mat_t)&sz;
    CHECK(ncnn_extractor_extract_index(NULL, 0, &out) != 0);
    CHECK(out == NULL);
    CHECK(ncnn_extractor_extract(NULL, "prob", NULL) != 0);
}

static void test_version(void)
{
    const char* v = ncnn_version();
    CHECK(v != NULL && strlen(v) > 0);
    CHECK(ncnn_version() == v); /* stays valid, same storage */
    CHECK(ncnn_version_number() >= 0);
}

static void test_allocator(void)
{
    ncnn_allocator_t a = ncnn_allocator_create_pool_allocator();
    ncnn_allocator_t u = ncnn_allocator_create_unlocked_pool_allocator();
    void* p;
    CHECK(a != NULL && u != NULL && a != u);
    if (!a || !u)
        return;
    CHECK(a->fast_malloc != NULL && a->fast_free != NULL);
    p = a->fast_malloc(a, 1000);
    CHECK(p != NULL && ((size_t)p % 16) == 0);
    if (p)
    {
        memset(p, 7, 1000);
        a->fast_free(a, p);
    }
    p = u->fast_malloc(u, 64);
    CHECK(p != NULL);
    u->fast_free(u, p);
    ncnn_allocator_destroy(a);
    ncnn_allocator_destroy(u);
}

static void test_option(void)
{
    ncnn_option_t opt = ncnn_option_create();
    ncnn_allocator_t a = ncnn_allocator_create_pool_allocator();
    int i;
    CHECK(opt != NULL);
    if (!opt)
        return;
    ncnn_option_set_num_threads(opt, 3);
    CHECK(ncnn_option_get_num_threads(opt) == 3);
    for (i = 0; i < NFLAGS; i++)
    {
        char what[160];
        g_flags[i].set(opt, 1);
        snprintf(what, sizeof(what), "option %s set 1 -> 1", g_flags[i].name);
        check(g_flags[i].get(opt) == 1, what);
        g_flags[i].set(opt, 0);
        snprintf(what, sizeof(what), "option %s set 0 -> 0", g_flags[i].name);
        check(g_flags[i].get(opt) == 0, what);
    }
    ncnn_option_set_blob_allocator(opt, a);
    ncnn_option_set_workspace_allocator(opt, a);
    ncnn_option_set_blob_allocator(opt, NULL);
    ncnn_option_set_workspace_allocator(opt, NULL);
    ncnn_option_set_pipeline_cache(opt, NULL);
    /* a handle of another kind is refused, the option stays usable */
    ncnn_option_set_blob_allocator(opt, (ncnn_allocator_t)opt);
    CHECK(ncnn_option_get_num_threads(opt) == 3);
    CHECK(ncnn_mat_get_w((ncnn_mat_t)opt) == -1);
    ncnn_option_destroy(opt);
    CHECK(ncnn_option_get_num_threads(opt) == -1); /* destroyed */
    ncnn_allocator_destroy(a);
}

static void test_mat(void)
{
    ncnn_allocator_t a = ncnn_allocator_create_pool_allocator();
    ncnn_mat_t m0 = ncnn_mat_create();
    ncnn_mat_t m1 = ncnn_mat_create_1d(10, NULL);
    ncnn_mat_t m2 = ncnn_mat_create_2d(5, 3, a);
    ncnn_mat_t m3 = ncnn_mat_create_3d(5, 3, 2, a);
    ncnn_mat_t m4 = ncnn_mat_create_4d(2, 3, 4, 5, NULL);
    ncnn_mat_t e1 = ncnn_mat_create_1d_elem(8, 16, 4, NULL);
    ncnn_mat_t e2 = ncnn_mat_create_2d_elem(8, 2, 2, 1, NULL);
    ncnn_mat_t e3 = ncnn_mat_create_3d_elem(4, 4, 2, 8, 2, NULL);
    ncnn_mat_t e4 = ncnn_mat_create_4d_elem(2, 2, 2, 2, 4, 1, NULL);
    float ext[64];
    ncnn_mat_t x1, x2, x3, x4, xe1, xe2, xe3, xe4, c, r1, r2, r3, r4;
    float* p;
    int i, ok;

    CHECK(ncnn_mat_get_dims(m0) == 0);
    CHECK(ncnn_mat_get_data(m0) == NULL);
    CHECK(ncnn_mat_get_dims(m1) == 1 && ncnn_mat_get_w(m1) == 10);
    CHECK(ncnn_mat_get_dims(m2) == 2 && ncnn_mat_get_w(m2) == 5 && ncnn_mat_get_h(m2) == 3);
    CHECK(ncnn_mat_get_dims(m3) == 3 && ncnn_mat_get_c(m3) == 2 && ncnn_mat_get_cstep(m3) == 16);
    CHECK(ncnn_mat_get_dims(m4) == 4 && ncnn_mat_get_d(m4) == 4 && ncnn_mat_get_c(m4) == 5);
    CHECK(ncnn_mat_get_n(m4) == 1);
    CHECK(ncnn_mat_get_elemsize(m3) == 4 && ncnn_mat_get_elempack(m3) == 1);
    CHECK(ncnn_mat_get_elemsize(e1) == 16 && ncnn_mat_get_elempack(e1) == 4);
    CHECK(ncnn_mat_get_elemsize(e2) == 2 && ncnn_mat_get_dims(e2) == 2);
    CHECK(ncnn_mat_get_elemsize(e3) == 8 && ncnn_mat_get_elempack(e3) == 2 && ncnn_mat_get_c(e3) == 2);
    CHECK(ncnn_mat_get_dims(e4) == 4);
    CHECK(ncnn_mat_create_1d(0, NULL) == NULL);
    CHECK(ncnn_mat_create_3d(4, 4, 3, (ncnn_allocator_t)m1) == NULL); /* wrong kind */

    ncnn_mat_fill_float(m3, 1.5f);
    p = (float*)ncnn_mat_get_channel_data(m3, 1);
    CHECK(p != NULL && p[0] == 1.5f && p[14] == 1.5f);
    CHECK((char*)p == (char*)ncnn_mat_get_data(m3) + 16 * 4);
    CHECK(ncnn_mat_get_channel_data(m3, 2) == NULL); /* out of range */
    if (p)
        p[3] = 9.f;

    c = ncnn_mat_clone(m3, NULL);
    CHECK(c != NULL && ncnn_mat_get_data(c) != ncnn_mat_get_data(m3));
    p = c ? (float*)ncnn_mat_get_channel_data(c, 1) : NULL;
    CHECK(p != NULL && p[3] == 9.f && p[0] == 1.5f);

    r1 = ncnn_mat_reshape_1d(m2, 15, NULL);
    r2 = ncnn_mat_reshape_2d(m1, 5, 2, NULL);
    r3 = ncnn_mat_reshape_3d(m1, 5, 1, 2, NULL);
    r4 = ncnn_mat_reshape_4d(m4, 3, 2, 4, 5, NULL);
    CHECK(ncnn_mat_get_dims(r1) == 1 && ncnn_mat_get_w(r1) == 15);
    CHECK(ncnn_mat_get_dims(r2) == 2 && ncnn_mat_get_h(r2) == 2);
    CHECK(ncnn_mat_get_dims(r3) == 3 && ncnn_mat_get_c(r3) == 2);
    CHECK(ncnn_mat_get_dims(r4) == 4 && ncnn_mat_get_w(r4) == 3);
    CHECK(ncnn_mat_reshape_1d(m2, 7, NULL) == NULL); /* element count differs */

    for (i = 0; i < 64; i++)
        ext[i] = (float)i;
    x1 = ncnn_mat_create_external_1d(16, ext, NULL);
    x2 = ncnn_mat_create_external_2d(4, 4, ext, NULL);
    x3 = ncnn_mat_create_external_3d(2, 2, 4, ext, NULL);
    x4 = ncnn_mat_create_external_4d(2, 2, 2, 2, ext, NULL);
    xe1 = ncnn_mat_create_external_1d_elem(4, ext, 16, 4, NULL);
    xe2 = ncnn_mat_create_external_2d_elem(4, 2, ext, 4, 1, NULL);
    xe3 = ncnn_mat_create_external_3d_elem(2, 2, 2, ext, 4, 1, NULL);
    xe4 = ncnn_mat_create_external_4d_elem(2, 2, 2, 2, ext, 4, 1, NULL);
    CHECK(ncnn_mat_get_data(x1) == (void*)ext && ncnn_mat_get_w(x1) == 16);
    CHECK(ncnn_mat_get_data(x2) == (void*)ext && ncnn_mat_get_h(x2) == 4);
    CHECK(ncnn_mat_get_data(x3) == (void*)ext && ncnn_mat_get_c(x3) == 4);
    CHECK(ncnn_mat_get_data(x4) == (void*)ext && ncnn_mat_get_d(x4) == 2);
    CHECK(ncnn_mat_get_elempack(xe1) == 4 && ncnn_mat_get_data(xe1) == (void*)ext);
    CHECK(ncnn_mat_get_dims(xe2) == 2 && ncnn_mat_get_dims(xe3) == 3 && ncnn_mat_get_dims(xe4) == 4);
    ncnn_mat_fill_float(x2, 4.f);
    CHECK(ext[0] == 4.f && ext[15] == 4.f && ext[16] == 16.f); /* writes go to our memory */
    CHECK(ncnn_mat_create_external_1d(4, NULL, NULL) == NULL);

    /* pixels: 4x2 RGB, value = 10*x + y per byte */
    {
        unsigned char rgb[2 * 4 * 3];
        unsigned char back[2 * 4 * 3];
        unsigned char small[2 * 2 * 3];
        const float mean[3] = {1.f, 2.f, 3.f};
        const float norm[3] = {2.f, 2.f, 2.f};
        int x, y;
        ncnn_mat_t pm, pr, po, pro;
        for (y = 0; y < 2; y++)
            for (x = 0; x < 4; x++)
                for (i = 0; i < 3; i++)
                    rgb[(y * 4 + x) * 3 + i] = (unsigned char)(10 * x + y + 100 * (i == 2));
        pm = ncnn_mat_from_pixels(rgb, NCNN_MAT_PIXEL_RGB, 4, 2, 12, NULL);
        CHECK(ncnn_mat_get_dims(pm) == 3 && ncnn_mat_get_w(pm) == 4 && ncnn_mat_get_h(pm) == 2 && ncnn_mat_get_c(pm) == 3);
        p = (float*)ncnn_mat_get_channel_data(pm, 2);
        CHECK(p != NULL && p[5] == 111.f); /* x=1,y=1, blue + 100 */
        memset(back, 0, sizeof(back));
        ncnn_mat_to_pixels(pm, back, NCNN_MAT_PIXEL_RGB, 12);
        CHECK(memcmp(back, rgb, sizeof(rgb)) == 0);
        ncnn_mat_to_pixels_resize(pm, small, NCNN_MAT_PIXEL_RGB, 2, 2, 6);
        CHECK(small[2] >= 100);
        pr = ncnn_mat_from_pixels_resize(rgb, NCNN_MAT_PIXEL_X2Y(NCNN_MAT_PIXEL_RGB, NCNN_MAT_PIXEL_BGR), 4, 2, 12, 8, 4, NULL);
        CHECK(ncnn_mat_get_w(pr) == 8 && ncnn_mat_get_h(pr) == 4 && ncnn_mat_get_c(pr) == 3);
        po = ncnn_mat_from_pixels_roi(rgb, NCNN_MAT_PIXEL_RGB, 4, 2, 12, 1, 0, 2, 2, NULL);
        p = (float*)ncnn_mat_get_data(po);
        CHECK(ncnn_mat_get_w(po) == 2 && p != NULL && p[0] == 10.f);
        pro = ncnn_mat_from_pixels_roi_resize(rgb, NCNN_MAT_PIXEL_GRAY, 12, 2, 12, 0, 0, 4, 2, 2, 1, NULL);
        CHECK(ncnn_mat_get_c(pro) == 1 && ncnn_mat_get_w(pro) == 2 && ncnn_mat_get_h(pro) == 1);
        CHECK(ncnn_mat_from_pixels(rgb, 0x7777, 4, 2, 12, NULL) == NULL); /* bad type */
        CHECK(ncnn_mat_from_pixels_roi(rgb, NCNN_MAT_PIXEL_RGB, 4, 2, 12, 3, 0, 4, 2, NULL) == NULL); /* roi out */

        ncnn_mat_substract_mean_normalize(pm, mean, norm);
        p = (float*)ncnn_mat_get_channel_data(pm, 2);
        CHECK(p != NULL && p[5] == (111.f - 3.f) * 2.f);
        ncnn_mat_substract_mean_normalize(pm, NULL, norm);
        CHECK(p != NULL && p[5] == (111.f - 3.f) * 4.f);
        ncnn_mat_destroy(pm);
        ncnn_mat_destroy(pr);
        ncnn_mat_destroy(po);
        ncnn_mat_destroy(pro);
    }

    ok = 1;
    {
        ncnn_mat_t all[] = {m0, m1, m2, m3, m4, e1, e2, e3, e4, x1, x2, x3, x4, xe1, xe2, xe3, xe4, c, r1, r2, r3, r4};
        for (i = 0; i < (int)(sizeof(all) / sizeof(all[0])); i++)
        {
            if (!all[i])
                ok = 0;
            ncnn_mat_destroy(all[i]);
        }
    }
    CHECK(ok);
    CHECK(ncnn_mat_get_w(m3) == -1); /* destroyed */
    CHECK(ncnn_mat_get_data(c) == NULL);
    ncnn_mat_destroy(m3); /* twice: refused, no crash */
    ncnn_allocator_destroy(a);
}

static void test_pipelinecache(void)
{
    ncnn_pipelinecache_t pc = ncnn_pipelinecache_create(0);
    unsigned char* buf;
    size_t need = 0, small;
    char path[256];
    if (!pc)
    {
        printf("SKIP pipelinecache: no Vulkan device 0\n");
        return;
    }
    CHECK(ncnn_pipelinecache_create(9999) == NULL);
    CHECK(ncnn_pipelinecache_get_size(pc) == 0);
    CHECK(ncnn_pipelinecache_save_memory(pc, NULL, &need) == 0 && need > 0);
    CHECK(ncnn_pipelinecache_save_memory(pc, NULL, NULL) != 0);
    buf = (unsigned char*)malloc(need + 16);
    small = need - 1;
    CHECK(ncnn_pipelinecache_save_memory(pc, buf, &small) != 0 && small == need);
    small = need + 16;
    CHECK(ncnn_pipelinecache_save_memory(pc, buf, &small) == 0 && small == need);
    CHECK(ncnn_pipelinecache_load_memory(pc, buf, need) == 0);
    CHECK(ncnn_pipelinecache_load_memory(pc, buf, 3) != 0); /* truncated: rejected */
    CHECK(ncnn_pipelinecache_load_memory(pc, NULL, 10) != 0);
    snprintf(path, sizeof(path), "/tmp/ncnn_c_test_capi_%d.vkcache", (int)sizeof(void*));
    CHECK(ncnn_pipelinecache_save(pc, path) == 0);
    CHECK(ncnn_pipelinecache_load(pc, path) == 0);
    CHECK(ncnn_pipelinecache_load(pc, "/nonexistent/dir/x.vkcache") != 0);
    CHECK(ncnn_pipelinecache_save(pc, NULL) != 0);
    remove(path);
    ncnn_pipelinecache_clear(pc);
    CHECK(ncnn_pipelinecache_get_size(pc) == 0);
    {
        ncnn_option_t opt = ncnn_option_create();
        ncnn_option_set_pipeline_cache(opt, pc);
        ncnn_option_set_pipeline_cache(opt, NULL);
        ncnn_option_destroy(opt);
    }
    free(buf);
    ncnn_pipelinecache_destroy(pc);
    CHECK(ncnn_pipelinecache_get_size(pc) == 0);
}

static void test_net(const char* dir)
{
    char param[1024], parambin[1024], model[1024];
    ncnn_net_t net, net2;
    ncnn_option_t opt, opt2, own;
    ncnn_extractor_t ex;
    ncnn_mat_t in, out = NULL, out2 = NULL;
    unsigned char *ptext, *pbin, *wbin;
    size_t ntext = 0, nbin = 0, nw = 0;
    float* prob;
    int i, best = -1, best2 = -1;

    snprintf(param, sizeof(param), "%s/squeezenet_v1.1.param", dir);
    snprintf(parambin, sizeof(parambin), "%s/squeezenet_v1.1.param.bin", dir);
    snprintf(model, sizeof(model), "%s/squeezenet_v1.1.bin", dir);

    net = ncnn_net_create();
    CHECK(net != NULL);
    if (!net)
        return;
    CHECK(net->pthis != NULL && net->custom_layer_factory == NULL);
    opt = ncnn_net_get_option(net);
    CHECK(opt != NULL && ncnn_net_get_option(net) == opt); /* the net's own option */
    ncnn_option_set_num_threads(opt, 1);
    ncnn_option_set_use_vulkan_compute(opt, 0);
    CHECK(ncnn_option_get_num_threads(ncnn_net_get_option(net)) == 1);
    own = ncnn_option_create();
    ncnn_option_set_num_threads(own, 2);
    ncnn_option_set_use_vulkan_compute(own, 0);
    ncnn_net_set_option(net, own); /* copied into the net's option */
    CHECK(ncnn_option_get_num_threads(opt) == 2);
    ncnn_option_set_num_threads(own, 5);
    CHECK(ncnn_option_get_num_threads(opt) == 2);
    ncnn_option_destroy(opt); /* refused: belongs to the net */
    CHECK(ncnn_option_get_num_threads(opt) == 2);

    CHECK(ncnn_net_load_param(net, "/nonexistent.param") != 0);
    CHECK(ncnn_net_load_param(net, NULL) != 0);
    CHECK(ncnn_net_load_param(net, param) == 0);
    CHECK(ncnn_net_load_model(net, model) == 0);
    CHECK(ncnn_net_get_input_count(net) == 1 && ncnn_net_get_output_count(net) == 1);
    CHECK(ncnn_net_get_input_name(net, 0) != NULL && strcmp(ncnn_net_get_input_name(net, 0), "data") == 0);
    CHECK(ncnn_net_get_output_name(net, 0) != NULL && strcmp(ncnn_net_get_output_name(net, 0), "prob") == 0);
    CHECK(ncnn_net_get_input_name(net, 0) == ncnn_net_get_input_name(net, 0));
    CHECK(ncnn_net_get_input_name(net, 1) == NULL);
    CHECK(ncnn_net_get_input_index(net, 0) >= 0 && ncnn_net_get_output_index(net, 0) > 0);
    CHECK(ncnn_net_get_output_index(net, 5) == -1);

    in = ncnn_mat_create_3d(227, 227, 3, NULL);
    ncnn_mat_fill_float(in, 0.5f);
    ex = ncnn_extractor_create(net);
    CHECK(ex != NULL);
    ncnn_extractor_set_option(ex, own);
    CHECK(ncnn_extractor_input(ex, "data", in) == 0);
    CHECK(ncnn_extractor_input(ex, "nonexistent", in) != 0);
    CHECK(ncnn_extractor_input(ex, "data", (ncnn_mat_t)net) != 0); /* wrong kind */
    CHECK(ncnn_extractor_extract(ex, "prob", &out) == 0 && out != NULL);
    CHECK(ncnn_mat_get_w(out) == 1000);
    out2 = (ncnn_mat_t)net;
    CHECK(ncnn_extractor_extract(ex, "nonexistent", &out2) != 0 && out2 == NULL);
    CHECK(ncnn_extractor_extract(ex, "prob", NULL) != 0);
    prob = (float*)ncnn_mat_get_data(out);
    if (prob)
        for (i = 0; i < 1000; i++)
            if (best < 0 || prob[i] > prob[best])
                best = i;
    ncnn_extractor_destroy(ex);

    ex = ncnn_extractor_create(net);
    CHECK(ncnn_extractor_input_index(ex, ncnn_net_get_input_index(net, 0), in) == 0);
    CHECK(ncnn_extractor_extract_index(ex, ncnn_net_get_output_index(net, 0), &out2) == 0 && out2 != NULL);
    prob = (float*)ncnn_mat_get_data(out2);
    if (prob)
        for (i = 0; i < 1000; i++)
            if (best2 < 0 || prob[i] > prob[best2])
                best2 = i;
    CHECK(best >= 0 && best == best2);
    ncnn_mat_destroy(out2);
    out2 = NULL;
    ncnn_extractor_destroy(ex);
    CHECK(ncnn_extractor_input(ex, "data", in) != 0); /* destroyed */

    ncnn_net_clear(net);
    CHECK(ncnn_net_get_input_count(net) == 0);

    /* memory loaders on a second net, checked against the first net's answer */
    ptext = read_file(param, &ntext);
    pbin = read_file(parambin, &nbin);
    wbin = read_file(model, &nw);
    CHECK(ptext && pbin && wbin);
    net2 = ncnn_net_create();
    opt2 = ncnn_net_get_option(net2);
    ncnn_option_set_use_vulkan_compute(opt2, 0);
    CHECK(opt2 != opt);
    if (ptext && pbin && wbin)
    {
        CHECK(ncnn_net_load_param_memory(net2, (const char*)ptext) == 0);
        CHECK(ncnn_net_load_param_memory(net2, "garbage") != 0);
        CHECK(ncnn_net_load_param_bin_memory(net2, pbin) == nbin);
        CHECK(ncnn_net_load_param_bin_memory(net2, NULL) == 0);
        CHECK(ncnn_net_load_param_bin_memory(net2, pbin) == nbin);
        CHECK(ncnn_net_load_model_memory(net2, wbin) == nw);
        CHECK(ncnn_net_load_param_bin(net2, parambin) == 0);
        CHECK(ncnn_net_load_param_bin(net2, "/nonexistent.param.bin") != 0);
        CHECK(ncnn_net_load_param_bin(net2, parambin) == 0);
        CHECK(ncnn_net_load_model(net2, model) == 0);
        CHECK(ncnn_net_get_input_count(net2) == 1);
        ex = ncnn_extractor_create(net2);
        /* binary params name blobs by index only */
        CHECK(ncnn_extractor_input_index(ex, ncnn_net_get_input_index(net2, 0), in) == 0);
        CHECK(ncnn_extractor_extract_index(ex, ncnn_net_get_output_index(net2, 0), &out2) == 0);
        prob = (float*)ncnn_mat_get_data(out2);
        best2 = -1;
        if (prob)
            for (i = 0; i < 1000; i++)
                if (best2 < 0 || prob[i] > prob[best2])
                    best2 = i;
        CHECK(best2 == best);
        ncnn_mat_destroy(out2);
        ncnn_extractor_destroy(ex);
    }
    free(ptext);
    free(pbin);
    free(wbin);

    ncnn_net_set_vulkan_device(net2, 0); /* a missing device is logged, not fatal */
    ncnn_net_destroy(net2);
    CHECK(ncnn_option_get_num_threads(opt2) == -1); /* died with its net */
    ncnn_mat_destroy(out);
    ncnn_mat_destroy(in);
    ncnn_option_destroy(own);
    ncnn_net_destroy(net);
    CHECK(ncnn_net_get_input_count(net) == -1);
}

/* Several C threads at once: the library takes the GIL itself; handles must not mix up. */
static void* thread_body(void* arg)
{
    int id = (int)(size_t)arg;
    int i, bad = 0;
    for (i = 0; i < 100; i++)
    {
        ncnn_mat_t m = ncnn_mat_create_2d(8, id + 1, NULL);
        ncnn_option_t o = ncnn_option_create();
        float* p;
        ncnn_mat_fill_float(m, (float)(id * 1000 + i));
        ncnn_option_set_num_threads(o, id + 1);
        p = (float*)ncnn_mat_get_data(m);
        if (!p || p[7] != (float)(id * 1000 + i) || ncnn_mat_get_h(m) != id + 1)
            bad++;
        if (ncnn_option_get_num_threads(o) != id + 1)
            bad++;
        ncnn_option_destroy(o);
        ncnn_mat_destroy(m);
    }
    return (void*)(size_t)bad;
}

static void test_threads(void)
{
    pthread_t t[4];
    int i, bad = 0, started = 0;
    for (i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, thread_body, (void*)(size_t)i) == 0)
            started++;
    for (i = 0; i < started; i++)
    {
        void* r = NULL;
        pthread_join(t[i], &r);
        bad += (int)(size_t)r;
    }
    check(started == 4 && bad == 0, "4 threads x 100 mat/option round trips");
}

int main(int argc, char** argv)
{
    int dead = argc > 1 && strcmp(argv[1], "--expect-dead") == 0;
    if (dead)
    {
        null_sweep(1);
    }
    else
    {
        test_version();
        test_allocator();
        test_option();
        test_mat();
        test_pipelinecache();
        test_threads();
        if (argc > 1)
            test_net(argv[1]);
        else
            printf("SKIP net: no model directory given\n");
        null_sweep(0);
    }
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
