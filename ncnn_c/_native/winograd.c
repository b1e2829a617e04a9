/* Winograd F(6,3) / F(4,3) / F(2,3) for 3x3 stride-1 convolutions in the native CPU plan: one plan
   step per layer (ncnn_c/net/native/ops/winograd.py), ncnnc_wino_run, a plan.c kernel called
   with its context and its memories' data pointers (src, dst, scratch).

   The layer's tiles are cut into chunks and its output channels into groups; one work item
   is (chunk, group). In ONE OpenMP parallel region each thread takes items one by one
   (dynamic schedule: a thread the OS took the core from holds up nothing but its own item)
   and, in its own slot of the scratch, transforms the chunk's input into V[n*n][tiles][kp]
   (skipped when its previous item had the same chunk), multiplies V by the group's U (the
   weights transformed and prepacked once, when the plan is built) with a oneDNN batched
   matmul into M[n*n][tiles][group], and output-transforms M into dst (bias and activation
   fused). No barrier between the steps: the one at the region's end is the layer's only
   one, where the former three steps per chunk each had theirs. The matmul primitive is
   created single-threaded and runs inside the region on the calling thread (oneDNN's
   OpenMP runtime runs a call nested in a parallel region on one thread); each slot has its
   own stream, V / M memories and scratchpad (a library-managed one is the primitive's, and
   threads running it at once would share it). An output element is computed by one item, in the same
   order whatever the thread count: the result is the same on any number of threads.

   One vector is one pixel's ``lanes`` channels: a block of nChw16c / nChw8c, or a run of
   nhwc (the layout oneDNN's brgconv picks on AVX-512); the two layouts are the same code
   with other strides. The transforms are compiled per vector width and instruction set
   (winograd_kernels.h) and picked at run time: AVX-512 / AVX2 builds on x86-64 where the
   CPU has them, the compiler's baseline vectors everywhere. */
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stddef.h>
#include <stdlib.h>
#include "oneapi/dnnl/dnnl.h"

const char ncnnc_winograd_build_stamp[] = "NCNNC_STAMP:@STAMP@";

typedef struct {
    int m;             /* output tile: 6 (F(6,3)), 4 (F(4,3)) or 2 (F(2,3)) */
    int lanes;         /* channels per vector: the block of a blocked src / dst, 16 or 8 */
    int c, h, w;       /* input channels and plane */
    int kp;            /* c rounded up to lanes: the GEMM's K */
    int oc, oh, ow;    /* output channels and plane */
    int np;            /* a row of M: the output channels of one group (a multiple of lanes) */
    int sb, sp;        /* src: floats from one channel block to the next, from one pixel to the next */
    int db, dp;        /* the same in dst */
    int zero_pad;      /* dst is blocked: the lanes past oc in its last block are written 0 */
    int pad_t, pad_l;  /* zero rows above and columns left of the input */
    int tiles_w;       /* tiles in a row of the output */
    int tile0, tiles;  /* the tiles of a chunk (small enough for V and M to stay in cache): V
                          and M have ``tiles`` rows, row t is tile tile0 + t; tiles past the
                          output read zeros and write nothing */
    int act;           /* 0 none, 1 relu (a0: the slope of leaky relu), 2 clip to [a0, a1] */
    float a0, a1;
    const float *bias; /* oc rounded up to lanes floats, or NULL */
} ncnnc_wino;

typedef struct {
    ncnnc_wino w;           /* the geometry; tile0 is set per item */
    int chunks, groups;     /* items: chunks x groups, chunk-major */
    int slots;              /* per-thread parts of the scratch: the most threads a run uses */
    long vfloats, mfloats;  /* a slot holds V, M (from vfloats on), the matmul's scratchpad
                               (from vfloats + mfloats on) */
    long slot_floats;
    void *matmul;           /* dnnl_primitive_t: V x U -> M, single-threaded, user scratchpad */
    void *const *u;         /* per group: U's memory, packed for the matmul */
    void *const *streams;   /* per slot: dnnl_stream_t */
    void *const *v, *const *m, *const *sp; /* per slot: the dnnl_memory_t of V, M and the
                               scratchpad (sp NULL: none), bound per run */
} ncnnc_wino_layer;

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

#if !(defined(__x86_64__) && defined(__GNUC__))
#define wino_isa() 0
#define wino_input_l16_avx512 wino_input_l16
#define wino_input_l8_avx2 wino_input_l8
#define wino_output_l16_avx512 wino_output_l16
#define wino_output_l8_avx2 wino_output_l8
#endif

