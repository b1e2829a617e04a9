#version 450

// Statistics of normalisation segments, first pass: invocation (segment s, chunk) reduces up
// to `chunk` values of its segment. mode 0 (GroupNorm, InstanceNorm, LayerNorm): their mean
// and M2 (sum of squared deviations), reading them twice (two-pass: exact for large means,
// unlike sum-of-squares). mode 1..3 (Normalize, eps_mode 0..2) and 4 (RMSNorm): their sum of
// squares. With one chunk per segment (`finish`), it writes the segment's final (shift,
// factor) directly: (mean, 1/sqrt(var + eps)), (0, 1/norm) or (0, 1/sqrt(mean(x^2) + eps)),
// and no combine pass runs.
//
// A segment is `nch` consecutive channels of ncnn's channel axis, taking `n` values of
// each, starting at value r * n where r = s % spc (LayerNorm's slices) and channel
// (s / spc) * nch. Channel ch lies in packed line ch / P, lane ch % P; its value k sits at
// scalar (ch / P) * lstride + k * P + ch % P. All sums are fp32 whatever afp is.

layout (constant_id = 0) const int mode = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer partial_blob { vec2 partial_data[]; };

layout (push_constant) uniform parameter
{
    int P;
    int lstride;
    int n;
    int spc;
    int nch;
    int nseg;
    int chunk;
    int nchunks;
    int finish;
    float eps;
} p;

void main()
{
    const int gid = int(gl_GlobalInvocationID.x);
    if (gid >= p.nseg * p.nchunks)
        return;

    const int s = gid / p.nchunks;
    const int t0 = (gid - s * p.nchunks) * p.chunk;
    const int count = p.nch * p.n;
    const int t1 = min(t0 + p.chunk, count);
    const int ch0 = (s / p.spc) * p.nch;
    const int k0 = (s % p.spc) * p.n;

    // walk (channel j, value kk) from t0 without dividing per value
    const int j0 = t0 / p.n;
    const int kk0 = t0 - j0 * p.n;

    float sum = 0.f;
    {
        int j = j0;
        int kk = kk0;
        int ch = ch0 + j;
        int base = (ch / p.P) * p.lstride + ch % p.P + k0 * p.P;
        for (int t = t0; t < t1; t++)
        {
            const float v = float(buffer_ld1(bottom_blob_data, base + kk * p.P));
            sum += mode == 0 ? v : v * v;
            kk++;
            if (kk == p.n)
            {
                kk = 0;
                j++;
                ch = ch0 + j;
                base = (ch / p.P) * p.lstride + ch % p.P + k0 * p.P;
            }
        }
    }
    if (mode != 0)
    {
        if (p.finish == 1)
        {
            const float d = mode == 1 ? sqrt(sum + p.eps) : mode == 2 ? max(sqrt(sum), p.eps)
                          : mode == 3 ? sqrt(max(sum, p.eps)) : sqrt(sum / float(t1 - t0) + p.eps);
            partial_data[gid] = vec2(0.f, 1.f / d);
        }
        else
        {
            partial_data[gid] = vec2(0.f, sum);
        }
        return;
    }

    const float mean = sum / float(t1 - t0);

    float m2 = 0.f;
    {
        int j = j0;
        int kk = kk0;
        int ch = ch0 + j;
        int base = (ch / p.P) * p.lstride + ch % p.P + k0 * p.P;
        for (int t = t0; t < t1; t++)
        {
            const float d = float(buffer_ld1(bottom_blob_data, base + kk * p.P)) - mean;
            m2 += d * d;
            kk++;
            if (kk == p.n)
            {
                kk = 0;
                j++;
                ch = ch0 + j;
                base = (ch / p.P) * p.lstride + ch % p.P + k0 * p.P;
            }
        }
    }

    if (p.finish == 1)
        partial_data[gid] = vec2(mean, 1.f / sqrt(m2 / float(t1 - t0) + p.eps));
    else
        partial_data[gid] = vec2(mean, m2);
}
