#version 450

// In-place element-wise activation over a blob seen as (size, c) elements, cstep padding
// skipped. With pack4 = 0 an element is a scalar (elempack 1 blobs; a packed one would work
// too, its lanes being consecutive scalars); with pack4 = 1 it is a packed element, loaded and
// stored as one vec4 through a second view of the same binding: a quarter of the loads and
// stores, which a CPU device (lavapipe) performs lane by lane.
//
// One shader for every activation layer and UnaryOp: `op` picks the function and a..d are
// its float parameters, all specialization constants, so the driver folds the chain below
// down to the one branch taken. The math runs in fp32 whatever afp is: transcendental
// functions lose whole fp16 ulps in fp16, exp overflows it past 11, and on a CPU device
// (lavapipe) fp16 arithmetic is emulated and slower than fp32 anyway.

layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const float a = 0;
layout (constant_id = 2) const float b = 0;
layout (constant_id = 3) const float c = 0;
layout (constant_id = 4) const float d = 0;
layout (constant_id = 5) const int pack4 = 0;

// UnaryOp op_type 0..27 keep ncnn's numbers; the activation layers follow from 100
#define OP_BNLL 100
#define OP_CLIP 101         // a min, b max
#define OP_ELU 102          // a alpha
#define OP_EXP 103          // b scale, c shift (natural base)
#define OP_EXP_BASE 104     // a log2(base), b scale, c shift
#define OP_LOG 105          // b scale, c shift (natural base)
#define OP_LOG_BASE 106     // a 1/log(base), b scale, c shift
#define OP_GELU 107
#define OP_GELU_FAST 108
#define OP_HARDSIGMOID 109  // a alpha, b beta
#define OP_HARDSWISH 110    // a alpha, b beta
#define OP_MISH 111
#define OP_POWER 112        // a power, b scale, c shift, d: 0 real power, 1 even integer, 2 odd integer, 3 identity
#define OP_SELU 113         // a lambda, b alpha * lambda
#define OP_SIGMOID 114
#define OP_SWISH 115
#define OP_TANH 116
#define OP_THRESHOLD 117    // a threshold
#define OP_LEAKY 118        // a slope (PReLU with one slope)
#define OP_CELU 119         // a alpha
#define OP_ERF 120
#define OP_SHRINK 121       // a bias, b lambd
#define OP_SOFTPLUS 122

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };
#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage a packed blob stays fp32
layout (binding = 0) buffer bottom_top_blob4 { vec4 bottom_top_blob4_data[]; };
#define blob_ld4(i) bottom_top_blob4_data[i]
#define blob_st4(i, v) bottom_top_blob4_data[i] = vec4(afpvec4(v))
#else
layout (binding = 0) buffer bottom_top_blob4 { sfpvec4 bottom_top_blob4_data[]; };
#define blob_ld4(i) vec4(buffer_ld4(bottom_top_blob4_data, i))
#define blob_st4(i, v) buffer_st4(bottom_top_blob4_data, i, afpvec4(v))
#endif

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

// tanh saturates to +-1 in fp32 long before 10; clamping keeps exp-based lowerings finite
float safe_tanh(float x)
{
    return tanh(clamp(x, -10.f, 10.f));
}

// erfc by the Chebyshev fit of Numerical Recipes (fractional error < 1.2e-7 everywhere)
float erfc_cheb(float v)
{
    const float z = abs(v);
    const float t = 1.f / (1.f + 0.5f * z);
    float r = 0.17087277f;
    r = r * t - 0.82215223f;
    r = r * t + 1.48851587f;
    r = r * t - 1.13520398f;
    r = r * t + 0.27886807f;
    r = r * t - 0.18628806f;
    r = r * t + 0.09678418f;
    r = r * t + 0.37409196f;
    r = r * t + 1.00002368f;
    r = r * t - 1.26551223f;
    const float e = t * exp(r - z * z);
    return v >= 0.f ? e : 2.f - e;
}

// exp(x) - 1 and log(1 + x) without losing small x: Kahan's correction by the rounded argument
float expm1_(float x)
{
    const float u = exp(x);
    if (u == 1.f)
        return x;
    const float um1 = u - 1.f;
    if (um1 == -1.f)
        return -1.f;
    return isinf(u) ? u : um1 * x / log(u);
}

float log1p_(float x)
{
    const float u = 1.f + x;
    return u == 1.f ? x : log(u) * x / (u - 1.f);
}

// erf: its Maclaurin series (to x^15, below 1e-9 relative) near 0, where 1 - erfc would lose
// every digit, and 1 - erfc beyond (erfc_cheb's error times erfc(0.5) < 0.5 is 6e-8)
float erf_(float x)
{
    if (abs(x) < 0.5f)
    {
        const float t = x * x;
        float s = -1.f / 75600.f;
        s = s * t + 1.f / 9360.f;
        s = s * t - 1.f / 1320.f;
        s = s * t + 1.f / 216.f;
        s = s * t - 1.f / 42.f;
        s = s * t + 1.f / 10.f;
        s = s * t - 1.f / 3.f;
        s = s * t + 1.f;
        return 1.12837916709551257f * x * s;
    }
    return 1.f - erfc_cheb(x);
}

