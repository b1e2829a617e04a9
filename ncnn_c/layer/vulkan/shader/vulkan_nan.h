// ncnn_c's rules for NaN in a max and in Softmax's exp (docs/design.md, "NaN and inf"), one
// copy for the pooling and softmax shaders. GLSL leaves max() and min() of a NaN undefined
// (lavapipe returns the first operand), so the selects below spell the rules out.
// Included with #include "vulkan_nan.h" (see ncnn_c/gpu/compiler.py); not a shader.

// max pooling: a NaN of either operand gives NaN (ncnn_c/layer/pooling.py)
float nan_max(float a, float b)
{
    return !isnan(a) && (b > a || isnan(b)) ? b : a;
}

vec4 nan_max(vec4 a, vec4 b)
{
    return vec4(nan_max(a.x, b.x), nan_max(a.y, b.y), nan_max(a.z, b.z), nan_max(a.w, b.w));
}

// Softmax's running max: from -FLT_MAX, a NaN skipped (ncnn_c/layer/softmax.py)
float skip_nan_max(float m, float v)
{
    return v > m ? v : m;
}

vec4 skip_nan_max(vec4 m, vec4 v)
{
    return mix(m, v, greaterThan(v, m));
}

// Softmax's exp(x - max): ncnn's exp_ps clamps its argument with min_ps(a, 88.376..), which
// gives the bound for a NaN (an inf - inf among them): such a value weighs exp(88.376)
float softmax_exp(float a)
{
    return exp(a < 88.3762626647949f ? a : 88.3762626647949f);
}

vec4 softmax_exp(vec4 a)
{
    return exp(mix(vec4(88.3762626647949f), a, lessThan(a, vec4(88.3762626647949f))));
}
