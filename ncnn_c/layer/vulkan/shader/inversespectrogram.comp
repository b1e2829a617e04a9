#version 450

// InverseSpectrogram of a (freqs, frames, 2) elempack 1 blob: one invocation per output
// sample t, in fp32 whatever the storage. Every frame j whose n_fft span covers position
// t + shift (shift n_fft / 2 when centred) adds its inverse DFT at offset i = t + shift -
// j * hoplen times window[i], and window[i]^2 to the normaliser; the sample is the quotient,
// or the sum itself (0) where no window weight reaches, as on the CPU. Frequencies past the
// stored ones (a onesided input) are the conjugates of their mirrors. The twiddles are
// cos / sin of 2 pi m / n_fft (fp32 pairs). returns 0 writes (re, im) pairs, 1 re, 2 im.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer window_blob { float window_data[]; };
layout (binding = 3) readonly buffer twiddle_blob { float twiddle_data[]; };

layout (push_constant) uniform parameter
{
    int n_fft;
    int hoplen;
    int frames;
    int freqs;
    int cstep;
    int shift;
    int outsize;
    int returns;
    float norm;
} p;

void main()
{
    const int t = int(gl_GlobalInvocationID.x);

    if (t >= p.outsize)
        return;

    const int pos = t + p.shift;
    // frames j with 0 <= pos - j * hoplen < n_fft
    const int j1 = min(pos / p.hoplen, p.frames - 1);
    const int j0 = pos >= p.n_fft ? (pos - p.n_fft) / p.hoplen + 1 : 0;

    float acc_re = 0.f;
    float acc_im = 0.f;
    float wsum = 0.f;
    for (int j = j0; j <= j1; j++)
    {
        const int i = pos - j * p.hoplen;
        if (i < 0 || i >= p.n_fft)
            continue;
        float re = 0.f;
        float im = 0.f;
        int m = 0; // k * i modulo n_fft
        for (int k = 0; k < p.n_fft; k++)
        {
            const bool mirrored = k >= p.freqs;
            const int q = mirrored ? p.n_fft - k : k;
            const int b = q * p.cstep + j * 2;
            const float xr = float(buffer_ld1(bottom_blob_data, b));
            const float xi = mirrored ? -float(buffer_ld1(bottom_blob_data, b + 1)) : float(buffer_ld1(bottom_blob_data, b + 1));
            const float c = twiddle_data[2 * m];
            const float s = twiddle_data[2 * m + 1];
            re += xr * c - xi * s;
            im += xr * s + xi * c;
            m += i;
            if (m >= p.n_fft)
                m -= p.n_fft;
        }
        const float w = window_data[i];
        acc_re += re * p.norm * w;
        acc_im += im * p.norm * w;
        wsum += w * w;
    }

    const float out_re = wsum == 0.f ? acc_re : acc_re / wsum;
    const float out_im = wsum == 0.f ? acc_im : acc_im / wsum;
    if (p.returns == 0)
    {
        buffer_st1(top_blob_data, t * 2, afp(out_re));
        buffer_st1(top_blob_data, t * 2 + 1, afp(out_im));
    }
    else
    {
        buffer_st1(top_blob_data, t, afp(p.returns == 1 ? out_re : out_im));
    }
}
