/* SqueezeNet v1.1 classification through ncnn's C API, with a persistent Vulkan
 * pipeline cache (the usage of seed 000 section 8.3). Compiles unchanged against ncnn.
 *
 *   squeezenet PARAM BIN IMAGE.ppm [cpu|vulkan] [CACHE_PATH]
 *
 * IMAGE is a binary PPM (P6, 8-bit). With "vulkan" the pipeline cache is loaded from
 * CACHE_PATH before the model (a missing file is a cache miss, not an error) and saved
 * after the run, so the second run starts warm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"

/* An 8-bit P6 PPM as a packed BGR buffer (what ncnn's SqueezeNet expects). */
static unsigned char* read_ppm_bgr(const char* path, int* w, int* h)
{
    FILE* fp = fopen(path, "rb");
    char magic[3] = {0};
    int maxval = 0, i, c;
    unsigned char* px;
    size_t n;
    if (!fp)
    {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    if (fscanf(fp, "%2s", magic) != 1 || strcmp(magic, "P6") != 0)
    {
        fprintf(stderr, "%s: not a binary PPM (P6)\n", path);
        fclose(fp);
        return NULL;
    }
    /* header fields may be separated by comments */
    for (i = 0; i < 3; i++)
    {
        int* field = i == 0 ? w : i == 1 ? h : &maxval;
        while ((c = fgetc(fp)) == '#' || c == ' ' || c == '\n' || c == '\r' || c == '\t')
            if (c == '#')
                while ((c = fgetc(fp)) != '\n' && c != EOF)
                    ;
        ungetc(c, fp);
        if (fscanf(fp, "%d", field) != 1)
        {
            fprintf(stderr, "%s: bad PPM header\n", path);
            fclose(fp);
            return NULL;
        }
    }
    fgetc(fp); /* the single whitespace before the raster */
    if (*w <= 0 || *h <= 0 || maxval != 255)
    {
        fprintf(stderr, "%s: unsupported PPM (%dx%d, maxval %d)\n", path, *w, *h, maxval);
        fclose(fp);
        return NULL;
    }
    n = (size_t)*w * (size_t)*h * 3;
    px = (unsigned char*)malloc(n);
    if (!px || fread(px, 1, n, fp) != n)
    {
        fprintf(stderr, "%s: truncated raster\n", path);
        free(px);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    for (i = 0; i < *w * *h; i++)
    {
        unsigned char r = px[i * 3];
        px[i * 3] = px[i * 3 + 2];
        px[i * 3 + 2] = r;
    }
    return px;
}

int main(int argc, char** argv)
{
    const char* param;
    const char* model;
    const char* imagepath;
    const char* cache_path;
    int use_vulkan;
    int device_index = 0;
    int w = 0, h = 0, i, k, ret = 1;
    int top[5];
    unsigned char* bgr;
    ncnn_pipelinecache_t pipeline_cache = NULL;
    ncnn_net_t net;
    ncnn_option_t opt;
    ncnn_mat_t in, out = NULL;
    ncnn_extractor_t ex;
    const float mean_vals[3] = {104.f, 117.f, 123.f};
    const float* prob;

    if (argc < 4)
    {
        fprintf(stderr, "usage: %s PARAM BIN IMAGE.ppm [cpu|vulkan] [CACHE_PATH]\n", argv[0]);
        return 2;
    }
    param = argv[1];
    model = argv[2];
    imagepath = argv[3];
    use_vulkan = argc > 4 && strcmp(argv[4], "vulkan") == 0;
    cache_path = argc > 5 ? argv[5] : "squeezenet.ncnn.vkcache";

    bgr = read_ppm_bgr(imagepath, &w, &h);
    if (!bgr)
        return 2;

    if (use_vulkan)
    {
        pipeline_cache = ncnn_pipelinecache_create(device_index);
        if (!pipeline_cache)
        {
            fprintf(stderr, "no Vulkan device %d\n", device_index);
            free(bgr);
            return 3;
        }
        if (ncnn_pipelinecache_load(pipeline_cache, cache_path) == 0)
            printf("pipeline cache: loaded %s\n", cache_path);
        else
            printf("pipeline cache: miss (%s)\n", cache_path);
    }

    net = ncnn_net_create();
    opt = ncnn_net_get_option(net);
    if (use_vulkan)
    {
        ncnn_net_set_vulkan_device(net, device_index);
        ncnn_option_set_use_vulkan_compute(opt, 1);
        ncnn_option_set_pipeline_cache(opt, pipeline_cache);
    }
    else
    {
        ncnn_option_set_use_vulkan_compute(opt, 0);
    }

    if (ncnn_net_load_param(net, param) != 0 || ncnn_net_load_model(net, model) != 0)
    {
        fprintf(stderr, "cannot load %s / %s\n", param, model);
        goto done;
    }

    in = ncnn_mat_from_pixels_resize(bgr, NCNN_MAT_PIXEL_BGR, w, h, w * 3, 227, 227, NULL);
    ncnn_mat_substract_mean_normalize(in, mean_vals, NULL);

    ex = ncnn_extractor_create(net);
    if (ncnn_extractor_input(ex, "data", in) == 0 && ncnn_extractor_extract(ex, "prob", &out) == 0)
    {
        int n = ncnn_mat_get_w(out);
        prob = (const float*)ncnn_mat_get_data(out);
        /* top-5 by repeated selection: n is 1000, simplicity wins */
        for (k = 0; k < 5; k++)
        {
            top[k] = -1;
            for (i = 0; i < n; i++)
            {
                int taken = 0, j;
                for (j = 0; j < k; j++)
                    taken |= top[j] == i;
                if (!taken && (top[k] < 0 || prob[i] > prob[top[k]]))
                    top[k] = i;
            }
            printf("%d = %f\n", top[k], prob[top[k]]);
        }
        ret = 0;
    }
    else
    {
        fprintf(stderr, "inference failed\n");
    }
    ncnn_mat_destroy(out);
    ncnn_extractor_destroy(ex);
    ncnn_mat_destroy(in);

    if (use_vulkan)
    {
        if (ncnn_pipelinecache_save(pipeline_cache, cache_path) == 0)
            printf("pipeline cache: saved %s (%zu pipelines)\n", cache_path, ncnn_pipelinecache_get_size(pipeline_cache));
        else
            fprintf(stderr, "pipeline cache: cannot save %s\n", cache_path);
    }

done:
    ncnn_net_destroy(net);
    if (pipeline_cache)
        ncnn_pipelinecache_destroy(pipeline_cache);
    free(bgr);
    return ret;
}
