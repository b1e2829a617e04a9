/* Helpers shared by the C examples: a binary PPM reader, ImageNet's labels, top-k.
 * Header-only (static functions) so that each example is one compile command. */
#ifndef NCNN_C_EXAMPLES_COMMON_H
#define NCNN_C_EXAMPLES_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An 8-bit binary PPM (P6) as packed BGR, the channel order ncnn's SqueezeNet expects. */
static inline unsigned char* read_ppm_bgr(const char* path, int* w, int* h)
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
    for (i = 0; i < 3; i++)
    {
        int* field = i == 0 ? w : i == 1 ? h : &maxval;
        /* header fields are separated by white space and may be followed by comments */
        while ((c = fgetc(fp)) == '#' || c == ' ' || c == '\n' || c == '\r' || c == '\t')
            if (c == '#')
                while ((c = fgetc(fp)) != '\n' && c != EOF)
                    ;
        ungetc(c, fp);
        if (fscanf(fp, "%d", field) != 1)
        {
            fclose(fp);
            return NULL;
        }
    }
    fgetc(fp); /* the single white space before the pixels */
    if (*w <= 0 || *h <= 0 || maxval != 255)
    {
        fprintf(stderr, "%s: only 8-bit PPM images are supported\n", path);
        fclose(fp);
        return NULL;
    }
    n = (size_t)*w * (size_t)*h * 3;
    px = (unsigned char*)malloc(n);
    if (!px || fread(px, 1, n, fp) != n)
    {
        fprintf(stderr, "%s: truncated\n", path);
        free(px);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    for (i = 0; i < *w * *h; i++) /* RGB -> BGR */
    {
        unsigned char t = px[i * 3];
        px[i * 3] = px[i * 3 + 2];
        px[i * 3 + 2] = t;
    }
    return px;
}

/* The class names of a synset_words.txt (a WordNet id, a space, the names; one class a line),
 * NULL when there is no such file; *count is how many were read. */
static inline char** load_labels(const char* path, int* count)
{
    char line[1024];
    char** names = NULL;
    int cap = 0;
    FILE* fp = path ? fopen(path, "r") : NULL;
    *count = 0;
    if (!fp)
        return NULL;
    while (fgets(line, sizeof(line), fp))
    {
        char* name = strchr(line, ' '); /* skip the WordNet id */
        char** grown;
        name = name ? name + 1 : line;
        name[strcspn(name, "\r\n")] = 0;
        if (*count == cap)
        {
            cap = cap ? cap * 2 : 1024;
            grown = (char**)realloc(names, sizeof(char*) * (size_t)cap);
            if (!grown)
                break;
            names = grown;
        }
        names[*count] = (char*)malloc(strlen(name) + 1);
        if (!names[*count])
            break;
        strcpy(names[(*count)++], name);
    }
    fclose(fp);
    return names;
}

static inline void free_labels(char** names, int count)
{
    int i;
    for (i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* "synset_words.txt" in the directory of the file `model` (its .param), written into buf. */
static inline const char* labels_beside(const char* model, char* buf, size_t size)
{
    const char* slash = strrchr(model, '/');
    size_t dir = slash ? (size_t)(slash - model) + 1 : 0;
    if (dir + sizeof("synset_words.txt") > size)
        return NULL;
    memcpy(buf, model, dir);
    strcpy(buf + dir, "synset_words.txt");
    return buf;
}

/* Prints the k best of n scores, with the class names of a synset_words.txt when given one. */
static inline void print_topk(const float* scores, int n, int k, const char* labels_path)
{
    int i, j, count = 0;
    int* top = (int*)malloc(sizeof(int) * (size_t)k);
    char** names = load_labels(labels_path, &count);
    for (j = 0; j < k; j++) /* selection: k is small */
    {
        top[j] = -1;
        for (i = 0; i < n; i++)
        {
            int taken = 0, t;
            for (t = 0; t < j; t++)
                taken |= top[t] == i;
            if (!taken && (top[j] < 0 || scores[i] > scores[top[j]]))
                top[j] = i;
        }
        printf("  %.4f  class %3d  %s\n", scores[top[j]], top[j], top[j] < count ? names[top[j]] : "");
    }
    free_labels(names, count);
    free(top);
}

#endif /* NCNN_C_EXAMPLES_COMMON_H */
