/* The sections of ncnn's C API beyond nets and Mats, driven from C the way an ncnn program
 * drives them: paramdict, data readers and model bins with C callbacks, layers created by
 * type and by index, C custom layers (every struct slot) registered by type and by index
 * and run inside a net, batch Mats, packing, flatten, borders, blob queries and drawing.
 *
 *   test_capi_sections      prints PASS/FAIL lines and "N passed, M failed"; exit 1 on failure
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"

static int g_pass = 0;
static int g_fail = 0;

static void check(int ok, const char* what, int line)
{
    if (ok)
        g_pass++;
    else
        g_fail++;
    printf("%s %s (line %d)\n", ok ? "PASS" : "FAIL", what, line);
    fflush(stdout);
}

#define CHECK(cond) check((cond) ? 1 : 0, #cond, __LINE__)

/* ---------------------------------------------------------------- paramdict */

static void test_paramdict(void)
{
    ncnn_paramdict_t pd = ncnn_paramdict_create();
    ncnn_mat_t arr = ncnn_mat_create_1d(3, NULL);
    ncnn_mat_t def = ncnn_mat_create();
    ncnn_mat_t got;
    float* p = (float*)ncnn_mat_get_data(arr);
    p[0] = 1.f;
    p[1] = 2.f;
    p[2] = 3.f;

    CHECK(ncnn_paramdict_get_type(pd, 0) == 0);
    CHECK(ncnn_paramdict_get_int(pd, 0, 42) == 42);
    ncnn_paramdict_set_int(pd, 0, 7);
    ncnn_paramdict_set_float(pd, 1, 2.5f);
    ncnn_paramdict_set_array(pd, 2, arr);
    CHECK(ncnn_paramdict_get_type(pd, 0) == 2);
    CHECK(ncnn_paramdict_get_type(pd, 1) == 3);
    CHECK(ncnn_paramdict_get_int(pd, 0, 0) == 7);
    CHECK(ncnn_paramdict_get_float(pd, 1, 0.f) == 2.5f);
    got = ncnn_paramdict_get_array(pd, 2, def);
    CHECK(got && ncnn_mat_get_w(got) == 3 && ((float*)ncnn_mat_get_data(got))[2] == 3.f);
    ncnn_mat_destroy(got);
    got = ncnn_paramdict_get_array(pd, 9, def);
    CHECK(got && ncnn_mat_get_dims(got) == 0);
    ncnn_mat_destroy(got);
    ncnn_mat_destroy(def);
    ncnn_mat_destroy(arr);
    ncnn_paramdict_destroy(pd);
}

/* ---------------------------------------------------------------- readers and model bins */

static int g_reads = 0;

static size_t counting_zero_read(ncnn_datareader_t dr, void* buf, size_t size)
{
    (void)dr;
    g_reads++;
    memset(buf, 0, size);
    return size;
}

static int g_loads = 0;

static ncnn_mat_t ones_load_1d(const ncnn_modelbin_t mb, int w, int type)
{
    ncnn_mat_t m = ncnn_mat_create_1d(w, NULL);
    (void)mb;
    (void)type;
    g_loads++;
    ncnn_mat_fill_float(m, 1.f);
    return m;
}

