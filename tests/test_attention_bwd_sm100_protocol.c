/*
 * The barrier protocol of the sm_100a attention backward, run as a model on
 * the CPU (no Blackwell GPU exists here to run the kernel itself): the
 * schedules of kernels/blackwell/attention_bwd_sm100*.cuh written out as
 * per-agent operation lists (the TMA warp, the MMA warp, 4 compute warps,
 * 4 dQ warps), for both stage counts (2: head dims 64..128, software
 * pipelined by one block; 1: head dims 192 / 256, no overlap across blocks)
 * and 1..6 query blocks, executed under many random interleavings with
 *   - mbarriers with parity waits exactly as the hardware tests them: a wait
 *     for completion k of a barrier passes when the number of completed
 *     phases has the other parity; the model knows which completion each
 *     wait means and fails when the barrier is two phases ahead of it or the
 *     wait passes on an older phase;
 *   - asynchronous MMAs: a tcgen05.mma may complete any time after it is
 *     issued (in issue order only against an earlier MMA on the same
 *     accumulator), tcgen05.commit arrives once every MMA issued before it
 *     has completed; TMA loads land any time after they are issued;
 *   - data checks: every tensor-memory region (per 32-lane quarter) and
 *     shared-memory buffer carries a tag of what it holds (S^T of block i,
 *     P^T of block i, Q of block i, ...); every read checks the tag it
 *     needs, and nothing may write a region an MMA in flight reads or
 *     writes, or read one an MMA in flight writes (the MMAs' accumulators
 *     dV / dK are checked at completion: exactly one add per block, in
 *     order);
 *   - deadlock: no agent can move and nothing is in flight.
 * A change to the kernels' schedules must be mirrored here (the op lists
 * below follow attn_bwd_sm100_mma, attn_bwd_sm100_compute, attn_bwd_sm100_dq
 * and sm90::attn_bwd_producer line by line).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

enum { QUARTERS = 4, MAX_OPS = 512, MAX_FLIGHT = 64, AGENTS = 10 };

/* Regions: tensor memory (per lane quarter) and shared memory. */
enum region {
    TM_S, TM_DP, TM_DQ, TM_DV, TM_DK,
    SM_K, SM_V, SM_Q0, SM_Q1, SM_DO0, SM_DO1, SM_LSE0, SM_LSE1, SM_DPS0, SM_DPS1, SM_DS0, SM_DS1,
    REGIONS
};

/* Tags: what a region holds. */
#define TAG_S(i) (1000 + (i))
#define TAG_P(i) (2000 + (i))
#define TAG_DP(i) (3000 + (i))
#define TAG_DS(i) (4000 + (i))
#define TAG_DQ(i) (5000 + (i))
#define TAG_Q(i) (6000 + (i))
#define TAG_DO(i) (7000 + (i))
#define TAG_KV 9000

/* Barriers. */
enum barrier {
    KV_FULL, Q_FULL0, Q_FULL1, Q_EMPTY0, Q_EMPTY1, DO_FULL0, DO_FULL1, DO_EMPTY0, DO_EMPTY1,
    S_FULL, DP_FULL, P_FULL, DS_FULL, DV_DONE, DK_DONE, DQ_FULL, DQ_EMPTY, KV_DONE, BARRIERS
};
static const int bar_count[BARRIERS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 1, 1, 1, 4, 1};

enum op_kind { OP_WAIT, OP_ARRIVE, OP_TMA, OP_MMA, OP_COMMIT, OP_READ, OP_WRITE };

#define MAX_ACCESS 3
struct access {
    int region, tag; /* tag: expected (reads) or written (writes); accumulators: the add's index */
};

struct op {
    enum op_kind kind;
    int bar, phase;    /* WAIT: completion `phase` (-1: the one before the first) of bar; ARRIVE, COMMIT, TMA */
    int quarter;       /* READ / WRITE: the warp's lane quarter (-1: every quarter) */
    int nread, nwrite; /* MMA / TMA / READ / WRITE */
    struct access read[MAX_ACCESS], write[MAX_ACCESS];
    int accumulate;    /* MMA: write[0] is an accumulator (dV, dK) */
};

