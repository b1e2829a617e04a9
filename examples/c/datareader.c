/* A model read through a custom data reader: the C callbacks behind ncnn_datareader_t.
 *
 *   datareader PARAM BIN IMAGE.ppm [LABELS]
 *
 * An application that ships its models inside its own archive, encrypted, or downloaded
 * into memory hands ncnn a reader instead of file names. Here the .param and .bin come from
 * one in-memory "asset pack" (both files read into a single buffer, as an app would map its
 * archive), served by two readers over slices of it. scan parses one text field at a time
 * (ncnn's contract for .param text), read copies raw bytes (.bin); a reader provides both and
 * the library picks what it needs.
 * Compiles unchanged against ncnn's own c_api.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api.h"
#include "common.h"

/* A slice of the pack and a cursor. The struct's pthis belongs to the library, so readers
 * are looked up by handle in a small table. */
typedef struct
{
    ncnn_datareader_t dr;
    const unsigned char* data;
    size_t size;
    size_t pos;
    size_t scans, reads;
} Slice;

static Slice g_slices[2];

static Slice* slice_of(ncnn_datareader_t dr)
{
    int i;
    for (i = 0; i < 2; i++)
        if (g_slices[i].dr == dr)
            return &g_slices[i];
    return NULL;
}

/* One scanf conversion from the cursor. The text is copied out with a terminating NUL
 * (the pack is not a C string), and %n tells how far the conversion went. */
static int slice_scan(ncnn_datareader_t dr, const char* format, void* p)
{
    Slice* s = slice_of(dr);
    char fmt[64];
    char* text;
    size_t left;
    int consumed = 0, got;
    if (!s || s->pos >= s->size || strlen(format) + 3 > sizeof(fmt))
        return 0;
    left = s->size - s->pos;
    text = (char*)malloc(left + 1);
    memcpy(text, s->data + s->pos, left);
    text[left] = 0;
    snprintf(fmt, sizeof(fmt), "%s%%n", format);
    got = sscanf(text, fmt, p, &consumed);
    free(text);
    if (got == 1)
        s->pos += (size_t)consumed;
    s->scans++;
    return got;
}

static size_t slice_read(ncnn_datareader_t dr, void* buf, size_t size)
{
    Slice* s = slice_of(dr);
    size_t n;
    if (!s)
        return 0;
    n = size < s->size - s->pos ? size : s->size - s->pos;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    s->reads++;
    return n;
}

static ncnn_datareader_t slice_reader(int i, const unsigned char* data, size_t size)
{
    ncnn_datareader_t dr = ncnn_datareader_create();
    g_slices[i].dr = dr;
    g_slices[i].data = data;
    g_slices[i].size = size;
    dr->scan = slice_scan;
    dr->read = slice_read;
    return dr;
}

/* Appends a whole file to the pack; returns its size, or -1. */
static long append_file(const char* path, unsigned char** pack, size_t* len)
{
    FILE* fp = fopen(path, "rb");
    long n;
    unsigned char* grown;
    if (!fp)
        return -1;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    grown = (unsigned char*)realloc(*pack, *len + (size_t)n);
    if (!grown || fread(grown + *len, 1, (size_t)n, fp) != (size_t)n)
    {
        fclose(fp);
        free(grown ? grown : *pack);
        *pack = NULL;
        return -1;
    }
    fclose(fp);
    *pack = grown;
    *len += (size_t)n;
    return n;
}

int main(int argc, char** argv)
{
    const float mean_vals[3] = {104.f, 117.f, 123.f};
    unsigned char* pack = NULL;
    unsigned char* bgr;
    size_t len = 0;
    long param_size, bin_size;
    int w = 0, h = 0, ret = 1;
    ncnn_datareader_t param_reader, bin_reader;
    ncnn_net_t net;
    ncnn_mat_t in, out = NULL;
    ncnn_extractor_t ex;

    if (argc < 4)
    {
        fprintf(stderr, "usage: %s PARAM BIN IMAGE.ppm [LABELS]\n", argv[0]);
        return 2;
    }
    param_size = append_file(argv[1], &pack, &len);
    bin_size = param_size < 0 ? -1 : append_file(argv[2], &pack, &len);
    if (bin_size < 0)
    {
        fprintf(stderr, "cannot read %s / %s\n", argv[1], argv[2]);
        return 2;
    }
    printf("asset pack: %zu bytes (param %ld, weights %ld)\n", len, param_size, bin_size);
    bgr = read_ppm_bgr(argv[3], &w, &h);
    if (!bgr)
    {
        free(pack);
        return 2;
    }

    param_reader = slice_reader(0, pack, (size_t)param_size);
    bin_reader = slice_reader(1, pack + param_size, (size_t)bin_size);
    net = ncnn_net_create();
    ncnn_option_set_use_vulkan_compute(ncnn_net_get_option(net), 0);
    if (ncnn_net_load_param_datareader(net, param_reader) != 0 || ncnn_net_load_model_datareader(net, bin_reader) != 0)
    {
        fprintf(stderr, "loading through the data readers failed\n");
        goto done;
    }
    printf("param: %zu scan + %zu read calls, %zu of %zu bytes; weights: %zu read calls, %zu of %zu bytes\n",
           g_slices[0].scans, g_slices[0].reads, g_slices[0].pos, g_slices[0].size, g_slices[1].reads, g_slices[1].pos,
           g_slices[1].size);

    in = ncnn_mat_from_pixels_resize(bgr, NCNN_MAT_PIXEL_BGR, w, h, w * 3, 227, 227, NULL);
    ncnn_mat_substract_mean_normalize(in, mean_vals, NULL);
    ex = ncnn_extractor_create(net);
    if (ncnn_extractor_input(ex, "data", in) == 0 && ncnn_extractor_extract(ex, "prob", &out) == 0)
    {
        print_topk((const float*)ncnn_mat_get_data(out), ncnn_mat_get_w(out), 5, argc > 4 ? argv[4] : NULL);
        ret = g_slices[1].pos == g_slices[1].size ? 0 : 1; /* every weight byte was consumed */
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
    ncnn_datareader_destroy(param_reader);
    ncnn_datareader_destroy(bin_reader);
    free(bgr);
    free(pack);
    return ret;
}
