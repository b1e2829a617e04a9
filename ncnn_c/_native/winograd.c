/* Winograd F(6,3) / F(4,3) for 3x3 stride-1 convolutions in the native CPU plan: the input
   and output transforms. The plan runs such a convolution as three steps
   (ncnn_c/net/native/ops/winograd.py): ncnnc_wino_input (src -> the n*n GEMM inputs
   V[n*n][tiles][kp]), oneDNN's batched matmul (V x U, the weights transformed once when the
   plan is built) and ncnnc_wino_output (M[n*n][tiles][np] -> dst, bias and activation
   fused). Both are plan.c kernels, called with their context and their memories' data
   pointers (src, dst); their loops over tiles x channel blocks are OpenMP's (libgomp,
   oneDNN's runtime), on the thread count the plan's run set.

   One vector is one pixel's ``lanes`` channels: a block of nChw16c / nChw8c, or a run of
   nhwc (the layout oneDNN's brgconv picks on AVX-512); the two layouts are the same code
   with other strides. The kernels are compiled per vector width and instruction set
   (winograd_kernels.h) and picked at run time: AVX-512 / AVX2 builds on x86-64 where the
   CPU has them, the compiler's baseline vectors everywhere. */
#include <stddef.h>
#include <stdlib.h>

const char ncnnc_winograd_build_stamp[] = "NCNNC_STAMP:@STAMP@";

typedef struct {
    int m;             /* output tile: 6 (F(6,3)) or 4 (F(4,3)) */
    int lanes;         /* channels per vector: the block of a blocked src / dst, 16 or 8 */
    int c, h, w;       /* input channels and plane */
    int kp;            /* c rounded up to lanes: the GEMM's K */
    int oc, oh, ow;    /* output channels and plane */
    int np;            /* oc rounded up to lanes: the GEMM's N */
    int sb, sp;        /* src: floats from one channel block to the next, from one pixel to the next */
    int db, dp;        /* the same in dst */
    int zero_pad;      /* dst is blocked: the lanes past oc in its last block are written 0 */
    int pad_t, pad_l;  /* zero rows above and columns left of the input */
    int tiles_w;       /* tiles in a row of the output */
    int tile0, tiles;  /* the tiles of this step (a chunk small enough for V and M to stay in
                          cache): V and M have ``tiles`` rows, row t is tile tile0 + t; tiles
                          past the output read zeros and write nothing */
    int act;           /* 0 none, 1 relu (a0: the slope of leaky relu), 2 clip to [a0, a1] */
    float a0, a1;
    const float *bias; /* np floats or NULL */
} ncnnc_wino;

#define LANES 16
#define KSUF l16
#define KATTR
#include "winograd_kernels.h"
#undef LANES
#undef KSUF
#undef KATTR

#define LANES 8
#define KSUF l8
#define KATTR
#include "winograd_kernels.h"
#undef LANES
#undef KSUF
#undef KATTR

#if defined(__x86_64__) && defined(__GNUC__)
#define LANES 16
#define KSUF l16_avx512
#define KATTR __attribute__((target("avx512f,fma")))
#include "winograd_kernels.h"
#undef LANES
#undef KSUF
#undef KATTR

#define LANES 8
#define KSUF l8_avx2
#define KATTR __attribute__((target("avx2,fma")))
#include "winograd_kernels.h"
#undef LANES
#undef KSUF
#undef KATTR

/* 2: AVX-512F, 1: AVX2 + FMA, 0: neither (or NCNN_C_WINOGRAD_BASELINE=1 in the environment:
   the baseline builds then run, as on other CPUs; tests use it) */
static int wino_isa(void)
{
    static int isa = -1;
    if (isa < 0) {
        const char *base = getenv("NCNN_C_WINOGRAD_BASELINE");
        __builtin_cpu_init();
        isa = base && base[0] == '1' ? 0
            : __builtin_cpu_supports("avx512f") ? 2
            : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return isa;
}
#endif

typedef void (*wino_fn)(const ncnnc_wino *p, const float *src, float *dst);

/* the build for this block width and CPU */
static wino_fn pick(const ncnnc_wino *p, wino_fn l16, wino_fn l8, wino_fn l16_simd, wino_fn l8_simd)
{
#if defined(__x86_64__) && defined(__GNUC__)
    int isa = wino_isa();
    if (p->lanes == 16 && isa == 2)
        return l16_simd;
    if (p->lanes == 8 && isa >= 1)
        return l8_simd;
#else
    (void)l16_simd, (void)l8_simd;
#endif
    return p->lanes == 16 ? l16 : l8;
}

#if !(defined(__x86_64__) && defined(__GNUC__))
#define wino_input_l16_avx512 wino_input_l16
#define wino_input_l8_avx2 wino_input_l8
#define wino_output_l16_avx512 wino_output_l16
#define wino_output_l8_avx2 wino_output_l8
#endif

/* the vector width the kernels run best with here: 16 on AVX-512, else 8 */
int ncnnc_wino_lanes(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return wino_isa() == 2 ? 16 : 8;
#else
    return 8;
#endif
}

int omp_get_max_threads(void);

/* the OpenMP thread count of the calling thread: the plan's, while it is built */
int ncnnc_wino_threads(void)
{
    return omp_get_max_threads();
}

/* plan.c kernels: ptrs = {src, dst} */
void ncnnc_wino_input(const void *ctx, void *const *ptrs)
{
    const ncnnc_wino *p = ctx;
    pick(p, wino_input_l16, wino_input_l8, wino_input_l16_avx512, wino_input_l8_avx2)(p, ptrs[0], ptrs[1]);
}

void ncnnc_wino_output(const void *ctx, void *const *ptrs)
{
    const ncnnc_wino *p = ctx;
    pick(p, wino_output_l16, wino_output_l8, wino_output_l16_avx512, wino_output_l8_avx2)(p, ptrs[0], ptrs[1]);
}