struct agent {
    struct op ops[MAX_OPS];
    int n, pc;
};

struct inflight {
    int kind; /* 0 MMA, 1 TMA load, 2 commit */
    struct op op;
    long seq; /* issue order (MMA, commit) */
    int done;
};

struct model {
    struct agent agent[AGENTS];
    int tag[REGIONS][QUARTERS];
    int completed[BARRIERS], arrivals[BARRIERS], tx[BARRIERS];
    struct inflight fl[MAX_FLIGHT * 4];
    int nfl;
    long seq;
    int errors;
    char what[256];
};

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static void fail(struct model *m, const char *msg, int a, int b)
{
    if (m->errors++ == 0)
        snprintf(m->what, sizeof m->what, "%s (%d, %d)", msg, a, b);
}

/* ---- op builders ---- */
static struct op *push(struct agent *a, enum op_kind k)
{
    struct op *o = &a->ops[a->n++];
    memset(o, 0, sizeof *o);
    o->kind = k;
    o->quarter = -1;
    return o;
}
static void wait_(struct agent *a, int bar, int phase)
{
    struct op *o = push(a, OP_WAIT);
    o->bar = bar;
    o->phase = phase;
}
static void arrive(struct agent *a, int bar)
{
    push(a, OP_ARRIVE)->bar = bar;
}
static void commit(struct agent *a, int bar)
{
    push(a, OP_COMMIT)->bar = bar;
}
static void tma(struct agent *a, int bar, int r0, int r1, int tag)
{
    struct op *o = push(a, OP_TMA);
    o->bar = bar;
    o->nwrite = 2;
    o->write[0] = (struct access){r0, tag};
    o->write[1] = (struct access){r1, tag};
}
static void mma(struct agent *a, int r0, int t0, int r1, int t1, int w, int wt, int accumulate)
{
    struct op *o = push(a, OP_MMA);
    o->nread = 2;
    o->read[0] = (struct access){r0, t0};
    o->read[1] = (struct access){r1, t1};
    o->nwrite = 1;
    o->write[0] = (struct access){w, wt};
    o->accumulate = accumulate;
}
static void rd(struct agent *a, int q, int r, int tag)
{
    struct op *o = push(a, OP_READ);
    o->quarter = q;
    o->nread = 1;
    o->read[0] = (struct access){r, tag};
}
static void wr(struct agent *a, int q, int r, int tag)
{
    struct op *o = push(a, OP_WRITE);
    o->quarter = q;
    o->nwrite = 1;
    o->write[0] = (struct access){r, tag};
}

/* ---- the kernels' schedules ---- */
static int q_full(int s) { return s ? Q_FULL1 : Q_FULL0; }
static int q_empty(int s) { return s ? Q_EMPTY1 : Q_EMPTY0; }
static int do_full(int s) { return s ? DO_FULL1 : DO_FULL0; }
static int do_empty(int s) { return s ? DO_EMPTY1 : DO_EMPTY0; }
static int sm_q(int s) { return s ? SM_Q1 : SM_Q0; }
static int sm_do(int s) { return s ? SM_DO1 : SM_DO0; }
static int sm_lse(int s) { return s ? SM_LSE1 : SM_LSE0; }
static int sm_dps(int s) { return s ? SM_DPS1 : SM_DPS0; }
static int sm_ds(int i) { return i % 2 ? SM_DS1 : SM_DS0; }

/* sm90::attn_bwd_producer<Cfg, true> */
static void build_producer(struct agent *a, int count, int stages)
{
    tma(a, KV_FULL, SM_K, SM_V, TAG_KV);
    for (int i = 0; i < count; i++) {
        const int s = i % stages;
        wait_(a, q_empty(s), i / stages - 1); /* parity ((i / stages) & 1) ^ 1 */
        tma(a, q_full(s), sm_q(s), sm_lse(s), TAG_Q(i));
        wait_(a, do_empty(s), i / stages - 1);
        tma(a, do_full(s), sm_do(s), sm_dps(s), TAG_DO(i));
    }
}