/* the builds for this block width and CPU */
typedef void (*in_fn)(const ncnnc_wino *p, const float *src, float *v);
typedef void (*out_fn)(const ncnnc_wino *p, const float *mm, float *dst, int b0);

static in_fn pick_input(int lanes)
{
    int isa = wino_isa();
    if (lanes == 16)
        return isa == 2 ? wino_input_l16_avx512 : wino_input_l16;
    return isa >= 1 ? wino_input_l8_avx2 : wino_input_l8;
}

static out_fn pick_output(int lanes)
{
    int isa = wino_isa();
    if (lanes == 16)
        return isa == 2 ? wino_output_l16_avx512 : wino_output_l16;
    return isa >= 1 ? wino_output_l8_avx2 : wino_output_l8;
}

/* the vector width the kernels run best with here: 16 on AVX-512, else 8 */
int ncnnc_wino_lanes(void)
{
    return wino_isa() == 2 ? 16 : 8;
}

/* the OpenMP thread count of the calling thread: the plan's, while it is built */
int ncnnc_wino_threads(void)
{
    return omp_get_max_threads();
}

/* the kernel thread ids of the calling thread's OpenMP team of n (libgomp keeps a caller's
   pool workers from one region of a size to the next): out[i] is team thread i's, out holds n;
   returns the team's size (what net/native/contention.py counts as the run's own threads) */
int ncnnc_wino_team_tids(int n, int *out)
{
    int size = 0;
#pragma omp parallel num_threads(n > 0 ? n : 1)
    {
        const int i = omp_get_thread_num();
        if (i < n)
            out[i] = (int)syscall(SYS_gettid);
#pragma omp single
        size = omp_get_num_threads();
    }
    return size;
}

/* sets the calling thread's OpenMP thread count, returns the one before: the matmul is
   created single-threaded (oneDNN sizes a primitive's work split when it is created) */
int ncnnc_wino_set_threads(int n)
{
    int before = omp_get_max_threads();
    omp_set_num_threads(n > 0 ? n : 1);
    return before;
}

/* the plan step of one layer: ptrs = {src, dst, scratch (slots x slot_floats)} */
int ncnnc_wino_run(const void *ctx, void *const *ptrs)
{
    const ncnnc_wino_layer *L = ctx;
    const in_fn input = pick_input(L->w.lanes);
    const out_fn output = pick_output(L->w.lanes);
    const float *src = ptrs[0];
    float *dst = ptrs[1], *scratch = ptrs[2];
    const int items = L->chunks * L->groups, gblocks = L->w.np / L->w.lanes;
    int threads = omp_get_max_threads();
    threads = threads < L->slots ? threads : L->slots;
    threads = threads < items ? threads : items;
    int status = dnnl_success;
#pragma omp parallel num_threads(threads)
    {
        const int s = omp_get_thread_num();
        float *v = scratch + s * L->slot_floats, *mm = v + L->vfloats;
        dnnl_memory_t vm = L->v[s], mm_mem = L->m[s], sp = L->sp ? L->sp[s] : NULL;
        dnnl_stream_t stream = L->streams[s];
        int st = dnnl_memory_set_data_handle(vm, v);
        if (st == dnnl_success)
            st = dnnl_memory_set_data_handle(mm_mem, mm);
        if (st == dnnl_success && sp)
            st = dnnl_memory_set_data_handle(sp, mm + L->mfloats);
        ncnnc_wino p = L->w;
        int have = -1; /* the chunk whose V this thread's slot holds */
#pragma omp for schedule(dynamic, 1) nowait
        for (int it = 0; it < items; it++) {
            if (st != dnnl_success)
                continue;
            const int c = it / L->groups, g = it % L->groups;
            p.tile0 = c * p.tiles;
            if (c != have) {
                input(&p, src, v);
                have = c;
            }
            dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, vm}, {DNNL_ARG_WEIGHTS, (dnnl_memory_t)L->u[g]},
                                       {DNNL_ARG_DST, mm_mem}, {DNNL_ARG_SCRATCHPAD, sp}};
            st = dnnl_primitive_execute((const_dnnl_primitive_t)L->matmul, stream, sp ? 4 : 3, args);
            if (st == dnnl_success)
                st = dnnl_stream_wait(stream);
            if (st == dnnl_success)
                output(&p, mm, dst, g * gblocks);
        }
        if (st != dnnl_success) {
#pragma omp atomic write
            status = st;
        }
    }
    /* the plan's run fails at this step (plan.c): the extract returns non-zero */
    return status == dnnl_success ? 0 : -1;
}