float activate(float x)
{
    if (op == 0) return abs(x);
    if (op == 1) return -x;
    if (op == 2) return floor(x);
    if (op == 3) return ceil(x);
    if (op == 4) return x * x;
    if (op == 5) return sqrt(x);
    if (op == 6) return 1.f / sqrt(x);
    if (op == 7) return exp(x);
    if (op == 8) return log(x);
    if (op == 9) return sin(x);
    if (op == 10) return cos(x);
    if (op == 11) return tan(x);
    // through atan: the drivers' asin/acos approximations are off by ~1e-4 (lavapipe)
    if (op == 12) return atan(x, sqrt((1.f - x) * (1.f + x)));
    if (op == 13) return atan(sqrt((1.f - x) * (1.f + x)), x);
    if (op == 14) return atan(x);
    if (op == 15) return 1.f / x;
    if (op == 16) return safe_tanh(x);
    if (op == 17) return log(x) * 0.434294481903251828f;
    if (op == 18) return roundEven(x);
    if (op == 19) return trunc(x);
    if (op == 20) return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f);
    if (op == 21) return expm1_(x);
    if (op == 22) return sinh(x);
    if (op == 23) return sign(x) * log(abs(x) + sqrt(x * x + 1.f));
    if (op == 24) return cosh(x);
    if (op == 25) return log(x + sqrt(x * x - 1.f));
    if (op == 26) return 0.5f * (log1p_(x) - log1p_(-x));
    if (op == 27) return log1p_(x);

    if (op == OP_BNLL) return max(x, 0.f) + log(1.f + exp(-abs(x)));
    if (op == OP_CLIP) return min(max(x, a), b);
    if (op == OP_ELU) return x < 0.f ? a * (exp(x) - 1.f) : x;
    if (op == OP_EXP) return exp(c + x * b);
    if (op == OP_EXP_BASE) return exp2((c + x * b) * a);
    if (op == OP_LOG) return log(c + x * b);
    if (op == OP_LOG_BASE) return log(c + x * b) * a;
    if (op == OP_GELU) return 0.5f * x * erfc_cheb(x * -0.70710678f);
    if (op == OP_GELU_FAST) return 0.5f * x * (1.f + safe_tanh(0.79788452f * (x + 0.044715f * x * x * x)));
    if (op == OP_HARDSIGMOID) return clamp(x * a + b, 0.f, 1.f);
    if (op == OP_HARDSWISH) return x * clamp(x * a + b, 0.f, 1.f);
    if (op == OP_MISH) return x * safe_tanh(log(1.f + exp(x)));
    if (op == OP_POWER)
    {
        const float v = c + x * b;
        if (d == 3.f) return v;
        const float m = pow(abs(v), a);
        if (d == 0.f) return pow(v, a);
        return (d == 2.f && v < 0.f) ? -m : m;
    }
    if (op == OP_SELU) return x < 0.f ? b * (exp(x) - 1.f) : x * a;
    if (op == OP_SIGMOID) return 1.f / (1.f + exp(-clamp(x, -88.3762626647949f, 88.3762626647949f)));
    if (op == OP_SWISH) return x / (1.f + exp(-x));
    if (op == OP_TANH) return safe_tanh(x);
    if (op == OP_THRESHOLD) return x > a ? 1.f : 0.f;
    if (op == OP_LEAKY) return x < 0.f ? x * a : x;
    if (op == OP_CELU) return x < 0.f ? (exp(x / a) - 1.f) * a : x;
    if (op == OP_ERF) return erf_(x);
    // as ncnn: below -lambd first (a negative lambd makes both hold in between)
    if (op == OP_SHRINK) return x < -b ? x + a : (x > b ? x - a : 0.f);
    if (op == OP_SOFTPLUS) return log(exp(x) + 1.f);
    return x;
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    // activate() is called from one place, a loop over the lanes: a driver that translates
    // the shader before it folds the specialization constants (Mesa's NIR, lavapipe's
    // vkCreateComputePipelines) then handles the whole chain of ops once, not once per lane
    vec4 v = pack4 == 1 ? blob_ld4(i) : vec4(float(buffer_ld1(bottom_top_blob_data, i)));
    const int lanes = pack4 == 1 ? 4 : 1;
    for (int k = 0; k < lanes; k++)
        v[k] = activate(v[k]);
    if (pack4 == 1)
    {
        blob_st4(i, v);
        return;
    }
    // back through afp: with fp16 arithmetic the result is an fp16 value even in fp32 blobs
    buffer_st1(bottom_top_blob_data, i, afp(v.x));
}