static void mma_st(struct agent *a, int j, int stages)
{
    mma(a, SM_K, TAG_KV, sm_q(j % stages), TAG_Q(j), TM_S, TAG_S(j), 0);
}
static void mma_dpt(struct agent *a, int j, int stages)
{
    mma(a, SM_V, TAG_KV, sm_do(j % stages), TAG_DO(j), TM_DP, TAG_DP(j), 0);
}

/* Deliberate breakages (0: none), each of which the model must catch:
 * 1 two stages without the dv_done wait before S^T(i + 1); 2 one stage
 * releasing Q / dO (and the lse / dpsum rows) right after dV(i); 3 two
 * stages without the dq_empty wait; 4 the compute warps arriving on p_full
 * before writing P^T. */
static int g_mutation;

/* attn_bwd_sm100_mma */
static void build_mma(struct agent *a, int count, int stages)
{
    wait_(a, KV_FULL, 0);
    wait_(a, Q_FULL0, 0);
    mma_st(a, 0, stages);
    commit(a, S_FULL);
    wait_(a, DO_FULL0, 0);
    mma_dpt(a, 0, stages);
    commit(a, DP_FULL);
    for (int i = 0; i < count; i++) {
        const int s = i % stages, next = i + 1 < count, s1 = (i + 1) % stages;
        wait_(a, P_FULL, i);
        mma(a, TM_S, TAG_P(i), sm_do(s), TAG_DO(i), TM_DV, i, 1);
        commit(a, DV_DONE);
        if (stages == 1 && g_mutation == 2) {
            commit(a, Q_EMPTY0);
            commit(a, DO_EMPTY0);
        }
        if (stages == 2) {
            if (g_mutation != 1)
                wait_(a, DV_DONE, i);
            if (next) {
                wait_(a, q_full(s1), (i + 1) / stages);
                mma_st(a, i + 1, stages);
                commit(a, S_FULL);
            }
        }
        wait_(a, DS_FULL, i);
        mma(a, TM_DP, TAG_DS(i), sm_q(s), TAG_Q(i), TM_DK, i, 1);
        commit(a, DK_DONE);
        if (stages == 1) {
            if (g_mutation != 2) {
                commit(a, Q_EMPTY0);
                commit(a, DO_EMPTY0);
            }
        } else {
            wait_(a, DK_DONE, i);
            if (next) {
                wait_(a, do_full(s1), (i + 1) / stages);
                mma_dpt(a, i + 1, stages);
                commit(a, DP_FULL);
            }
        }
        if (i > 0 && !(stages == 2 && g_mutation == 3))
            wait_(a, DQ_EMPTY, i - 1);
        mma(a, SM_K, TAG_KV, sm_ds(i), TAG_DS(i), TM_DQ, TAG_DQ(i), 0);
        commit(a, DQ_FULL);
        if (stages == 2) {
            commit(a, q_empty(s));
            commit(a, do_empty(s));
        } else {
            /* Redundant: q_full(i + 1) completes only after q_empty(i), a commit
             * issued after dV(i) and dK(i) (the model passes without them too). */
            wait_(a, DV_DONE, i);
            wait_(a, DK_DONE, i);
            if (next) {
                wait_(a, Q_FULL0, i + 1);
                mma_st(a, i + 1, stages);
                commit(a, S_FULL);
                wait_(a, DO_FULL0, i + 1);
                mma_dpt(a, i + 1, stages);
                commit(a, DP_FULL);
            }
        }
    }
    commit(a, KV_DONE);
}

