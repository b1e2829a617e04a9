/* What a perfectly parallel workload keeps of its speed beside CPU-bound processes, under two
   ways of running its threads (issue 15's contention bar; driven by benchmarks/fair_share.py,
   which compiles this file with the system's C compiler).

   The workload is a synthetic network: STEPS steps, each with a serial amount of arithmetic
   drawn log-uniform between 20 us and 2 ms (times --scale), cut into items of equal work.
   An item computes in registers (16-float vectors, independent FMA chains: the shape of a
   convolution's inner loop, no memory traffic), then writes ITEM_FLOATS results for its
   index into the step's output. Two runtimes:

   join  OpenMP's static for over the items, one region per step: every step ends in a join
         that waits for every thread of the team, as oneDNN's primitives and ncnn's layers do.
   redo  a pool of our own: items handed out one at a time, a step done when its items are,
         whichever threads did them (a thread off its core holds up nothing it has not
         claimed), and a thread that finds no item left recomputes one claimed longer than
         REDO_AFTER times an item's expected time, in its own scratch. Whoever finishes an
         item first wins a compare-and-swap and copies its scratch to the output; the other
         result is dropped. No thread ever waits for a preempted one, except while it commits
         a copy.

   Usage: fair_share calibrate          prints the FMA rounds one quiet core does per us
          fair_share MODE THREADS BUSY RUNS SCALE ROUNDS_PER_US
     MODE join|redo; ROUNDS_PER_US from calibrate (both runtimes then do the same work); BUSY: CPU-bound processes (a spinning loop each) forked for the second
     half; prints one line: mode, threads, serial ms, quiet and busy median ms, the ratio, and
     a checksum of the last run's output (the same for both modes: redo keeps the results). */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#define STEPS 60
#define MAX_ITEMS 256
#define ITEM_FLOATS 4096
#define REDO_AFTER 2.0
#define SPIN_ROUNDS 20000

