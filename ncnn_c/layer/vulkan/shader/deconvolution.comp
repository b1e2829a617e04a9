#version 450

// Transposed convolution (Deconvolution, and DeconvolutionDepthWise with any group) of
// elempack 1 blobs, as a gather: one invocation computes one output position x 4 output
// channels of one group, over a (outw * outh, ceil(outc_g/4), group) grid. Output (ox, oy)
// is full-output position (ox + crop_left, oy + crop_top); input (sx, sy) reaches it
// through tap (kx, ky) when sx * stride_w + kx * dilation_w equals it (likewise in y), so
// each tap either hits one input pixel or none, and the crop, output_pad and
// output_w/output_h forms all reduce to that offset and the output size (the layer takes
// them from the CPU class's geometry). Weights are [group][ceil(outc_g/4)][inc_g][kh*kw]
// vec4s (4 output channels of one tap, zero past outc_g), the bias [group][ceil(outc_g/4)]
// vec4s, fp32 whatever the storage type.

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int kernel_h = 1;
layout (constant_id = 2) const int dilation_w = 1;
layout (constant_id = 3) const int dilation_h = 1;
layout (constant_id = 4) const int stride_w = 1;
layout (constant_id = 5) const int stride_h = 1;
layout (constant_id = 6) const int bias_term = 0;
layout (constant_id = 7) const int activation_type = 0;
layout (constant_id = 8) const float activation_param_0 = 0;
layout (constant_id = 9) const float activation_param_1 = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer weight_blob { vec4 weight_data[]; };
// bound to the weights and never read when bias_term == 0
layout (binding = 3) readonly buffer bias_blob { vec4 bias_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int c;
    int cstep;

    int outw;
    int outh;
    int outc;
    int outcstep;

    int crop_left;
    int crop_top;
    int inc_g;
    int outc_g;
} p;

// ncnn's fused activations (activation_type 0..6) on 4 output channels; params follow ncnn's meaning.
afpvec4 activation(afpvec4 v)
{
    if (activation_type == 1)
    {
        v = max(v, afp(0.f));
    }
    else if (activation_type == 2)
    {
        v = mix(v, v * afp(activation_param_0), lessThan(v, afpvec4(0.f)));
    }
    else if (activation_type == 3)
    {
        v = clamp(v, afp(activation_param_0), afp(activation_param_1));
    }
    else if (activation_type == 4)
    {
        // the clamp keeps exp() finite, as ncnn's CPU path does
        v = clamp(v, afp(-88.3762626647949f), afp(88.3762626647949f));
        v = afp(1.f) / (afp(1.f) + exp(-v));
    }
    else if (activation_type == 5)
    {
        // softplus saturates to v and tanh to 1 long before exp() overflows; clamping
        // keeps drivers that expand tanh through exp() away from inf/inf
        afpvec4 sp = mix(log(afp(1.f) + exp(v)), v, greaterThan(v, afpvec4(15.f)));
        v = v * tanh(min(sp, afp(15.f)));
    }
    else if (activation_type == 6)
    {
        v = v * clamp(v * afp(activation_param_0) + afp(activation_param_1), afp(0.f), afp(1.f));
    }
    return v;
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    const int vec4s = (p.outc_g + 3) / 4;
    if (gx >= p.outw * p.outh || gy >= vec4s || gz * p.outc_g >= p.outc)
        return;

    const int oy = gx / p.outw;
    const int ox = gx - oy * p.outw;
    const int fx = ox + p.crop_left;
    const int fy = oy + p.crop_top;

    afpvec4 sum = bias_term == 1 ? afpvec4(bias_data[gz * vec4s + gy]) : afpvec4(0.f);

    const int maxk = kernel_w * kernel_h;
    const int wbase = (gz * vec4s + gy) * p.inc_g * maxk;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int ty = fy - ky * dilation_h;
        const int sy = ty / stride_h;
        if (ty < 0 || sy * stride_h != ty || sy >= p.h)
            continue;
        for (int kx = 0; kx < kernel_w; kx++)
        {
            const int tx = fx - kx * dilation_w;
            const int sx = tx / stride_w;
            if (tx < 0 || sx * stride_w != tx || sx >= p.w)
                continue;
            int v = (gz * p.inc_g) * p.cstep + sy * p.w + sx;
            int wi = wbase + ky * kernel_w + kx;
            for (int q = 0; q < p.inc_g; q++)
            {
                sum += buffer_ld1(bottom_blob_data, v) * afpvec4(weight_data[wi]);
                v += p.cstep;
                wi += maxk;
            }
        }
    }

    sum = activation(sum);
    const int co = gz * p.outc_g + gy * 4;
    if (gy * 4 < p.outc_g)
        buffer_st1(top_blob_data, co * p.outcstep + gx, sum.x);
    if (gy * 4 + 1 < p.outc_g)
        buffer_st1(top_blob_data, (co + 1) * p.outcstep + gx, sum.y);
    if (gy * 4 + 2 < p.outc_g)
        buffer_st1(top_blob_data, (co + 2) * p.outcstep + gx, sum.z);
    if (gy * 4 + 3 < p.outc_g)
        buffer_st1(top_blob_data, (co + 3) * p.outcstep + gx, sum.w);
}