/* attn_bwd_sm100_compute, warp w */
static void build_compute(struct agent *a, int w, int count, int stages)
{
    for (int i = 0; i < count; i++) {
        const int s = i % stages;
        wait_(a, q_full(s), i / stages);
        wait_(a, S_FULL, i);
        rd(a, w, TM_S, TAG_S(i));
        rd(a, w, sm_lse(s), TAG_Q(i));
        if (g_mutation == 4) {
            arrive(a, P_FULL);
            wr(a, w, TM_S, TAG_P(i));
        } else {
            wr(a, w, TM_S, TAG_P(i));
            arrive(a, P_FULL);
        }
        wait_(a, do_full(s), i / stages);
        wait_(a, DP_FULL, i);
        rd(a, w, TM_DP, TAG_DP(i));
        rd(a, w, sm_dps(s), TAG_DO(i));
        wr(a, w, TM_DP, TAG_DS(i));
        wr(a, w, sm_ds(i), TAG_DS(i));
        arrive(a, DS_FULL);
    }
    if (count > 0) {
        wait_(a, KV_DONE, 0);
        rd(a, w, TM_DV, count);
        rd(a, w, TM_DK, count);
    }
}

/* attn_bwd_sm100_dq, warp w */
static void build_dq(struct agent *a, int w, int count)
{
    for (int i = 0; i < count; i++) {
        wait_(a, DQ_FULL, i);
        rd(a, w, TM_DQ, TAG_DQ(i));
        arrive(a, DQ_EMPTY);
    }
}

/* ---- execution ---- */
static int is_tmem(int r)
{
    return r <= TM_DK;
}

static void bar_arrive(struct model *m, int b)
{
    if (--m->arrivals[b] < 0)
        fail(m, "more arrivals than the barrier's count in one phase", b, m->completed[b]);
    if (m->arrivals[b] <= 0 && m->tx[b] == 0) {
        m->completed[b]++;
        m->arrivals[b] = bar_count[b];
    }
}

static void bar_tx_done(struct model *m, int b)
{
    if (--m->tx[b] == 0 && m->arrivals[b] == 0) {
        m->completed[b]++;
        m->arrivals[b] = bar_count[b];
    }
}

/* An MMA in flight that reads (want_read) or writes region r in quarter q. */
static int mma_busy(const struct model *m, int r, int q, int want_read, int want_write, const struct op *self)
{
    for (int f = 0; f < m->nfl; f++) {
        const struct inflight *x = &m->fl[f];
        if (x->done || x->kind != 0 || &x->op == self)
            continue;
        (void)q; /* an MMA touches every quarter */
        if (want_read)
            for (int k = 0; k < x->op.nread; k++)
                if (x->op.read[k].region == r)
                    return 1;
        if (want_write)
            for (int k = 0; k < x->op.nwrite; k++)
                if (x->op.write[k].region == r)
                    return 1;
    }
    return 0;
}

