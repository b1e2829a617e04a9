#version 450

// Direct convolution, one output element per invocation over (outw, outh, outc).
// Padding is not materialised: taps outside the input read pad_value, so the layer
// needs no temporary bordered blob and SAME pads (-233/-234) cost nothing extra.
// Code-changing params are specialization constants; shapes and pads are push
// constants so one pipeline serves every input size. flat_1x1 = 1 selects the
// 1x1 stride-1 unpadded variant over a flat (outw*outh, 1, outc) grid, where no tap
// needs a bounds check; it shares this file so the activations exist only once.

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
layout (constant_id = 10) const int flat_1x1 = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer weight_blob { sfp weight_data[]; };
// bound to the weights when bias_term == 0; never read then
layout (binding = 3) readonly buffer bias_blob { sfp bias_data[]; };

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

    int pad_left;
    int pad_top;
    float pad_value;
} p;

// ncnn's fused activations (activation_type 0..6); params follow ncnn's meaning.
afp activation(afp v)
{
    if (activation_type == 1)
    {
        v = max(v, afp(0.f));
    }
    else if (activation_type == 2)
    {
        v = v < afp(0.f) ? v * afp(activation_param_0) : v;
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
        afp sp = v > afp(15.f) ? v : log(afp(1.f) + exp(v));
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

    afp sum = afp(0.f);

    if (flat_1x1 == 1)
    {
        const int size = p.outw * p.outh;
        if (gx >= size || gz >= p.outc)
            return;

        if (bias_term == 1)
            sum = buffer_ld1(bias_data, gz);

        const int w_offset = gz * p.c;
        for (int q = 0; q < p.c; q++)
            sum += buffer_ld1(bottom_blob_data, q * p.cstep + gx) * buffer_ld1(weight_data, w_offset + q);

        buffer_st1(top_blob_data, gz * p.outcstep + gx, activation(sum));
        return;
    }

    if (gx >= p.outw || gy >= p.outh || gz >= p.outc)
        return;

    if (bias_term == 1)
        sum = buffer_ld1(bias_data, gz);

    const int maxk = kernel_w * kernel_h;
    const int sx0 = gx * stride_w - p.pad_left;
    const int sy0 = gy * stride_h - p.pad_top;
    const afp pad_value = afp(p.pad_value);

    int w_offset = gz * p.c * maxk;
    int v_offset = 0;

    for (int q = 0; q < p.c; q++)
    {
        for (int ky = 0; ky < kernel_h; ky++)
        {
            const int sy = sy0 + ky * dilation_h;
            const bool row_inside = sy >= 0 && sy < p.h;

            for (int kx = 0; kx < kernel_w; kx++)
            {
                const int sx = sx0 + kx * dilation_w;

                afp v = pad_value;
                if (row_inside && sx >= 0 && sx < p.w)
                    v = buffer_ld1(bottom_blob_data, v_offset + sy * p.w + sx);

                sum += v * buffer_ld1(weight_data, w_offset + ky * kernel_w + kx);
            }
        }

        w_offset += maxk;
        v_offset += p.cstep;
    }

    buffer_st1(top_blob_data, gz * p.outcstep + gy * p.outw + gx, activation(sum));
}
