#version 450

// Segment statistics, second pass: one invocation per segment merges its chunks. mode 0:
// the chunks' (mean, M2) by Chan et al.'s pairwise update (stable for any chunk count) into
// (mean, 1/sqrt(var + eps)); mode 1..3 (Normalize, eps_mode 0..2): the chunks' sums of
// squares into (0, 1/norm); mode 4 (RMSNorm): into (0, 1/sqrt(mean(x^2) + eps)). Reads and
// writes only fp32 scratch buffers.

layout (constant_id = 0) const int mode = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer partial_blob { vec2 partial_data[]; };
layout (binding = 1) writeonly buffer stats_blob { vec2 stats_data[]; };

layout (push_constant) uniform parameter
{
    int nseg;
    int nchunks;
    int chunk;
    int count;
    float eps;
} p;

void main()
{
    const int s = int(gl_GlobalInvocationID.x);
    if (s >= p.nseg)
        return;

    if (mode != 0)
    {
        float sum = 0.f;
        for (int i = 0; i < p.nchunks; i++)
            sum += partial_data[s * p.nchunks + i].y;
        const float d = mode == 1 ? sqrt(sum + p.eps) : mode == 2 ? max(sqrt(sum), p.eps)
                      : mode == 3 ? sqrt(max(sum, p.eps)) : sqrt(sum / float(p.count) + p.eps);
        stats_data[s] = vec2(0.f, 1.f / d);
        return;
    }

    float n = 0.f;
    float mean = 0.f;
    float m2 = 0.f;
    for (int i = 0; i < p.nchunks; i++)
    {
        const vec2 part = partial_data[s * p.nchunks + i];
        const float nb = float(min(p.chunk, p.count - i * p.chunk));
        const float nn = n + nb;
        const float delta = part.x - mean;
        mean += delta * (nb / nn);
        m2 += part.y + delta * delta * (n * nb / nn);
        n = nn;
    }

    stats_data[s] = vec2(mean, 1.f / sqrt(m2 / n + p.eps));
}