/* One step of agent a; 0 when it is blocked on a wait. */
static int step_agent(struct model *m, struct agent *a)
{
    struct op *o = &a->ops[a->pc];
    switch (o->kind) {
    case OP_WAIT: {
        const int done = m->completed[o->bar];
        const int passes = (done & 1) != (o->phase & 1); /* the hardware's parity test */
        if (done > o->phase + 1) {
            fail(m, "a barrier ran two phases ahead of its waiter (barrier, phase)", o->bar, o->phase);
            return 0;
        }
        if (!passes)
            return 0;
        if (done != o->phase + 1) {
            fail(m, "a wait passed on an older phase (barrier, phase)", o->bar, o->phase);
            return 0;
        }
        break;
    }
    case OP_ARRIVE:
        bar_arrive(m, o->bar);
        break;
    case OP_TMA: {
        m->tx[o->bar] += 1;    /* arrive.expect_tx: the bytes first, */
        bar_arrive(m, o->bar); /* then the arrival; the phase completes when the loads land */
        struct inflight *x = &m->fl[m->nfl++];
        memset(x, 0, sizeof *x);
        x->kind = 1;
        x->op = *o;
        break;
    }
    case OP_MMA: {
        for (int k = 0; k < o->nread; k++) {
            const int r = o->read[k].region;
            if (is_tmem(r) || r >= SM_DS0) { /* per quarter */
                for (int q = 0; q < QUARTERS; q++)
                    if (m->tag[r][q] != o->read[k].tag)
                        fail(m, "MMA operand holds the wrong data (region, tag)", r, m->tag[r][q]);
            } else if (m->tag[r][0] != o->read[k].tag) {
                fail(m, "MMA operand holds the wrong data (region, tag)", r, m->tag[r][0]);
            }
            if (mma_busy(m, r, -1, 0, 1, NULL))
                fail(m, "MMA reads a region another MMA in flight writes", r, 0);
        }
        const int w = o->write[0].region;
        if (mma_busy(m, w, -1, 1, 0, NULL))
            fail(m, "MMA overwrites a region another MMA in flight reads", w, 0);
        if (!o->accumulate && mma_busy(m, w, -1, 0, 1, NULL))
            fail(m, "two MMAs in flight write one region", w, 0);
        struct inflight *x = &m->fl[m->nfl++];
        memset(x, 0, sizeof *x);
        x->kind = 0;
        x->op = *o;
        x->seq = m->seq++;
        break;
    }
    case OP_COMMIT: {
        struct inflight *x = &m->fl[m->nfl++];
        memset(x, 0, sizeof *x);
        x->kind = 2;
        x->op = *o;
        x->seq = m->seq++;
        break;
    }
    case OP_READ: {
        const int r = o->read[0].region, q = is_tmem(r) || r >= SM_DS0 ? o->quarter : 0;
        if (m->tag[r][q] != o->read[0].tag)
            fail(m, "a warp reads the wrong data (region, tag)", r, m->tag[r][q]);
        if (mma_busy(m, r, q, 0, 1, NULL))
            fail(m, "a warp reads a region an MMA in flight writes", r, q);
        break;
    }
    case OP_WRITE: {
        const int r = o->write[0].region, q = o->quarter;
        if (mma_busy(m, r, q, 1, 1, NULL))
            fail(m, "a warp writes a region an MMA in flight reads or writes", r, q);
        m->tag[r][q] = o->write[0].tag;
        break;
    }
    }
    a->pc++;
    return 1;
}

/* In-flight item f may finish now. */
static int can_finish(const struct model *m, int f)
{
    const struct inflight *x = &m->fl[f];
    if (x->done)
        return 0;
    if (x->kind == 1)
        return 1;
    for (int g = 0; g < m->nfl; g++) {
        const struct inflight *y = &m->fl[g];
        if (y->done || y->kind != 0 || y->seq >= x->seq)
            continue;
        if (x->kind == 2)
            return 0; /* a commit waits for every earlier MMA */
        if (y->op.write[0].region == x->op.write[0].region)
            return 0; /* MMAs on one accumulator complete in order */
    }
    return 1;
}

static void finish(struct model *m, int f)
{
    struct inflight *x = &m->fl[f];
    x->done = 1;
    if (x->kind == 1) {
        for (int k = 0; k < x->op.nwrite; k++) {
            const int r = x->op.write[k].region;
            if (mma_busy(m, r, -1, 1, 1, NULL))
                fail(m, "a TMA load lands in a buffer an MMA in flight reads", r, 0);
            for (int q = 0; q < QUARTERS; q++)
                m->tag[r][q] = x->op.write[k].tag;
        }
        bar_tx_done(m, x->op.bar);
    } else if (x->kind == 0) {
        const int w = x->op.write[0].region;
        for (int q = 0; q < QUARTERS; q++) {
            if (x->op.accumulate) {
                if (m->tag[w][q] != x->op.write[0].tag)
                    fail(m, "accumulator adds out of order (region, tag)", w, m->tag[w][q]);
                m->tag[w][q] = x->op.write[0].tag + 1;
            } else {
                m->tag[w][q] = x->op.write[0].tag;
            }
        }
    } else {
        bar_arrive(m, x->op.bar);
    }
}

