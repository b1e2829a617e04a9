#version 450

// In-place softmax of an elempack 4 blob along one axis; the pack1 shader's lines, counted in
// packed elements. Along an unpacked axis one invocation runs the four lines of a packed
// element's lanes side by side (vec4 max and sum). Along the packed axis (across = 1) the
// lanes are neighbours on the line itself, so the max and the sum fold the lanes together.
// fp32 throughout whatever afp is.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) buffer bottom_top_blob { vec4 bottom_top_blob_data[]; };
#define blob_ld4(buf, i) vec4(buf[i])
#define blob_st4(buf, i, v) {buf[i] = vec4(v);}
#else
layout (binding = 0) buffer bottom_top_blob { sfpvec4 bottom_top_blob_data[]; };
#define blob_ld4(buf, i) vec4(buffer_ld4(buf, i))
#define blob_st4(buf, i, v) buffer_st4(buf, i, afpvec4(v))
#endif

layout (push_constant) uniform parameter
{
    int n;
    int inner;
    int mid;
    int c;
    int astride;
    int cstep;
    int across;
} p;

void main()
{
    const int l = int(gl_GlobalInvocationID.x);

    if (l >= p.inner * p.mid * p.c)
        return;

    const int i = l % p.inner;
    const int t = l / p.inner;
    const int base = (t / p.mid) * p.cstep + (t % p.mid) * p.n * p.inner + i;

    // llvmpipe ends an invocation's loops after 65535 back-edges in all: two packed
    // elements per iteration
    const int n2 = p.n - p.n % 2;
    vec4 m = vec4(-3.402823466e+38f);
    for (int k = 0; k < n2; k += 2)
    {
        const int idx = base + k * p.astride;
        m = skip_nan_max(skip_nan_max(m, blob_ld4(bottom_top_blob_data, idx)), blob_ld4(bottom_top_blob_data, idx + p.astride));
    }
    if (n2 < p.n)
        m = skip_nan_max(m, blob_ld4(bottom_top_blob_data, base + n2 * p.astride));
    if (p.across == 1)
        m = vec4(skip_nan_max(skip_nan_max(m.x, m.y), skip_nan_max(m.z, m.w)));

    vec4 sum = vec4(0.f);
    for (int k = 0; k < n2; k += 2)
    {
        const int idx = base + k * p.astride;
        const vec4 v0 = softmax_exp(blob_ld4(bottom_top_blob_data, idx) - m);
        const vec4 v1 = softmax_exp(blob_ld4(bottom_top_blob_data, idx + p.astride) - m);
        blob_st4(bottom_top_blob_data, idx, v0);
        blob_st4(bottom_top_blob_data, idx + p.astride, v1);
        sum += v0;
        sum += v1;
    }
    if (n2 < p.n)
    {
        const int idx = base + n2 * p.astride;
        const vec4 v = softmax_exp(blob_ld4(bottom_top_blob_data, idx) - m);
        blob_st4(bottom_top_blob_data, idx, v);
        sum += v;
    }
    if (p.across == 1)
        sum = vec4(sum.x + sum.y + sum.z + sum.w);

    for (int k = 0; k < p.n; k++)
    {
        const int idx = base + k * p.astride;
        blob_st4(bottom_top_blob_data, idx, blob_ld4(bottom_top_blob_data, idx) / sum);
    }
}
