#version 450

// Spectrogram of a 1-D elempack 1 signal: one invocation per (frame, frequency) computes
// that frame's DFT term directly, in fp32 whatever the storage. Sample t of frame j is
// signal[j * hoplen + t - pad], the signal extended by pad_type (0 zeros, 1 the edge value,
// 2 reflected) where that falls outside it. The twiddles are cos / sin of 2 pi m / n_fft
// (fp32 pairs); a frequency past n_fft / 2 takes the conjugate of its mirror, as a real
// signal's DFT is. power 0 writes (re, im) pairs in channel k (w 2, h frames), 1 the
// magnitude, 2 its square, at row k of a (frames, freqs) blob.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer window_blob { float window_data[]; };
layout (binding = 3) readonly buffer twiddle_blob { float twiddle_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int n_fft;
    int hoplen;
    int frames;
    int freqs;
    int pad;
    int pad_type;
    int power;
    int cstep;
    float norm;
} p;

float sample_at(int t)
{
    if (t < 0 || t >= p.size)
    {
        if (p.pad_type == 0)
            return 0.f;
        if (p.pad_type == 1)
            t = clamp(t, 0, p.size - 1);
        else
            t = t < 0 ? -t : 2 * (p.size - 1) - t;
    }
    return float(buffer_ld1(bottom_blob_data, t));
}

void main()
{
    const int j = int(gl_GlobalInvocationID.x);
    const int k = int(gl_GlobalInvocationID.y);

    if (j >= p.frames || k >= p.freqs)
        return;

    const bool mirrored = k > p.n_fft / 2;
    const int kk = mirrored ? p.n_fft - k : k;
    const int start = j * p.hoplen - p.pad;

    float re = 0.f;
    float im = 0.f;
    int m = 0; // kk * t modulo n_fft
    for (int t = 0; t < p.n_fft; t++)
    {
        const float v = sample_at(start + t) * window_data[t];
        re += v * twiddle_data[2 * m];
        im -= v * twiddle_data[2 * m + 1];
        m += kk;
        if (m >= p.n_fft)
            m -= p.n_fft;
    }
    re *= p.norm;
    im *= mirrored ? -p.norm : p.norm;

    if (p.power == 0)
    {
        const int i = k * p.cstep + j * 2;
        buffer_st1(top_blob_data, i, afp(re));
        buffer_st1(top_blob_data, i + 1, afp(im));
    }
    else
    {
        const float sq = re * re + im * im;
        buffer_st1(top_blob_data, k * p.frames + j, afp(p.power == 1 ? sqrt(sq) : sq));
    }
}