/* Runs one interleaving; returns the number of errors (m->what: the first). */
static int run(struct model *m, int count, int stages)
{
    memset(m, 0, sizeof *m);
    for (int b = 0; b < BARRIERS; b++)
        m->arrivals[b] = bar_count[b];
    for (int r = 0; r < REGIONS; r++)
        for (int q = 0; q < QUARTERS; q++)
            m->tag[r][q] = -1;
    for (int q = 0; q < QUARTERS; q++)
        m->tag[TM_DV][q] = m->tag[TM_DK][q] = 0; /* accumulate = 0 at the first add: any start */
    build_producer(&m->agent[0], count, stages);
    build_mma(&m->agent[1], count, stages);
    for (int w = 0; w < 4; w++) {
        build_compute(&m->agent[2 + w], w, count, stages);
        build_dq(&m->agent[6 + w], w, count);
    }
    for (int steps = 0; steps < 100000 && m->errors == 0; steps++) {
        int cand[AGENTS + MAX_FLIGHT * 4], n = 0;
        for (int a = 0; a < AGENTS; a++) {
            struct agent *ag = &m->agent[a];
            if (ag->pc >= ag->n)
                continue;
            const struct op *o = &ag->ops[ag->pc];
            if (o->kind == OP_WAIT && (m->completed[o->bar] & 1) == (o->phase & 1) &&
                m->completed[o->bar] <= o->phase + 1)
                continue; /* blocked */
            cand[n++] = a;
        }
        for (int f = 0; f < m->nfl; f++)
            if (can_finish(m, f))
                cand[n++] = AGENTS + f;
        if (n == 0) {
            int left = 0;
            for (int a = 0; a < AGENTS; a++)
                left += m->agent[a].pc < m->agent[a].n;
            if (left)
                fail(m, "deadlock: agents left blocked (agents, -)", left, 0);
            break;
        }
        const int c = cand[rnd((uint32_t)n)];
        if (c < AGENTS)
            step_agent(m, &m->agent[c]);
        else
            finish(m, c - AGENTS);
        if (m->nfl >= MAX_FLIGHT * 4 - 4) { /* compact finished items */
            int k = 0;
            for (int f = 0; f < m->nfl; f++)
                if (!m->fl[f].done)
                    m->fl[k++] = m->fl[f];
            m->nfl = k;
        }
    }
    /* Everything the kernel's teardown assumes: no MMA or load left. */
    for (int f = 0; f < m->nfl && m->errors == 0; f++)
        if (!m->fl[f].done && m->fl[f].kind != 2)
            fail(m, "an MMA or load still in flight at the end (kind, -)", m->fl[f].kind, 0);
    for (int q = 0; q < QUARTERS && m->errors == 0; q++)
        if (count > 0 && (m->tag[TM_DV][q] != count || m->tag[TM_DK][q] != count))
            fail(m, "dV / dK did not receive one add per block", m->tag[TM_DV][q], m->tag[TM_DK][q]);
    return m->errors;
}

int main(void)
{
    static struct model m;
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int stages = 1; stages <= 2; stages++)
        for (int count = 1; count <= 6; count++) {
            int bad = 0;
            char first[256] = "";
            for (int trial = 0; trial < 3000; trial++)
                if (run(&m, count, stages) && bad++ == 0)
                    snprintf(first, sizeof first, "%s", m.what);
            CHECK(bad == 0, "%d stage(s), %d query blocks: %d of 3000 interleavings broke the protocol; first: %s",
                  stages, count, bad, first);
        }
    /* The model catches each deliberate breakage in some interleaving. */
    static const int mutation_stages[] = {0, 2, 1, 2, 2};
    for (g_mutation = 1; g_mutation <= 4; g_mutation++) {
        int caught = 0;
        char first[256] = "";
        for (int trial = 0; trial < 3000 && !caught; trial++)
            if (run(&m, 3, mutation_stages[g_mutation])) {
                caught = 1;
                snprintf(first, sizeof first, "%s", m.what);
            }
        CHECK(caught, "breakage %d went unnoticed", g_mutation);
        printf("breakage %d caught: %s\n", g_mutation, first);
    }
    g_mutation = 0;
    return check_exit();
}