static void test_readers(void)
{
    static const unsigned char bytes[8] = {0, 0, 128, 63, 0, 0, 0, 64}; /* 1.0f 2.0f */
    const unsigned char* cursor = bytes;
    ncnn_datareader_t dr = ncnn_datareader_create_from_memory(&cursor);
    ncnn_modelbin_t mb = ncnn_modelbin_create_from_datareader(dr);
    ncnn_mat_t m = mb->load_1d(mb, 2, 1); /* raw fp32 */
    CHECK(m && ncnn_mat_get_w(m) == 2);
    CHECK(m && ((float*)ncnn_mat_get_data(m))[1] == 2.f);
    CHECK(cursor == bytes + 8); /* ncnn advances the caller's pointer */
    ncnn_mat_destroy(m);
    ncnn_modelbin_destroy(mb);
    ncnn_datareader_destroy(dr);

    /* a reader whose read callback is C, through a model bin */
    dr = ncnn_datareader_create();
    dr->read = counting_zero_read;
    mb = ncnn_modelbin_create_from_datareader(dr);
    m = mb->load_2d(mb, 3, 2, 1);
    CHECK(g_reads > 0 && m && ncnn_mat_get_dims(m) == 2 && ncnn_mat_get_h(m) == 2);
    ncnn_mat_destroy(m);
    ncnn_modelbin_destroy(mb);
    ncnn_datareader_destroy(dr);

    /* a FILE* reader */
    {
        FILE* fp = tmpfile();
        float v[4] = {5.f, 6.f, 7.f, 8.f};
        fwrite(v, sizeof(float), 4, fp);
        rewind(fp);
        dr = ncnn_datareader_create_from_stdio(fp);
        mb = ncnn_modelbin_create_from_datareader(dr);
        m = mb->load_1d(mb, 4, 1);
        CHECK(m && ((float*)ncnn_mat_get_data(m))[3] == 8.f);
        ncnn_mat_destroy(m);
        ncnn_modelbin_destroy(mb);
        ncnn_datareader_destroy(dr);
        fclose(fp);
    }

    /* weights from Mats; the C program overrides load_1d */
    {
        ncnn_mat_t w0 = ncnn_mat_create_1d(4, NULL);
        ncnn_mat_t ws[1];
        ncnn_mat_fill_float(w0, 3.f);
        ws[0] = w0;
        mb = ncnn_modelbin_create_from_mat_array(ws, 1);
        m = mb->load_1d(mb, 4, 0);
        CHECK(m && ((float*)ncnn_mat_get_data(m))[0] == 3.f);
        ncnn_mat_destroy(m);
        mb->load_1d = ones_load_1d;
        m = mb->load_1d(mb, 5, 0);
        CHECK(g_loads == 1 && m && ncnn_mat_get_w(m) == 5);
        ncnn_mat_destroy(m);
        ncnn_modelbin_destroy(mb);
        ncnn_mat_destroy(w0);
    }
}

/* ---------------------------------------------------------------- built-in layers */

static void test_builtin_layers(void)
{
    ncnn_option_t opt = ncnn_option_create();
    ncnn_layer_t relu = ncnn_layer_create_by_type("ReLU");
    ncnn_layer_t bin = ncnn_layer_create_by_typeindex(ncnn_layer_type_to_index("BinaryOp"));
    ncnn_paramdict_t pd = ncnn_paramdict_create();
    ncnn_mat_t a = ncnn_mat_create_2d(3, 2, NULL);
    ncnn_mat_t b = ncnn_mat_create_2d(3, 2, NULL);
    ncnn_mat_t out = 0;
    ncnn_mat_t outs[1] = {0};
    ncnn_mat_t ins[2];

    CHECK(relu && bin);
    CHECK(ncnn_layer_type_to_index("NoSuchLayer") == -1);
    CHECK(strcmp(ncnn_layer_get_type(relu), "ReLU") == 0);
    CHECK(ncnn_layer_get_typeindex(relu) == ncnn_layer_type_to_index("ReLU"));
    CHECK(ncnn_layer_get_one_blob_only(relu) == 1 && ncnn_layer_get_support_inplace(relu) == 1);
    CHECK(ncnn_layer_get_one_blob_only(bin) == 0);
    CHECK(ncnn_layer_get_bottom_count(relu) == 0 && ncnn_layer_get_top_count(relu) == 0);

    ncnn_mat_fill_float(a, -2.f);
    ncnn_mat_fill_float(b, 5.f);
    CHECK(relu->load_param(relu, pd) == 0);
    CHECK(relu->create_pipeline(relu, opt) == 0);
    CHECK(relu->forward_1(relu, a, &out, opt) == 0);
    CHECK(out && ((float*)ncnn_mat_get_data(out))[5] == 0.f);
    ncnn_mat_destroy(out);
    CHECK(relu->forward_inplace_1(relu, a, opt) == 0 && ((float*)ncnn_mat_get_data(a))[0] == 0.f);
    relu->destroy_pipeline(relu, opt);

    ncnn_paramdict_set_int(pd, 0, 2); /* mul */
    CHECK(bin->load_param(bin, pd) == 0);
    ncnn_mat_fill_float(a, 3.f);
    ins[0] = a;
    ins[1] = b;
    CHECK(bin->forward_n(bin, ins, 2, outs, 1, opt) == 0);
    CHECK(outs[0] && ((float*)ncnn_mat_get_data(outs[0]))[4] == 15.f);
    ncnn_mat_destroy(outs[0]);

    ncnn_paramdict_destroy(pd);
    ncnn_layer_destroy(relu);
    ncnn_layer_destroy(bin);
    ncnn_mat_destroy(a);
    ncnn_mat_destroy(b);
    ncnn_option_destroy(opt);
}

