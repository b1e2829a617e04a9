// The fused activation of Convolution-like layers (params 9 and 10, ncnn's fused_activation.h)
// on 4 values: one copy for every shader that applies it, as ncnn's vulkan_activation.comp.
// Included with #include "vulkan_activation.h" (see ncnn_c/gpu/compiler.py); not a shader.
//
// activation_type 0 none, 1 ReLU, 2 leaky ReLU (param 0 the slope), 3 clip (params 0, 1 the
// bounds), 4 sigmoid, 5 mish, 6 hard swish (params 0, 1 alpha and beta). The including
// shader declares the specialization constants activation_type, activation_param_0 and
// activation_param_1, and may define before the #include:
//   activation_afp, activation_afpvec4  the arithmetic types (afp and afpvec4 unless defined:
//       the InnerProduct shaders, which accumulate in fp32, activate in float and vec4)
//   ACTIVATION_PUSH_CONSTANTS  activation_type 7 then takes ncnn's piecewise linear ones (none,
//       ReLU, leaky ReLU, clip) from the push constants p.act_slope, p.act_lo, p.act_hi, so
//       that layers differing only in them share a pipeline (Convolution's shaders)

#ifndef activation_afp
#define activation_afp afp
#define activation_afpvec4 afpvec4
#endif

activation_afpvec4 activation(activation_afpvec4 v)
{
#ifdef ACTIVATION_PUSH_CONSTANTS
    if (activation_type == 7)
    {
        // negatives scaled by the slope, then clamped to [lo, hi] by selects (a NaN stays NaN)
        v = mix(v, v * activation_afp(p.act_slope), lessThan(v, activation_afpvec4(0.f)));
        v = mix(v, activation_afpvec4(p.act_lo), lessThan(v, activation_afpvec4(p.act_lo)));
        v = mix(v, activation_afpvec4(p.act_hi), greaterThan(v, activation_afpvec4(p.act_hi)));
        return v;
    }
#endif
    if (activation_type == 1)
    {
        // a select, not max(): a NaN stays NaN, as in ncnn's ReLU (GLSL leaves max() of a NaN undefined)
        v = mix(v, activation_afpvec4(0.f), lessThan(v, activation_afpvec4(0.f)));
    }
    else if (activation_type == 2)
    {
        v = mix(v, v * activation_afp(activation_param_0), lessThan(v, activation_afpvec4(0.f)));
    }
    else if (activation_type == 3)
    {
        v = clamp(v, activation_afp(activation_param_0), activation_afp(activation_param_1));
    }
    else if (activation_type == 4)
    {
        // the clamp keeps exp() finite, as ncnn's CPU path does
        v = clamp(v, activation_afp(-88.3762626647949f), activation_afp(88.3762626647949f));
        v = activation_afp(1.f) / (activation_afp(1.f) + exp(-v));
    }
    else if (activation_type == 5)
    {
        // softplus saturates to v and tanh to 1 long before exp() overflows; clamping
        // keeps drivers that expand tanh through exp() away from inf/inf
        activation_afpvec4 sp = mix(log(activation_afp(1.f) + exp(v)), v, greaterThan(v, activation_afpvec4(15.f)));
        v = v * tanh(min(sp, activation_afp(15.f)));
    }
    else if (activation_type == 6)
    {
        v = v * clamp(v * activation_afp(activation_param_0) + activation_afp(activation_param_1), activation_afp(0.f), activation_afp(1.f));
    }
    return v;
}
