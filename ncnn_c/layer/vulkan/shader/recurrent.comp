#version 450

// LSTM (gru = 0) and GRU (gru = 1) over a whole sequence in one dispatch: one work group per
// direction (gl_WorkGroupID.x), its invocations sharing each step's rows and meeting at
// barriers, the state kept in fp32 in a scratch buffer. Per step:
//   1. each gate row j: xg = W_xc[j] . x_t + bias[j] and hg = W_hc[j] . h (fp32 sums)
//   2. each unit: LSTM c = f * c + i * g, h = o * tanh(c) (into hh first when projected);
//      GRU r, u from xg + hg, n = tanh(xg_n + r * (hg_n + b_bn)), h = (1 - u) * n + u * h
//   3. LSTM with a projection: h = W_hr hh
// writing row t of the output as it goes, and the final states at the end. Gates are ncnn's
// order (LSTM I, F, O, G; GRU R, U, N); bias rows 4 per direction (GRU: b_r, b_u, b_wn, b_bn).
// Blobs are elempack 1 and read as scalars; the math runs in fp32 whatever afp is.

layout (constant_id = 0) const int gru = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) readonly buffer h0_blob { sfp h0_data[]; };
layout (binding = 2) readonly buffer c0_blob { sfp c0_data[]; };
layout (binding = 3) writeonly buffer out_blob { sfp out_data[]; };
layout (binding = 4) writeonly buffer hout_blob { sfp hout_data[]; };
layout (binding = 5) writeonly buffer cout_blob { sfp cout_data[]; };
layout (binding = 6) readonly buffer weight_xc { float wxc[]; };
layout (binding = 7) readonly buffer bias_c { float bias[]; };
layout (binding = 8) readonly buffer weight_hc { float whc[]; };
layout (binding = 9) readonly buffer weight_hr { float whr[]; };
layout (binding = 10) coherent buffer scratch_blob { float scratch[]; };

layout (push_constant) uniform parameter
{
    int T;
    int size;         // input values per step
    int units;        // hidden units (LSTM hidden_size, GRU num_output)
    int num_output;   // values of h per direction
    int direction;    // 0 forward, 1 reverse, 2 both (work group 1 reverse)
    int state_in;     // 1: initial states from bindings 1 (and 2)
    int state_out;    // 1: final states into bindings 4 (and 5)
    int proj;         // 1: LSTM h = W_hr hh (units != num_output)
} p;

float sigmoid(float v)
{
    return 1.f / (1.f + exp(-v));
}

// tanh saturates to +-1 in fp32 long before 10; clamping keeps exp-based lowerings finite
float tanh_(float v)
{
    return tanh(clamp(v, -10.f, 10.f));
}

void sync()
{
    memoryBarrierBuffer();
    barrier();
}

void main()
{
    const int d = int(gl_WorkGroupID.x);
    const int lid = int(gl_LocalInvocationID.x);
    const int lsize = int(gl_WorkGroupSize.x);
    const bool reverse = d == 1 || p.direction == 1;

    const int units = p.units;
    const int n = p.num_output;
    const int rows = (gru == 1 ? 3 : 4) * units;
    const int outw = p.direction == 2 ? 2 * n : n;

    // this direction's scratch: h (n), c (units), xg (rows), hg (rows), hh (units)
    const int sh = d * (n + 3 * units + 2 * rows);
    const int sc = sh + n;
    const int sxg = sc + units;
    const int shg = sxg + rows;
    const int shh = shg + rows;

    const int wxc0 = d * rows * p.size;
    const int whc0 = d * rows * n;
    const int whr0 = d * n * units;
    const int b0 = d * 4 * units;

    for (int k = lid; k < n; k += lsize)
        scratch[sh + k] = p.state_in == 1 ? float(buffer_ld1(h0_data, d * n + k)) : 0.f;
    for (int k = lid; k < units; k += lsize)
        scratch[sc + k] = p.state_in == 1 && gru == 0 ? float(buffer_ld1(c0_data, d * units + k)) : 0.f;
    sync();

    for (int step = 0; step < p.T; step++)
    {
        const int t = reverse ? p.T - 1 - step : step;
        const int x0 = t * p.size;

        for (int j = lid; j < rows; j += lsize)
        {
            float sx = 0.f;
            for (int k = 0; k < p.size; k++)
                sx += wxc[wxc0 + j * p.size + k] * float(buffer_ld1(x_data, x0 + k));
            float shv = 0.f;
            for (int k = 0; k < n; k++)
                shv += whc[whc0 + j * n + k] * scratch[sh + k];
            scratch[sxg + j] = sx + bias[b0 + j];
            scratch[shg + j] = shv;
        }
        sync();

        for (int u = lid; u < units; u += lsize)
        {
            float h;
            if (gru == 1)
            {
                const float r = sigmoid(scratch[sxg + u] + scratch[shg + u]);
                const float z = sigmoid(scratch[sxg + units + u] + scratch[shg + units + u]);
                const float nn = tanh_(scratch[sxg + 2 * units + u] + r * (scratch[shg + 2 * units + u] + bias[b0 + 3 * units + u]));
                h = (1.f - z) * nn + z * scratch[sh + u];
            }
            else
            {
                const float i = sigmoid(scratch[sxg + u] + scratch[shg + u]);
                const float f = sigmoid(scratch[sxg + units + u] + scratch[shg + units + u]);
                const float o = sigmoid(scratch[sxg + 2 * units + u] + scratch[shg + 2 * units + u]);
                const float g = tanh_(scratch[sxg + 3 * units + u] + scratch[shg + 3 * units + u]);
                const float c = f * scratch[sc + u] + i * g;
                scratch[sc + u] = c;
                h = o * tanh_(c);
            }
            if (p.proj == 1)
            {
                scratch[shh + u] = h;
            }
            else
            {
                scratch[sh + u] = h;
                buffer_st1(out_data, t * outw + d * n + u, h);
            }
        }
        sync();

        if (p.proj == 1)
        {
            for (int k = lid; k < n; k += lsize)
            {
                float h = 0.f;
                for (int u = 0; u < units; u++)
                    h += whr[whr0 + k * units + u] * scratch[shh + u];
                scratch[sh + k] = h;
                buffer_st1(out_data, t * outw + d * n + k, h);
            }
            sync();
        }
    }

    if (p.state_out == 1)
    {
        for (int k = lid; k < n; k += lsize)
            buffer_st1(hout_data, d * n + k, scratch[sh + k]);
        if (gru == 0)
        {
            for (int k = lid; k < units; k += lsize)
                buffer_st1(cout_data, d * units + k, scratch[sc + k]);
        }
    }
}