/* ---------------------------------------------------------------- custom layers in a net */

static int g_calls[8];
enum
{
    C_LOAD_PARAM,
    C_LOAD_MODEL,
    C_CREATE,
    C_DESTROY_PIPE,
    C_FORWARD_1,
    C_FORWARD_N,
    C_DESTROYER,
    C_CREATOR
};
static float g_scale = 0.f;

static int scale_load_param(ncnn_layer_t layer, const ncnn_paramdict_t pd)
{
    (void)layer;
    g_calls[C_LOAD_PARAM]++;
    g_scale = ncnn_paramdict_get_float(pd, 0, 1.f);
    return 0;
}

static int scale_load_model(ncnn_layer_t layer, const ncnn_modelbin_t mb)
{
    ncnn_mat_t bias = mb->load_1d(mb, 1, 1);
    (void)layer;
    g_calls[C_LOAD_MODEL]++;
    ncnn_mat_destroy(bias);
    return 0;
}

static int scale_create_pipeline(ncnn_layer_t layer, const ncnn_option_t opt)
{
    (void)layer;
    (void)opt;
    g_calls[C_CREATE]++;
    return 0;
}

static int scale_destroy_pipeline(ncnn_layer_t layer, const ncnn_option_t opt)
{
    (void)layer;
    (void)opt;
    g_calls[C_DESTROY_PIPE]++;
    return 0;
}

static int scale_forward_1(const ncnn_layer_t layer, const ncnn_mat_t bottom, ncnn_mat_t* top, const ncnn_option_t opt)
{
    int w = ncnn_mat_get_w(bottom), h = ncnn_mat_get_h(bottom), c = ncnn_mat_get_c(bottom);
    ncnn_mat_t out = ncnn_mat_create_3d(w, h, c, NULL);
    int q, i;
    (void)layer;
    (void)opt;
    g_calls[C_FORWARD_1]++;
    for (q = 0; q < c; q++)
    {
        const float* src = (const float*)ncnn_mat_get_channel_data(bottom, q);
        float* dst = (float*)ncnn_mat_get_channel_data(out, q);
        for (i = 0; i < w * h; i++)
            dst[i] = src[i] * g_scale;
    }
    *top = out;
    return 0;
}

/* two inputs, one output: the element-wise sum */
static int sum_forward_n(const ncnn_layer_t layer, const ncnn_mat_t* bottoms, int n, ncnn_mat_t* tops, int n2, const ncnn_option_t opt)
{
    ncnn_mat_t out;
    int i, q, c, size;
    (void)layer;
    (void)opt;
    g_calls[C_FORWARD_N]++;
    if (n != 2 || n2 != 1)
        return -1;
    c = ncnn_mat_get_c(bottoms[0]);
    size = ncnn_mat_get_w(bottoms[0]) * ncnn_mat_get_h(bottoms[0]);
    out = ncnn_mat_clone(bottoms[0], NULL);
    for (q = 0; q < c; q++)
    {
        float* d = (float*)ncnn_mat_get_channel_data(out, q);
        const float* s = (const float*)ncnn_mat_get_channel_data(bottoms[1], q);
        for (i = 0; i < size; i++)
            d[i] += s[i];
    }
    tops[0] = out;
    return 0;
}

