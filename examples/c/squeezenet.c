/* SqueezeNet v1.1 classification through ncnn's C API, with a persistent Vulkan
 * pipeline cache: load the cache, load the net, run one image, save the cache.
 * Compiles unchanged against ncnn.
 *
 *   squeezenet PARAM BIN IMAGE.ppm [cpu|vulkan] [CACHE_PATH]
 *
 * IMAGE is a binary PPM (P6, 8-bit), such as models/cat.ppm. With "vulkan" the pipeline
 * cache is loaded from CACHE_PATH before the model (a missing file is a cache miss, not an
 * error) and saved after the run, so the second run starts warm. The top 5 classes are
 * printed with their names when a synset_words.txt lies next to PARAM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"
#include "common.h"

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
    char labels_path[4096];
    char** labels;
    int label_count = 0;

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
    labels = load_labels(labels_beside(param, labels_path, sizeof(labels_path)), &label_count);

    if (use_vulkan)
    {
        pipeline_cache = ncnn_pipelinecache_create(device_index);
        if (!pipeline_cache)
        {
            fprintf(stderr, "no Vulkan device %d\n", device_index);
            free_labels(labels, label_count);
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
            if (top[k] < label_count)
                printf("%d = %f  %s\n", top[k], prob[top[k]], labels[top[k]]);
            else
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
    free_labels(labels, label_count);
    free(bgr);
    return ret;
}
