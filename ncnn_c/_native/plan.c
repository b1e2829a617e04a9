/* ncnn_c's native CPU plan: run a list of oneDNN primitives, recorded once per input shape,
   in one call from Python (cffi releases the GIL around it).

   The steps and their arguments are built and owned by ncnn_c/net/native/; this file only
   binds the memories whose buffers change between runs (the caller's input Mats and the
   output Mats it allocates) and executes. A step is a oneDNN primitive or a kernel of
   ncnn_c's own C (a function of another extension: winograd.c, int8.c) over its memories'
   buffers. Threads: oneDNN's OpenMP runtime, told each step's thread count (chosen when the
   plan was built, capped by the extractor's num_threads) for this calling thread only; the
   own kernels' OpenMP loops run on the same pool (libgomp) and read the same count. */
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "oneapi/dnnl/dnnl.h"

void omp_set_num_threads(int n);
int omp_get_max_threads(void);

const char ncnnc_plan_build_stamp[] = "NCNNC_STAMP:@STAMP@";

/* a step of ncnn_c's own C instead of a primitive (prim NULL): called with its context and
   the data pointers of its argument memories, in order; it runs OpenMP loops itself and
   returns 0, or non-zero when it failed (the run then stops there) */
typedef int (*ncnnc_kernel)(const void *ctx, void *const *ptrs);
#define NCNNC_KERNEL_MAX_ARGS 8

typedef struct {
    dnnl_primitive_t prim;
    int nargs;
    const dnnl_exec_arg_t *args;
    ncnnc_kernel kernel;
    const void *ctx;
    /* OpenMP threads for this step, 0: the run's count. oneDNN sized the primitive's work
       split by the count it saw when it was created, which the plan made this one */
    int threads;
} ncnnc_step;

static int run_kernel(const ncnnc_step *s)
{
    void *ptrs[NCNNC_KERNEL_MAX_ARGS];
    if (s->nargs > NCNNC_KERNEL_MAX_ARGS)
        return -1;
    for (int j = 0; j < s->nargs; j++)
        if (dnnl_memory_get_data_handle(s->args[j].memory, &ptrs[j]) != dnnl_success)
            return -1;
    return s->kernel(s->ctx, ptrs) == 0 ? 0 : -1;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int run(dnnl_stream_t stream, const ncnnc_step *steps, int n, int num_threads,
               dnnl_memory_t const *bind_mems, void *const *bind_ptrs, int nbind, double *seconds)
{
    for (int i = 0; i < nbind; i++)
        if (dnnl_memory_set_data_handle(bind_mems[i], bind_ptrs[i]) != dnnl_success)
            return -(1 + i);
    /* the calling thread's OpenMP thread count is put back afterwards: oneDNN sizes the work
       split of a primitive created later by it, so a run must not leave it changed */
    int before = omp_get_max_threads();
    int most = num_threads > 0 ? num_threads : 1;
    int now_threads = most;
    omp_set_num_threads(most);
    int ret = 0;
    for (int i = 0; i < n && ret == 0; i++) {
        /* only a change of count is told to OpenMP: a run of steps with one count pays
           nothing extra. A one-thread step opens no parallel region at all (oneDNN and the
           own kernels run it inline), so the pool's workers stay as they are */
        int want = steps[i].threads > 0 && steps[i].threads < most ? steps[i].threads : most;
        if (want != now_threads) {
            omp_set_num_threads(want);
            now_threads = want;
        }
        double t0 = seconds ? now() : 0.0;
        int bad = steps[i].prim
            ? dnnl_primitive_execute(steps[i].prim, stream, steps[i].nargs, steps[i].args) != dnnl_success
            : run_kernel(&steps[i]) != 0;
        if (bad)
            ret = -(1000 + i);
        if (seconds) {
            if (ret == 0 && dnnl_stream_wait(stream) != dnnl_success)
                ret = -999;
            seconds[i] = now() - t0;
        }
    }
    if (ret == 0 && dnnl_stream_wait(stream) != dnnl_success)
        ret = -999;
    omp_set_num_threads(before);
    return ret;
}

/* 0, or -(1 + i) when binding i failed, or -(1000 + i) when step i failed */
int ncnnc_plan_run(dnnl_stream_t stream, const ncnnc_step *steps, int n, int num_threads,
                   dnnl_memory_t const *bind_mems, void *const *bind_ptrs, int nbind)
{
    return run(stream, steps, n, num_threads, bind_mems, bind_ptrs, nbind, NULL);
}

/* the same run, with each step's wall time in seconds[i] (a stream wait after each step):
   what the step thread rule was fitted with (tools: ncnn_c.net.native.threads) */
int ncnnc_plan_run_timed(dnnl_stream_t stream, const ncnnc_step *steps, int n, int num_threads,
                         dnnl_memory_t const *bind_mems, void *const *bind_ptrs, int nbind,
                         double *seconds)
{
    return run(stream, steps, n, num_threads, bind_mems, bind_ptrs, nbind, seconds);
}