static ncnn_layer_t scale_creator(void* userdata)
{
    ncnn_layer_t layer = ncnn_layer_create();
    g_calls[C_CREATOR]++;
    CHECK(userdata == (void*)&g_scale);
    ncnn_layer_set_one_blob_only(layer, 1);
    layer->load_param = scale_load_param;
    layer->load_model = scale_load_model;
    layer->create_pipeline = scale_create_pipeline;
    layer->destroy_pipeline = scale_destroy_pipeline;
    layer->forward_1 = scale_forward_1;
    return layer;
}

static ncnn_layer_t sum_creator(void* userdata)
{
    ncnn_layer_t layer = ncnn_layer_create();
    (void)userdata;
    layer->forward_n = sum_forward_n;
    return layer;
}

static void destroyer(ncnn_layer_t layer, void* userdata)
{
    (void)userdata;
    g_calls[C_DESTROYER]++;
    ncnn_layer_destroy(layer);
}

static void test_custom_layers(void)
{
    static const char param[] = "7767517\n4 5\n"
                                "Input in 0 1 data\n"
                                "Split sp 1 2 data a b\n"
                                "MyScale sc 1 1 a s 0=3.0\n"
                                "MySum su 2 1 s b out\n";
    unsigned char zeros[64];
    ncnn_net_t net = ncnn_net_create();
    ncnn_mat_t in = ncnn_mat_create_3d(2, 2, 1, NULL);
    ncnn_mat_t out = 0;
    ncnn_extractor_t ex;
    memset(zeros, 0, sizeof(zeros));

    ncnn_net_register_custom_layer_by_type(net, "MyScale", scale_creator, destroyer, &g_scale);
    ncnn_net_register_custom_layer_by_type(net, "MySum", sum_creator, destroyer, NULL);
    CHECK(ncnn_net_load_param_memory(net, param) == 0);
    CHECK(ncnn_net_load_model_memory(net, zeros) > 0);
    CHECK(g_calls[C_CREATOR] == 1 && g_calls[C_LOAD_PARAM] == 1 && g_scale == 3.f);
    CHECK(g_calls[C_LOAD_MODEL] == 1 && g_calls[C_CREATE] == 1);

    ncnn_mat_fill_float(in, 2.f);
    ex = ncnn_extractor_create(net);
    CHECK(ncnn_extractor_input(ex, "data", in) == 0);
    CHECK(ncnn_extractor_extract(ex, "out", &out) == 0);
    CHECK(out && ((float*)ncnn_mat_get_data(out))[3] == 8.f); /* 2*3 + 2 */
    CHECK(g_calls[C_FORWARD_1] == 1 && g_calls[C_FORWARD_N] == 1);
    ncnn_mat_destroy(out);
    ncnn_extractor_destroy(ex);
    ncnn_net_destroy(net);
    CHECK(g_calls[C_DESTROY_PIPE] == 1 && g_calls[C_DESTROYER] == 2);

    /* by type index: replace the built-in ReLU with the scale layer */
    memset(g_calls, 0, sizeof(g_calls));
    net = ncnn_net_create();
    ncnn_net_register_custom_layer_by_typeindex(net, ncnn_layer_type_to_index("ReLU"), scale_creator, destroyer, &g_scale);
    CHECK(ncnn_net_load_param_memory(net, "7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data out 0=-1.0\n") == 0);
    CHECK(ncnn_net_load_model_memory(net, zeros) > 0);
    ex = ncnn_extractor_create(net);
    ncnn_mat_fill_float(in, 4.f);
    ncnn_extractor_input(ex, "data", in);
    CHECK(ncnn_extractor_extract(ex, "out", &out) == 0);
    CHECK(out && ((float*)ncnn_mat_get_data(out))[0] == -4.f);
    CHECK(g_calls[C_CREATOR] == 1 && g_calls[C_FORWARD_1] == 1);
    ncnn_mat_destroy(out);
    ncnn_extractor_destroy(ex);
    ncnn_net_destroy(net);
    ncnn_mat_destroy(in);
}