typedef float v16 __attribute__((vector_size(64)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_cpu(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* an item's work: rounds of 8 independent vector FMA chains, then its results in scr */
static void compute(int item, long rounds, float *scr)
{
    v16 acc[8], b, c;
    for (int l = 0; l < 16; l++) {
        b[l] = 0.999f;
        c[l] = 1e-3f * (float)(item + 1);
    }
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 16; l++)
            acc[k][l] = (float)(k + l + item);
    for (long i = 0; i < rounds; i++)
        for (int k = 0; k < 8; k++)
            acc[k] = acc[k] * b + c;
    v16 s = acc[0];
    for (int k = 1; k < 8; k++)
        s += acc[k];
    for (int i = 0; i < ITEM_FLOATS; i++)
        scr[i] = s[i & 15] + (float)i;
}

static int nitems[STEPS];
static long item_rounds[STEPS];
static double item_us[STEPS];
static float *out;

/* ---- join: OpenMP, one region per step ---- */
static void run_join(void)
{
    for (int s = 0; s < STEPS; s++) {
#pragma omp parallel
        {
            float *scr = malloc(ITEM_FLOATS * sizeof(float));
#pragma omp for schedule(static)
            for (int i = 0; i < nitems[s]; i++) {
                compute(i, item_rounds[s], scr);
                memcpy(out + (size_t)i * ITEM_FLOATS, scr, ITEM_FLOATS * sizeof(float));
            }
            free(scr);
        }
    }
}

/* ---- redo: a pool of our own ---- */
enum { FREE, CLAIMED, COMMITTING, DONE };
typedef struct {
    int n;
    long rounds;
    double expect_us;
    _Atomic uint64_t next;              /* generation << 32 | the next free item */
    _Atomic uint64_t state[MAX_ITEMS];  /* generation << 2 | FREE .. DONE */
    _Atomic double claimed_at[MAX_ITEMS];
    _Atomic int done;
} job_t;

static job_t jobs[STEPS];
static _Atomic uint32_t published;  /* the generation of the current job */
static job_t *_Atomic current;
static _Atomic int quitting, sleepers;
static int threads;

static void finish(job_t *j, uint64_t gen, int i, const float *scr)
{
    uint64_t want = gen << 2 | CLAIMED;
    if (atomic_compare_exchange_strong(&j->state[i], &want, gen << 2 | COMMITTING)) {
        memcpy(out + (size_t)i * ITEM_FLOATS, scr, ITEM_FLOATS * sizeof(float));
        atomic_store(&j->state[i], gen << 2 | DONE);
        atomic_fetch_add(&j->done, 1);
    }
}

/* take items of job j (generation gen) until none is left, then redo a stalled one; returns
   when there is nothing to do, or the job is no longer the current one */
static void work_on(job_t *j, uint64_t gen, float *scr)
{
    for (;;) {
        uint64_t v = atomic_load(&j->next);
        if ((v >> 32) != gen)
            return;
        int i = (int)(v & 0xffffffffu);
        if (i < j->n) {
            if (atomic_compare_exchange_weak(&j->next, &v, v + 1)) {
                atomic_store(&j->claimed_at[i], now());
                atomic_store(&j->state[i], gen << 2 | CLAIMED);
                compute(i, j->rounds, scr);
                finish(j, gen, i, scr);
            }
            continue;
        }
        double t = now();
        int stalled = -1;
        for (int k = 0; k < j->n && stalled < 0; k++)
            if (atomic_load(&j->state[k]) == (gen << 2 | CLAIMED) &&
                (t - atomic_load(&j->claimed_at[k])) * 1e6 > REDO_AFTER * j->expect_us + 10.0)
                stalled = k;
        if (stalled < 0)
            return;
        atomic_store(&j->claimed_at[stalled], t);  /* the next helper waits again */
        compute(stalled, j->rounds, scr);
        finish(j, gen, stalled, scr);
    }
}

static void wait_for_job(uint32_t seen)
{
    int spins = 0;
    while (atomic_load(&published) == seen && !atomic_load(&quitting)) {
        if (++spins < SPIN_ROUNDS) {
            pause_cpu();
            continue;
        }
        atomic_fetch_add(&sleepers, 1);
#if defined(__linux__)
        if (atomic_load(&published) == seen && !atomic_load(&quitting))
            syscall(SYS_futex, &published, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
        sched_yield();
#endif
        atomic_fetch_sub(&sleepers, 1);
        spins = 0;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    float *scr = malloc(ITEM_FLOATS * sizeof(float));
    uint32_t seen = 0;
    for (;;) {
        wait_for_job(seen);
        if (atomic_load(&quitting))
            break;
        seen = atomic_load(&published);
        work_on(atomic_load(&current), seen, scr);
    }
    free(scr);
    return NULL;
}

static void wake_all(void)
{
#if defined(__linux__)
    if (atomic_load(&sleepers) > 0)
        syscall(SYS_futex, &published, FUTEX_WAKE_PRIVATE, threads, NULL, NULL, 0);
#endif
}

static float *main_scr;
static void run_redo(void)
{
    for (int s = 0; s < STEPS; s++) {
        job_t *j = &jobs[s];
        uint32_t gen = atomic_load(&published) + 1;
        j->n = nitems[s];
        j->rounds = item_rounds[s];
        j->expect_us = item_us[s];
        for (int i = 0; i < j->n; i++)
            atomic_store(&j->state[i], (uint64_t)gen << 2 | FREE);
        atomic_store(&j->done, 0);
        atomic_store(&j->next, (uint64_t)gen << 32);
        atomic_store(&current, j);
        atomic_store(&published, gen);
        wake_all();
        while (atomic_load(&j->done) < j->n) {
            work_on(j, gen, main_scr);
            pause_cpu();
        }
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_ms(int redo, int runs)
{
    double *t = malloc((size_t)runs * sizeof(double));
    for (int r = 0; r < 3; r++)
        redo ? run_redo() : run_join();
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        redo ? run_redo() : run_join();
        t[r] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof(double), by_value);
    double m = t[runs / 2] * 1e3;
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    out = malloc((size_t)MAX_ITEMS * ITEM_FLOATS * sizeof(float));
    main_scr = malloc(ITEM_FLOATS * sizeof(float));
    if (argc == 2 && !strcmp(argv[1], "calibrate")) {
        double best = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            compute(0, 2000000, main_scr);
            double v = 2000000 / ((now() - t0) * 1e6);
            best = v > best ? v : best;
        }
        printf("%.3f\n", best);
        return 0;
    }
    if (argc != 7 || (strcmp(argv[1], "join") && strcmp(argv[1], "redo"))) {
        fprintf(stderr, "usage: fair_share calibrate | join|redo THREADS BUSY RUNS SCALE ROUNDS_PER_US\n");
        return 2;
    }
    int redo = !strcmp(argv[1], "redo");
    threads = atoi(argv[2]);
    int busy = atoi(argv[3]), runs = atoi(argv[4]);
    double scale = atof(argv[5]), rounds_per_us = atof(argv[6]);
    if (threads < 1 || threads > 256 || busy < 0 || busy > 1024 || runs < 1 || !(scale > 0) ||
        !(rounds_per_us > 0)) {
        fprintf(stderr, "fair_share: THREADS 1..256, BUSY 0..1024, RUNS >= 1, SCALE and ROUNDS_PER_US > 0\n");
        return 2;
    }
    unsigned seed = 12345;
    double serial_us = 0;
    for (int s = 0; s < STEPS; s++) {
        seed = seed * 1103515245u + 12345u;
        double us = 20.0 * pow(100.0, (double)(seed >> 8 & 0xffff) / 65536.0) * scale;
        int n = 4 * threads;            /* four items per thread, of at least 5 us */
        if (us / n < 5.0)
            n = us / 5.0 < 1.0 ? 1 : (int)(us / 5.0);
        if (n > MAX_ITEMS)
            n = MAX_ITEMS;
        nitems[s] = n;
        item_us[s] = us / n;
        item_rounds[s] = (long)(item_us[s] * rounds_per_us);
        serial_us += us;
    }
    omp_set_num_threads(threads);
    pthread_t pool[256];
    if (redo)
        for (int i = 0; i < threads - 1; i++)
            pthread_create(&pool[i], NULL, worker, NULL);
    double quiet = median_ms(redo, runs);
    pid_t kids[1024];
    for (int i = 0; i < busy; i++)
        if ((kids[i] = fork()) == 0)
            for (volatile long x = 0;; x++)
                ;
    usleep(300000);
    double loaded = median_ms(redo, runs);
    for (int i = 0; i < busy; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < busy; i++)
        waitpid(kids[i], NULL, 0);
    double sum = 0;
    for (int s = STEPS - 1, i = 0; i < nitems[s] * ITEM_FLOATS; i++)
        sum += out[i];
    printf("%s threads %d serial_ms %.2f quiet %.3f busy %.3f ratio %.2f checksum %.6e\n",
           redo ? "redo" : "join", threads, serial_us / 1e3, quiet, loaded, loaded / quiet, sum);
    atomic_store(&quitting, 1);
    atomic_fetch_add(&published, 1);
    wake_all();
    if (redo)
        for (int i = 0; i < threads - 1; i++)
            pthread_join(pool[i], NULL);
    return 0;
}
