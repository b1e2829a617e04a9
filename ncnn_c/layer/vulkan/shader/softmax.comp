#version 450

// In-place softmax along one axis. The blob is seen as lines: a line is every element
// that shares all coordinates but the softmax axis. One invocation owns one line and
// makes the three passes (max, exp-sum, divide) itself, so a single dispatch suffices
// and the summation order equals the CPU's sequential one.
//
// Line l (of inner * mid * c) starts at (l / inner / mid) * cstep + ((l / inner) % mid) * n * inner
// + l % inner and steps by astride: inner within a channel, cstep across channels.

// 1: a line of only -inf (SDPA's query row the mask hides wholly) gives 0, not 0 / 0
layout (constant_id = 0) const int empty_line_zero = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int n;
    int inner;
    int mid;
    int c;
    int astride;
    int cstep;
} p;

void main()
{
    const int l = int(gl_GlobalInvocationID.x);

    if (l >= p.inner * p.mid * p.c)
        return;

    const int i = l % p.inner;
    const int t = l / p.inner;
    const int base = (t / p.mid) * p.cstep + (t % p.mid) * p.n * p.inner + i;

    // the reductions run in fp32 whatever afp is: a sum of a thousand exps in fp16 would
    // lose whole percents (its ulp near 1000 is 0.5).
    // llvmpipe ends an invocation's loops after 65535 back-edges in all, so each pass takes
    // 4 values per iteration: lines of up to ~87000 values fit
    const int n4 = p.n - p.n % 4;
    float m = -3.402823466e+38f;
    for (int k = 0; k < n4; k += 4)
    {
        const int idx = base + k * p.astride;
        m = skip_nan_max(m, float(buffer_ld1(bottom_top_blob_data, idx)));
        m = skip_nan_max(m, float(buffer_ld1(bottom_top_blob_data, idx + p.astride)));
        m = skip_nan_max(m, float(buffer_ld1(bottom_top_blob_data, idx + 2 * p.astride)));
        m = skip_nan_max(m, float(buffer_ld1(bottom_top_blob_data, idx + 3 * p.astride)));
    }
    for (int k = n4; k < p.n; k++)
    {
        m = skip_nan_max(m, float(buffer_ld1(bottom_top_blob_data, base + k * p.astride)));
    }

    float sum = 0.f;
    for (int k = 0; k < n4; k += 4)
    {
        const int idx = base + k * p.astride;
        const float v0 = softmax_exp(float(buffer_ld1(bottom_top_blob_data, idx)) - m);
        const float v1 = softmax_exp(float(buffer_ld1(bottom_top_blob_data, idx + p.astride)) - m);
        const float v2 = softmax_exp(float(buffer_ld1(bottom_top_blob_data, idx + 2 * p.astride)) - m);
        const float v3 = softmax_exp(float(buffer_ld1(bottom_top_blob_data, idx + 3 * p.astride)) - m);
        buffer_st1(bottom_top_blob_data, idx, v0);
        buffer_st1(bottom_top_blob_data, idx + p.astride, v1);
        buffer_st1(bottom_top_blob_data, idx + 2 * p.astride, v2);
        buffer_st1(bottom_top_blob_data, idx + 3 * p.astride, v3);
        // the CPU's order: one value at a time
        sum += v0;
        sum += v1;
        sum += v2;
        sum += v3;
    }
    for (int k = n4; k < p.n; k++)
    {
        const int idx = base + k * p.astride;
        const float v = softmax_exp(float(buffer_ld1(bottom_top_blob_data, idx)) - m);
        buffer_st1(bottom_top_blob_data, idx, v);
        sum += v;
    }

    // such a line's exps are all 0: over 1 they stay 0
    if (empty_line_zero == 1 && sum == 0.f)
        sum = 1.f;

    for (int k = 0; k < n4; k += 4)
    {
        const int idx = base + k * p.astride;
        buffer_st1(bottom_top_blob_data, idx, float(buffer_ld1(bottom_top_blob_data, idx)) / sum);
        buffer_st1(bottom_top_blob_data, idx + p.astride, float(buffer_ld1(bottom_top_blob_data, idx + p.astride)) / sum);
        buffer_st1(bottom_top_blob_data, idx + 2 * p.astride, float(buffer_ld1(bottom_top_blob_data, idx + 2 * p.astride)) / sum);
        buffer_st1(bottom_top_blob_data, idx + 3 * p.astride, float(buffer_ld1(bottom_top_blob_data, idx + 3 * p.astride)) / sum);
    }
    for (int k = n4; k < p.n; k++)
    {
        const int idx = base + k * p.astride;
        buffer_st1(bottom_top_blob_data, idx, float(buffer_ld1(bottom_top_blob_data, idx)) / sum);
    }
}