/* ---------------------------------------------------------------- net loading through readers */

static void test_net_datareaders(void)
{
    static const char param[] = "7767517\n2 2\nInput in 0 1 data\nReLU r 1 1 data out\n";
    const unsigned char* cursor = (const unsigned char*)param;
    ncnn_net_t net = ncnn_net_create();
    ncnn_datareader_t dr = ncnn_datareader_create_from_memory(&cursor);
    ncnn_datareader_t zero = ncnn_datareader_create();
    zero->read = counting_zero_read;
    CHECK(ncnn_net_load_param_datareader(net, dr) == 0);
    CHECK(ncnn_net_load_model_datareader(net, zero) == 0);
    CHECK(ncnn_net_get_input_count(net) == 1 && ncnn_net_get_output_count(net) == 1);
    ncnn_datareader_destroy(dr);
    ncnn_datareader_destroy(zero);
    ncnn_net_destroy(net);
}

/* ---------------------------------------------------------------- Mat processing */

static void test_mat_processing(void)
{
    ncnn_option_t opt = ncnn_option_create();
    ncnn_mat_t a = ncnn_mat_create_3d(4, 3, 8, NULL);
    ncnn_mat_t packed = 0, flat = 0, back = 0;
    ncnn_mat_t border = ncnn_mat_create();
    ncnn_mat_t cut = ncnn_mat_create();
    int q, i;
    for (q = 0; q < 8; q++)
    {
        float* p = (float*)ncnn_mat_get_channel_data(a, q);
        for (i = 0; i < 12; i++)
            p[i] = (float)(q * 100 + i);
    }
    ncnn_convert_packing(a, &packed, 4, opt);
    CHECK(packed && ncnn_mat_get_elempack(packed) == 4 && ncnn_mat_get_c(packed) == 2);
    CHECK(packed && ncnn_mat_get_elemsize(packed) == 16);
    /* lane 1 of the first pixel of group 0 is channel 1 */
    CHECK(packed && ((float*)ncnn_mat_get_data(packed))[1] == 100.f);
    ncnn_convert_packing(packed, &back, 1, opt);
    CHECK(back && ((float*)ncnn_mat_get_channel_data(back, 7))[11] == 711.f);
    ncnn_flatten(a, &flat, opt);
    CHECK(flat && ncnn_mat_get_dims(flat) == 1 && ncnn_mat_get_w(flat) == 96);
    CHECK(flat && ((float*)ncnn_mat_get_data(flat))[12] == 100.f);

    ncnn_copy_make_border(a, border, 1, 2, 3, 4, NCNN_BORDER_CONSTANT, -1.f, opt);
    CHECK(ncnn_mat_get_w(border) == 11 && ncnn_mat_get_h(border) == 6 && ncnn_mat_get_c(border) == 8);
    CHECK(((float*)ncnn_mat_get_channel_data(border, 0))[0] == -1.f);
    CHECK(((float*)ncnn_mat_get_channel_data(border, 2))[11 + 3] == 200.f);
    ncnn_copy_cut_border(border, cut, 1, 2, 3, 4, opt);
    CHECK(ncnn_mat_get_w(cut) == 4 && ncnn_mat_get_h(cut) == 3);
    CHECK(((float*)ncnn_mat_get_channel_data(cut, 5))[7] == 507.f);
    {
        ncnn_mat_t v = ncnn_mat_create_4d(3, 3, 2, 1, NULL);
        ncnn_mat_t v2 = ncnn_mat_create();
        ncnn_mat_t v3 = ncnn_mat_create();
        ncnn_mat_fill_float(v, 1.f);
        ncnn_copy_make_border_3d(v, v2, 0, 0, 0, 0, 1, 1, NCNN_BORDER_REPLICATE, 0.f, opt);
        CHECK(ncnn_mat_get_d(v2) == 4 && ((float*)ncnn_mat_get_data(v2))[0] == 1.f);
        ncnn_copy_cut_border_3d(v2, v3, 0, 0, 0, 0, 1, 1, opt);
        CHECK(ncnn_mat_get_d(v3) == 2);
        ncnn_mat_destroy(v);
        ncnn_mat_destroy(v2);
        ncnn_mat_destroy(v3);
    }
    CHECK(NCNN_BORDER_REFLECT == 2 && NCNN_BORDER_TRANSPARENT == -233);

    ncnn_mat_destroy(a);
    ncnn_mat_destroy(packed);
    ncnn_mat_destroy(back);
    ncnn_mat_destroy(flat);
    ncnn_mat_destroy(border);
    ncnn_mat_destroy(cut);
    ncnn_option_destroy(opt);
}

