/* A custom layer written in C, inside a real network.
 *
 *   custom_layer PARAM BIN IMAGE.ppm [LABELS]
 *
 * PARAM is SqueezeNet with separate ReLU layers (models/squeezenet_v1.1_unfused.param).
 * Every ReLU of the network is replaced by MyReLU below, registered by type index (the way
 * ncnn overrides a built-in layer): load_param reads the slope (param 0), forward_inplace_1
 * rectifies each channel in place. The image is classified twice, with the built-in ReLU and
 * with ours, and both top-5 lists are printed: they must agree.
 * Compiles unchanged against ncnn's own c_api.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"
#include "common.h"

/* Per-layer state. The struct's pthis belongs to the library (ncnn keeps its own C++ object
 * there), so a C layer keeps its state beside it, found by the layer handle. */
typedef struct MyReLU
{
    ncnn_layer_t layer;
    float slope;
    struct MyReLU* next;
} MyReLU;

static MyReLU* g_layers = NULL;
static int g_forward_calls = 0;

static MyReLU* state_of(const ncnn_layer_t layer)
{
    MyReLU* s = g_layers;
    while (s && s->layer != layer)
        s = s->next;
    return s;
}

static int myrelu_load_param(ncnn_layer_t layer, const ncnn_paramdict_t pd)
{
    state_of(layer)->slope = ncnn_paramdict_get_float(pd, 0, 0.f);
    return 0;
}

static int myrelu_forward_inplace_1(const ncnn_layer_t layer, ncnn_mat_t bottom_top_blob, const ncnn_option_t opt)
{
    const float slope = state_of(layer)->slope;
    int c = ncnn_mat_get_c(bottom_top_blob);
    int size = ncnn_mat_get_w(bottom_top_blob) * ncnn_mat_get_h(bottom_top_blob) * ncnn_mat_get_d(bottom_top_blob);
    int q, i;
    (void)opt;
    g_forward_calls++;
    for (q = 0; q < c; q++) /* channels may be padded apart: walk each one */
    {
        float* p = (float*)ncnn_mat_get_channel_data(bottom_top_blob, q);
        for (i = 0; i < size; i++)
            if (p[i] < 0.f)
                p[i] *= slope;
    }
    return 0;
}

static ncnn_layer_t myrelu_creator(void* userdata)
{
    ncnn_layer_t layer = ncnn_layer_create();
    MyReLU* s = (MyReLU*)calloc(1, sizeof(MyReLU));
    (void)userdata;
    s->layer = layer;
    s->next = g_layers;
    g_layers = s;
    ncnn_layer_set_one_blob_only(layer, 1);
    ncnn_layer_set_support_inplace(layer, 1);
    layer->load_param = myrelu_load_param;
    layer->forward_inplace_1 = myrelu_forward_inplace_1;
    return layer;
}

static void myrelu_destroyer(ncnn_layer_t layer, void* userdata)
{
    MyReLU** link = &g_layers;
    (void)userdata;
    while (*link && (*link)->layer != layer)
        link = &(*link)->next;
    if (*link)
    {
        MyReLU* s = *link;
        *link = s->next;
        free(s);
    }
    ncnn_layer_destroy(layer);
}

/* Classifies the image; fills scores (1000 floats). Returns 0 on success. */
static int classify(const char* param, const char* model, const unsigned char* bgr, int w, int h, int custom, float* scores)
{
    const float mean_vals[3] = {104.f, 117.f, 123.f};
    ncnn_net_t net = ncnn_net_create();
    ncnn_mat_t in, out = NULL;
    ncnn_extractor_t ex;
    int ret = -1;

    ncnn_option_set_use_vulkan_compute(ncnn_net_get_option(net), 0);
    if (custom) /* before load_param: layers are created while the param file is read */
        ncnn_net_register_custom_layer_by_typeindex(net, ncnn_layer_type_to_index("ReLU"), myrelu_creator, myrelu_destroyer, NULL);
    if (ncnn_net_load_param(net, param) != 0 || ncnn_net_load_model(net, model) != 0)
    {
        fprintf(stderr, "cannot load %s / %s\n", param, model);
        ncnn_net_destroy(net);
        return -1;
    }
    in = ncnn_mat_from_pixels_resize(bgr, NCNN_MAT_PIXEL_BGR, w, h, w * 3, 227, 227, NULL);
    ncnn_mat_substract_mean_normalize(in, mean_vals, NULL);
    ex = ncnn_extractor_create(net);
    if (ncnn_extractor_input(ex, "data", in) == 0 && ncnn_extractor_extract(ex, "prob", &out) == 0
            && ncnn_mat_get_w(out) == 1000)
    {
        memcpy(scores, ncnn_mat_get_data(out), 1000 * sizeof(float));
        ret = 0;
    }
    ncnn_mat_destroy(out);
    ncnn_extractor_destroy(ex);
    ncnn_mat_destroy(in);
    ncnn_net_destroy(net);
    return ret;
}

int main(int argc, char** argv)
{
    static float builtin[1000], custom[1000];
    const char* labels;
    unsigned char* bgr;
    int w = 0, h = 0, i, best_b = 0, best_c = 0;

    if (argc < 4)
    {
        fprintf(stderr, "usage: %s PARAM BIN IMAGE.ppm [LABELS]\n", argv[0]);
        return 2;
    }
    labels = argc > 4 ? argv[4] : NULL;
    bgr = read_ppm_bgr(argv[3], &w, &h);
    if (!bgr)
        return 2;
    if (classify(argv[1], argv[2], bgr, w, h, 0, builtin) != 0 || classify(argv[1], argv[2], bgr, w, h, 1, custom) != 0)
    {
        free(bgr);
        return 1;
    }
    free(bgr);

    printf("built-in ReLU:\n");
    print_topk(builtin, 1000, 5, labels);
    printf("MyReLU (C, %d forward calls):\n", g_forward_calls);
    print_topk(custom, 1000, 5, labels);
    for (i = 1; i < 1000; i++)
    {
        best_b = builtin[i] > builtin[best_b] ? i : best_b;
        best_c = custom[i] > custom[best_c] ? i : best_c;
    }
    printf("same top class: %s\n", best_b == best_c ? "yes" : "no");
    if (g_layers) /* the net's destruction hands every custom layer to its destroyer */
    {
        fprintf(stderr, "custom layers left undestroyed\n");
        return 1;
    }
    return best_b == best_c && g_forward_calls > 0 ? 0 : 1;
}