/* ---------------------------------------------------------------- blobs and drawing */

static void test_blobs_and_drawing(void)
{
    unsigned char img[8 * 6 * 3];
    int dims = -7;
    memset(img, 0, sizeof(img));
    /* no C function hands out blobs; NULL must be refused, not dereferenced */
    CHECK(ncnn_blob_get_name(NULL) == NULL);
    CHECK(ncnn_blob_get_producer(NULL) == -1 && ncnn_blob_get_consumer(NULL) == -1);
    ncnn_blob_get_shape(NULL, &dims, &dims, &dims, &dims);
    CHECK(dims == -7);

    ncnn_draw_rectangle_c3(img, 8, 6, 1, 1, 4, 3, 0x030201, -1);
    CHECK(img[(1 * 8 + 1) * 3] == 1 && img[(1 * 8 + 1) * 3 + 2] == 3 && img[0] == 0);
    ncnn_draw_line_c3(img, 8, 6, 0, 5, 7, 5, 0xFFFFFF, 1);
    CHECK(img[(5 * 8 + 7) * 3] == 255);
    ncnn_draw_circle_c3(img, 8, 6, 4, 3, 100, 0x0000FF, 2); /* far outside: clipped away */
    ncnn_draw_text_c3(img, 8, 6, "Ab\n9", -2, -3, 4, 0xFFFFFF);
    ncnn_draw_rectangle_c1(img, 8, 6, 0, 0, 100, 100, 9, 3); /* outline straddles the corner */
    CHECK(img[0] == 9);
}

/* ---------------------------------------------------------------- batch Mats */

static void test_batch(void)
{
    ncnn_mat_t m = ncnn_mat_create_2d_batch(3, 2, 4, NULL);
    ncnn_mat_t e = ncnn_mat_create_1d_elem_batch(5, 4, 1, 3, NULL);
    float* b0 = (float*)ncnn_mat_get_batch_data(m, 0);
    float* b3 = (float*)ncnn_mat_get_batch_data(m, 3);
    /* ncnn rounds each item up to 16 bytes: 3x2 floats -> 8 */
    CHECK(ncnn_mat_get_n(m) == 4 && ncnn_mat_get_nstep(m) == 8);
    CHECK(b3 - b0 == 24);
    CHECK(ncnn_mat_get_batch_data(m, 4) == NULL);
    CHECK(ncnn_mat_get_n(e) == 3 && ncnn_mat_get_w(e) == 5);
    ncnn_mat_destroy(m);
    ncnn_mat_destroy(e);
}

int main(void)
{
    test_paramdict();
    test_readers();
    test_builtin_layers();
    test_custom_layers();
    test_net_datareaders();
    test_mat_processing();
    test_blobs_and_drawing();
    test_batch();
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
