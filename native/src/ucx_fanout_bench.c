/*
 * ucx_fanout_bench: raw UCX limit of the product's fan-out pattern.
 *
 * One owner process (the HDFS client) exposes a ring of N registered
 * buffers of packet size S. R getter processes (the DataNodes) connect to
 * the owner's listener on 127.0.0.1. For every packet the owner fills a ring
 * buffer with a pattern derived from the packet seqno and tag-sends a small
 * descriptor (seqno, address, length) to every getter; the rkey is sent once
 * at start. Each getter keeps a window of gets in flight, verifies every
 * packet and tag-sends DONE(seqno) back; the owner reuses a ring buffer once
 * all getters are done with it. The owner progresses its worker the whole
 * time (over tcp, UCX serves the get by active messages on the owner side).
 *
 * The main process (supervisor) does not use UCX: it forks the owner and
 * the getters, bounds the run with a timeout (SIGKILL + reap), and reports.
 */
#define _GNU_SOURCE
#include "ux_common.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GETTERS 16
#define TAG_INIT    0x4642000000000001ULL
#define TAG_DESC    0x4642000000000002ULL
#define TAG_DONE    0x4642000000000003ULL
#define TAG_BYE     0x4642000000000004ULL
#define RKEY_MAX    2048

typedef struct {
    uint32_t idx;
    uint32_t nbuf;
    uint64_t base;
    uint64_t size;
    uint64_t npackets;
    uint32_t rkey_len;
    uint8_t  rkey[RKEY_MAX];
} init_msg_t;

typedef struct {
    uint64_t seq;
    uint64_t addr;
    uint64_t len;
} desc_msg_t;

typedef struct {
    uint64_t seq;
    uint32_t idx;
    uint32_t pad;
} done_msg_t;

typedef struct {
    int      ok;
    char     err[256];
    uint64_t bytes;
    uint64_t gets;
    char     rma_lanes[128]; /* transports of the endpoint's RMA lanes */
} getter_res_t;

typedef struct {
    int    ok;
    char   err[256];
    double seconds;
} owner_res_t;

typedef struct {
    owner_res_t  owner;
    getter_res_t g[MAX_GETTERS];
    float        lat_us[]; /* R * npackets */
} shared_t;

typedef struct {
    size_t      size;
    int         getters;
    uint64_t    npackets;
    int         nbuf;
    int         window;
    const char *tls;
    int         err_peer;
    int         ucx_alloc;
    double      timeout;
} cfg_t;

static shared_t *g_sh;

static inline uint64_t pat_word(uint64_t seq, uint64_t j)
{
    return (seq + 1) * 0x9E3779B97F4A7C15ULL + j * 0xD1B54A32D192ED03ULL;
}

#define FAIL(res, ...)                                                   \
    do {                                                                 \
        snprintf((res)->err, sizeof((res)->err), __VA_ARGS__);           \
        fprintf(stderr, "[pid %d] %s\n", (int)getpid(), (res)->err);     \
        goto out;                                                        \
    } while (0)

/* ===================== owner ===================== */

typedef struct {
    void    *req;
    uint32_t b;
} sreq_t;

typedef struct {
    void      *req;
    done_msg_t msg;
} dslot_t;

static void *post_done_recv(ux_t *u, dslot_t *d)
{
    ucp_request_param_t rp;
    memset(&rp, 0, sizeof(rp));
    return ucp_tag_recv_nbx(u->worker, &d->msg, sizeof(d->msg), TAG_DONE,
                            (ucp_tag_t)-1, &rp);
}

static int owner_main(const cfg_t *c, int *port_wfd, int go_wfd, int closed_rfd)
{
    owner_res_t *res = &g_sh->owner;
    const int R = c->getters, N = c->nbuf;
    const size_t S = c->size;
    ux_t u;
    int have_u = 0;
    ux_connq_t q = {.n = 0};
    ucp_listener_h l = NULL;
    ucp_mem_h memh = NULL;
    void *rkey_buf = NULL;
    size_t rkey_len = 0;
    ucp_ep_h ep[MAX_GETTERS] = {0};
    uint16_t port = 0;
    uint8_t *ring = NULL;
    desc_msg_t *desc = calloc((size_t)N, sizeof(*desc));
    int *pending = calloc((size_t)N, sizeof(int));
    int *sends_out = calloc((size_t)N, sizeof(int));
    size_t sreq_cap = (size_t)N * (size_t)R + 16, nsreq = 0;
    sreq_t *sreq = calloc(sreq_cap, sizeof(*sreq));
    int ndslot = R * c->window + R;
    dslot_t *dslot = calloc((size_t)ndslot, sizeof(*dslot));
    init_msg_t *init = calloc(1, sizeof(*init));
    double deadline = now_s() + c->timeout;
    ucs_status_t st;
    ucp_request_param_t rp;

    if (!desc || !pending || !sends_out || !sreq || !dslot || !init) {
        FAIL(res, "owner: out of memory");
    }
    if (ux_init(&u, c->tls) != 0) {
        FAIL(res, "owner: UCX init failed");
    }
    have_u = 1;
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.length     = S * (size_t)N;
    if (c->ucx_alloc) {
        /* UCX allocates (shared memory a local peer reads with no work by
         * the owner), as the product's registered pools do. */
        mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.address     = NULL;
        mp.flags       = UCP_MEM_MAP_ALLOCATE;
    } else {
        if (posix_memalign((void **)&ring, 4096, S * (size_t)N) != 0) {
            ring = NULL;
            FAIL(res, "owner: cannot allocate ring of %d x %zu", N, S);
        }
        mp.address = ring;
    }
    st = ucp_mem_map(u.ctx, &mp, &memh);
    if (st != UCS_OK) {
        memh = NULL;
        FAIL(res, "owner: ucp_mem_map: %s", ucs_status_string(st));
    }
    if (c->ucx_alloc) {
        ucp_mem_attr_t ma;
        ma.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        st = ucp_mem_query(memh, &ma);
        if (st != UCS_OK) {
            FAIL(res, "owner: ucp_mem_query: %s", ucs_status_string(st));
        }
        ring = ma.address;
    }
    memset(ring, 0, S * (size_t)N);
    st = ucp_rkey_pack(u.ctx, memh, &rkey_buf, &rkey_len);
    if (st != UCS_OK) {
        rkey_buf = NULL;
        FAIL(res, "owner: ucp_rkey_pack: %s", ucs_status_string(st));
    }
    if (rkey_len > RKEY_MAX) {
        FAIL(res, "owner: packed rkey too large (%zu)", rkey_len);
    }
    if (ux_listen(&u, &q, &l, &port) != 0) {
        FAIL(res, "owner: listener failed");
    }
    for (int i = 0; i < R; i++) {
        if (write_full(port_wfd[i], &port, sizeof(port)) != 0) {
            FAIL(res, "owner: cannot pass port to getter %d", i);
        }
    }
    /* Accept R getters. */
    int accepted = 0;
    while (accepted < R) {
        while (accepted < q.n) {
            if (ux_accept(&u, q.req[accepted], c->err_peer, &ep[accepted]) != 0) {
                FAIL(res, "owner: accept failed");
            }
            /* wireup must finish before the (2 KiB) INIT: see ux_flush_ep */
            if (ux_flush_ep(&u, ep[accepted], deadline - now_s()) != 0) {
                FAIL(res, "owner: flush of accepted endpoint %d failed", accepted);
            }
            accepted++;
        }
        if (accepted == R) {
            break;
        }
        if (now_s() > deadline) {
            FAIL(res, "owner: only %d of %d getters connected", accepted, R);
        }
        ux_idle(&u, 20);
    }
    /* Post DONE receives before anything can come back. */
    for (int i = 0; i < ndslot; i++) {
        dslot[i].req = post_done_recv(&u, &dslot[i]);
        if (UCS_PTR_IS_ERR(dslot[i].req)) {
            st = UCS_PTR_STATUS(dslot[i].req);
            dslot[i].req = NULL;
            FAIL(res, "owner: ucp_tag_recv_nbx: %s", ucs_status_string(st));
        }
    }
    /* INIT: index, ring geometry and the rkey, once per getter. */
    init->nbuf     = (uint32_t)N;
    init->base     = (uint64_t)(uintptr_t)ring;
    init->size     = S;
    init->npackets = c->npackets;
    init->rkey_len = (uint32_t)rkey_len;
    memcpy(init->rkey, rkey_buf, rkey_len);
    for (int i = 0; i < R; i++) {
        init->idx = (uint32_t)i;
        memset(&rp, 0, sizeof(rp));
        /* Deliberately the full 2 KiB struct (not just the used part):
         * it keeps the wireup workaround above exercised by every run. */
        st = ux_wait(&u, ucp_tag_send_nbx(ep[i], init, sizeof(*init),
                                          TAG_INIT, &rp),
                     deadline - now_s(), "owner: send INIT");
        if (st != UCS_OK) {
            FAIL(res, "owner: send INIT to getter %d: %s", i, ucs_status_string(st));
        }
    }

    double t0 = now_s();
    uint64_t next = 0, oldest = 0;
    uint64_t spins = 0;
    while (oldest < c->npackets) {
        int did = 0;
        /* Publish packets while ring buffers are free. */
        while (next < c->npackets && next - oldest < (uint64_t)N) {
            uint32_t b = (uint32_t)(next % (uint64_t)N);
            uint64_t *w = (uint64_t *)(ring + (size_t)b * S);
            for (size_t j = 0; j < S / 8; j++) {
                w[j] = pat_word(next, j);
            }
            desc[b].seq  = next;
            desc[b].addr = (uint64_t)(uintptr_t)w;
            desc[b].len  = S;
            pending[b]   = R;
            for (int i = 0; i < R; i++) {
                memset(&rp, 0, sizeof(rp));
                void *r = ucp_tag_send_nbx(ep[i], &desc[b], sizeof(desc[b]),
                                           TAG_DESC, &rp);
                if (UCS_PTR_IS_ERR(r)) {
                    FAIL(res, "owner: send DESC: %s",
                         ucs_status_string(UCS_PTR_STATUS(r)));
                }
                if (r != NULL) {
                    sreq[nsreq].req = r;
                    sreq[nsreq].b   = b;
                    nsreq++;
                    sends_out[b]++;
                }
            }
            next++;
            did = 1;
        }
        if (ucp_worker_progress(u.worker) != 0) {
            did = 1;
        }
        /* Reap completed sends. */
        for (size_t k = 0; k < nsreq;) {
            st = ucp_request_check_status(sreq[k].req);
            if (st == UCS_INPROGRESS) {
                k++;
                continue;
            }
            ucp_request_free(sreq[k].req);
            if (st != UCS_OK) {
                FAIL(res, "owner: DESC send completed with %s", ucs_status_string(st));
            }
            sends_out[sreq[k].b]--;
            sreq[k] = sreq[--nsreq];
            did = 1;
        }
        /* DONE messages from getters. */
        for (int i = 0; i < ndslot; i++) {
            if (dslot[i].req != NULL) {
                st = ucp_request_check_status(dslot[i].req);
                if (st == UCS_INPROGRESS) {
                    continue;
                }
                ucp_request_free(dslot[i].req);
                dslot[i].req = NULL;
                if (st != UCS_OK) {
                    FAIL(res, "owner: DONE recv: %s", ucs_status_string(st));
                }
            }
            uint64_t seq = dslot[i].msg.seq;
            if (seq >= next || seq < oldest || dslot[i].msg.idx >= (uint32_t)R) {
                FAIL(res, "owner: bogus DONE seq %llu from %u",
                     (unsigned long long)seq, dslot[i].msg.idx);
            }
            pending[seq % (uint64_t)N]--;
            dslot[i].req = post_done_recv(&u, &dslot[i]);
            if (UCS_PTR_IS_ERR(dslot[i].req)) {
                st = UCS_PTR_STATUS(dslot[i].req);
                dslot[i].req = NULL;
                FAIL(res, "owner: ucp_tag_recv_nbx: %s", ucs_status_string(st));
            }
            if (dslot[i].req == NULL) { /* completed at once: handle next round */
                i--;
            }
            did = 1;
        }
        while (oldest < next && pending[oldest % (uint64_t)N] == 0 &&
               sends_out[oldest % (uint64_t)N] == 0) {
            oldest++;
        }
        if (!did) {
            /* Idle: sleep on the worker's event fd for a short while rather
             * than spinning; getters may be busy on the same 2 cores. */
            if (++spins > 64) {
                ux_idle(&u, 1);
                spins = 0;
            }
            if (now_s() > deadline) {
                FAIL(res, "owner: timeout with %llu of %llu packets released",
                     (unsigned long long)oldest,
                     (unsigned long long)c->npackets);
            }
        } else {
            spins = 0;
        }
    }
    res->seconds = now_s() - t0;

    /* Teardown. Every DONE is in. A synchronous BYE tells each getter that
     * nothing more will come; once all are matched, the go byte on the
     * control pipe lets getters close their endpoints while we close ours at
     * the same time, and we keep progressing until they report over the pipe
     * (then the process exits). Found by trial on UCX 1.13 without peer
     * error handling: if one side closes (flush) after the other side has
     * already closed, its flush logs "error during flush: Endpoint timeout";
     * closing both sides concurrently is quiet. */
    ux_expect_disconnect();
    {
        /* synchronous: completes when the getter matched it */
        static uint64_t bye = 0;
        void *breq[MAX_GETTERS];
        for (int i = 0; i < R; i++) {
            memset(&rp, 0, sizeof(rp));
            breq[i] = ucp_tag_send_sync_nbx(ep[i], &bye, sizeof(bye), TAG_BYE, &rp);
        }
        for (int i = 0; i < R; i++) {
            st = ux_wait(&u, breq[i], 5.0, "owner: send BYE");
            if (st != UCS_OK) {
                FAIL(res, "owner: send BYE to %d: %s", i, ucs_status_string(st));
            }
        }
    }
    for (int i = 0; i < R; i++) {
        if (write_full(go_wfd, "g", 1) != 0) {
            FAIL(res, "owner: cannot signal getters: %s", strerror(errno));
        }
    }
    ux_close_eps(&u, ep, R, c->err_peer, 3.0);
    memset(ep, 0, sizeof(ep));
    {
        int closed = 0;
        double until = now_s() + 5.0;
        while (closed < R && now_s() < until) {
            char b;
            struct pollfd pfd = {closed_rfd, POLLIN, 0};
            ux_idle(&u, 5);
            if (poll(&pfd, 1, 0) == 1 && read(closed_rfd, &b, 1) == 1) {
                closed++;
            }
        }
        if (closed < R) {
            fprintf(stderr, "owner: only %d of %d getters closed in time\n", closed, R);
        }
    }
    res->ok = 1;
out:
    if (have_u) {
        for (size_t k = 0; k < nsreq; k++) {
            ucp_request_cancel(u.worker, sreq[k].req);
            ucp_request_free(sreq[k].req);
        }
        for (int i = 0; dslot != NULL && i < ndslot; i++) {
            if (dslot[i].req != NULL) {
                ucp_request_cancel(u.worker, dslot[i].req);
                ucp_worker_progress(u.worker);
                ucp_request_free(dslot[i].req);
            }
        }
        /* Only after a failure are endpoints still open here. Force close
         * (allowed with peer error handling only) or a bounded flush. */
        ux_close_eps(&u, ep, R, c->err_peer, 3.0);
        if (l != NULL) {
            ucp_listener_destroy(l);
        }
        if (rkey_buf != NULL) {
            ucp_rkey_buffer_release(rkey_buf);
        }
        if (memh != NULL && (st = ucp_mem_unmap(u.ctx, memh)) != UCS_OK) {
            fprintf(stderr, "owner: ucp_mem_unmap: %s\n", ucs_status_string(st));
        }
        ux_fini(&u);
    }
    if (!c->ucx_alloc) {
        free(ring);
    }
    free(desc);
    free(pending);
    free(sends_out);
    free(sreq);
    free(dslot);
    free(init);
    return res->ok ? 0 : 1;
}

/* ===================== getter ===================== */

/* "tl/dev" of every lane that carries RMA, joined by '+'. */
static void rma_lanes(ucp_ep_h ep, char *out, size_t outsz)
{
    char *info = ux_ep_info(ep);
    size_t used = 0;
    out[0] = '\0';
    for (char *save = NULL, *line = info ? strtok_r(info, "\n", &save) : NULL;
         line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane[");
        if (lane == NULL || strstr(line, "rma") == NULL) {
            continue;
        }
        char *colon = strchr(lane, ':');          /* "lane[1]:" */
        char *p = colon ? strchr(colon + 1, ':') : NULL; /* " 2:cma/memory.0" */
        if (p == NULL) {
            continue;
        }
        p++;
        size_t n = strcspn(p, " ");
        if (used + n + 2 < outsz) {
            used += (size_t)snprintf(out + used, outsz - used, "%s%.*s",
                                     used ? "+" : "", (int)n, p);
        }
    }
    free(info);
}

enum { SL_FREE, SL_RECV, SL_GET, SL_SEND };

typedef struct {
    int        state;
    void      *req;
    desc_msg_t desc;
    done_msg_t done;
    uint8_t   *buf;
    double     t0, t1;
} gslot_t;

static void on_get_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    (void)status;
    ((gslot_t *)user_data)->t1 = now_s();
}

static int getter_main(const cfg_t *c, int idx, int port_rfd, int go_rfd,
                       int closed_wfd)
{
    getter_res_t *res = &g_sh->g[idx];
    float *lat = g_sh->lat_us + (size_t)idx * c->npackets;
    const int W = c->window;
    ux_t u;
    int have_u = 0;
    ucp_ep_h ep = NULL;
    ucp_rkey_h rkey = NULL;
    ucp_mem_h memh = NULL;
    uint8_t *local = NULL;
    uint16_t port = 0;
    init_msg_t *init = calloc(1, sizeof(*init));
    gslot_t *sl = calloc((size_t)W, sizeof(*sl));
    double deadline = now_s() + c->timeout;
    ucs_status_t st;
    ucp_request_param_t rp;
    uint64_t posted = 0, completed = 0;
    uint32_t my_idx = 0;

    if (!init || !sl) {
        FAIL(res, "getter %d: out of memory", idx);
    }
    if (read_full_timeout(port_rfd, &port, sizeof(port), (int)(c->timeout * 1000)) != 0) {
        FAIL(res, "getter %d: owner did not pass its port", idx);
    }
    if (ux_init(&u, c->tls) != 0) {
        FAIL(res, "getter %d: UCX init failed", idx);
    }
    have_u = 1;
    if (posix_memalign((void **)&local, 4096, c->size * (size_t)W) != 0) {
        local = NULL;
        FAIL(res, "getter %d: out of memory", idx);
    }
    memset(local, 0, c->size * (size_t)W);
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = local;
    mp.length     = c->size * (size_t)W;
    st = ucp_mem_map(u.ctx, &mp, &memh);
    if (st != UCS_OK) {
        memh = NULL;
        FAIL(res, "getter %d: ucp_mem_map: %s", idx, ucs_status_string(st));
    }
    if (ux_connect(&u, port, c->err_peer, &ep) != 0) {
        FAIL(res, "getter %d: connect failed", idx);
    }
    memset(&rp, 0, sizeof(rp));
    st = ux_wait(&u, ucp_tag_recv_nbx(u.worker, init, sizeof(*init), TAG_INIT,
                                      (ucp_tag_t)-1, &rp),
                 deadline - now_s(), "getter: recv INIT");
    if (st != UCS_OK) {
        FAIL(res, "getter %d: no INIT: %s", idx, ucs_status_string(st));
    }
    my_idx = init->idx;
    if (init->size != c->size || init->npackets != c->npackets) {
        FAIL(res, "getter %d: INIT does not match configuration", idx);
    }
    st = ucp_ep_rkey_unpack(ep, init->rkey, &rkey);
    if (st != UCS_OK) {
        rkey = NULL;
        FAIL(res, "getter %d: ucp_ep_rkey_unpack: %s", idx, ucs_status_string(st));
    }
    for (int i = 0; i < W; i++) {
        sl[i].buf = local + (size_t)i * c->size;
    }

    uint64_t spins = 0;
    while (completed < c->npackets) {
        int did = ucp_worker_progress(u.worker) != 0;
        for (int i = 0; i < W; i++) {
            gslot_t *s = &sl[i];
            if (s->state != SL_FREE && s->req != NULL) {
                st = ucp_request_check_status(s->req);
                if (st == UCS_INPROGRESS) {
                    continue;
                }
                ucp_request_free(s->req);
                s->req = NULL;
                if (st != UCS_OK) {
                    FAIL(res, "getter %d: request in state %d failed: %s", idx,
                         s->state, ucs_status_string(st));
                }
            }
            if (s->state != SL_FREE || posted < c->npackets) {
                did = 1; /* a state transition happens below */
            }
            switch (s->state) {
            case SL_FREE:
                if (posted >= c->npackets) {
                    break;
                }
                memset(&rp, 0, sizeof(rp));
                s->req = ucp_tag_recv_nbx(u.worker, &s->desc, sizeof(s->desc),
                                          TAG_DESC, (ucp_tag_t)-1, &rp);
                if (UCS_PTR_IS_ERR(s->req)) {
                    FAIL(res, "getter %d: recv DESC: %s", idx,
                         ucs_status_string(UCS_PTR_STATUS(s->req)));
                }
                posted++;
                s->state = SL_RECV;
                break;
            case SL_RECV:
                if (s->desc.len != c->size || s->desc.seq >= c->npackets) {
                    FAIL(res, "getter %d: bad descriptor", idx);
                }
                memset(&rp, 0, sizeof(rp));
                rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
                rp.cb.send      = on_get_done;
                rp.user_data    = s;
                s->t1 = 0;
                s->t0 = now_s();
                s->req = ucp_get_nbx(ep, s->buf, s->desc.len, s->desc.addr, rkey, &rp);
                if (UCS_PTR_IS_ERR(s->req)) {
                    FAIL(res, "getter %d: ucp_get_nbx: %s", idx,
                         ucs_status_string(UCS_PTR_STATUS(s->req)));
                }
                s->state = SL_GET;
                break;
            case SL_GET: {
                double t1 = s->t1 > 0 ? s->t1 : now_s();
                const uint64_t *w = (const uint64_t *)s->buf;
                for (size_t j = 0; j < c->size / 8; j++) {
                    if (w[j] != pat_word(s->desc.seq, j)) {
                        FAIL(res, "getter %d: data mismatch in packet %llu at word %zu",
                             idx, (unsigned long long)s->desc.seq, j);
                    }
                }
                lat[completed] = (float)((t1 - s->t0) * 1e6);
                completed++;
                res->bytes += s->desc.len;
                res->gets++;
                s->done.seq = s->desc.seq;
                s->done.idx = my_idx;
                memset(&rp, 0, sizeof(rp));
                s->req = ucp_tag_send_nbx(ep, &s->done, sizeof(s->done), TAG_DONE, &rp);
                if (UCS_PTR_IS_ERR(s->req)) {
                    FAIL(res, "getter %d: send DONE: %s", idx,
                         ucs_status_string(UCS_PTR_STATUS(s->req)));
                }
                s->state = SL_SEND;
                break;
            }
            case SL_SEND:
                s->state = SL_FREE;
                break;
            }
        }
        if (!did) {
            if (++spins > 64) {
                ux_idle(&u, 1);
                spins = 0;
            }
            if (now_s() > deadline) {
                FAIL(res, "getter %d: timeout after %llu of %llu packets", idx,
                     (unsigned long long)completed, (unsigned long long)c->npackets);
            }
        } else {
            spins = 0;
        }
    }
    rma_lanes(ep, res->rma_lanes, sizeof(res->rma_lanes));
    /* Flush outstanding DONE sends, then wait for the owner to finish. */
    for (int i = 0; i < W; i++) {
        if (sl[i].req != NULL) {
            st = ux_wait(&u, sl[i].req, deadline - now_s(), "getter: final DONE");
            sl[i].req = NULL;
            if (st != UCS_OK) {
                FAIL(res, "getter %d: final DONE: %s", idx, ucs_status_string(st));
            }
        }
    }
    {
        uint64_t bye = 0;
        memset(&rp, 0, sizeof(rp));
        st = ux_wait(&u, ucp_tag_recv_nbx(u.worker, &bye, sizeof(bye), TAG_BYE,
                                          (ucp_tag_t)-1, &rp),
                     deadline - now_s(), "getter: recv BYE");
        if (st != UCS_OK) {
            FAIL(res, "getter %d: no BYE: %s", idx, ucs_status_string(st));
        }
    }
    /* After BYE the owner may close at any moment: expected. */
    ux_expect_disconnect();
    /* Wait for the owner's go (every getter has its BYE), progressing. */
    {
        int go = 0;
        while (!go) {
            char b;
            struct pollfd pfd = {go_rfd, POLLIN, 0};
            if (now_s() > deadline) {
                FAIL(res, "getter %d: owner never finished", idx);
            }
            ux_idle(&u, 5);
            if (poll(&pfd, 1, 0) == 1) {
                if (read(go_rfd, &b, 1) != 1) {
                    FAIL(res, "getter %d: owner went away", idx);
                }
                go = 1;
            }
        }
    }
    res->ok = 1;
out:
    if (have_u) {
        for (int i = 0; sl != NULL && i < W; i++) {
            if (sl[i].req != NULL) {
                ucp_request_cancel(u.worker, sl[i].req);
                ucp_worker_progress(u.worker);
                ucp_request_free(sl[i].req);
            }
        }
        if (rkey != NULL) {
            ucp_rkey_destroy(rkey);
        }
        /* flush close, concurrent with the owner's (see owner teardown) */
        ux_close_ep(&u, ep, res->ok ? 0 : c->err_peer, 3.0);
        if (res->ok) {
            (void)write_full(closed_wfd, "c", 1);
        }
        if (memh != NULL && (st = ucp_mem_unmap(u.ctx, memh)) != UCS_OK) {
            fprintf(stderr, "getter: ucp_mem_unmap: %s\n", ucs_status_string(st));
        }
        ux_fini(&u);
    }
    free(local);
    free(init);
    free(sl);
    return res->ok ? 0 : 1;
}

/* ===================== supervisor ===================== */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int      ok;
    char     lanes[128];
    uint64_t bytes;
    double   seconds, gbps, gbps_per, mean, p50, p99;
} result_t;

static int run_one(const cfg_t *c, result_t *r)
{
    const int R = c->getters;
    size_t shsz = sizeof(shared_t) + sizeof(float) * (size_t)R * c->npackets;
    pid_t pids[MAX_GETTERS + 1];
    int np = 0, pp[MAX_GETTERS][2], cp[2], gp[2];
    int failed = 0;

    memset(r, 0, sizeof(*r));
    g_sh = mmap(NULL, shsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    if (pipe(cp) != 0 || pipe(gp) != 0) {
        perror("pipe");
        return -1;
    }
    for (int i = 0; i < R; i++) {
        if (pipe(pp[i]) != 0) {
            perror("pipe");
            return -1;
        }
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        child_stdout_to_stderr();
        int wfd[MAX_GETTERS];
        for (int i = 0; i < R; i++) {
            close(pp[i][0]);
            wfd[i] = pp[i][1];
        }
        close(cp[1]);
        close(gp[0]);
        ux_set_role("owner");
        _exit(owner_main(c, wfd, gp[1], cp[0]));
    }
    if (pid < 0) {
        perror("fork");
        failed = 1;
    } else {
        pids[np++] = pid;
    }
    for (int i = 0; i < R && !failed; i++) {
        pid = fork();
        if (pid == 0) {
            child_stdout_to_stderr();
            for (int k = 0; k < R; k++) {
                close(pp[k][1]);
                if (k != i) {
                    close(pp[k][0]);
                }
            }
            close(cp[0]);
            close(gp[1]);
            ux_set_role("getter");
            _exit(getter_main(c, i, pp[i][0], gp[0], cp[1]));
        }
        if (pid < 0) {
            perror("fork");
            failed = 1;
        } else {
            pids[np++] = pid;
        }
    }
    for (int i = 0; i < R; i++) {
        close(pp[i][0]);
        close(pp[i][1]);
    }
    close(cp[0]);
    close(cp[1]);
    close(gp[0]);
    close(gp[1]);
    /* Reap everyone; SIGKILL all if the run goes over the time limit. */
    double deadline = now_s() + c->timeout + 10.0;
    int left = np, killed = 0;
    while (left > 0) {
        int status;
        pid_t w = waitpid(-1, &status, WNOHANG);
        if (w > 0) {
            for (int i = 0; i < np; i++) {
                if (pids[i] == w) {
                    pids[i] = -1;
                    left--;
                    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        failed = 1;
                        /* one side failed: the others cannot finish */
                        for (int k = 0; k < np; k++) {
                            if (pids[k] > 0) {
                                kill(pids[k], SIGKILL);
                            }
                        }
                        killed = 1;
                        if (WIFSIGNALED(status) && !killed) {
                            fprintf(stderr, "%s exited on signal %d\n",
                                    i == 0 ? "owner" : "getter", WTERMSIG(status));
                        }
                    }
                }
            }
            continue;
        }
        if (w < 0 && errno != EINTR) {
            break;
        }
        if (now_s() > deadline && !killed) {
            fprintf(stderr, "run over time limit: killing children\n");
            for (int i = 0; i < np; i++) {
                if (pids[i] > 0) {
                    kill(pids[i], SIGKILL);
                }
            }
            killed = 1;
            failed = 1;
        }
        usleep(20000);
    }

    uint64_t n = 0;
    double sum = 0;
    for (int i = 0; i < R; i++) {
        if (!g_sh->g[i].ok) {
            failed = 1;
        }
        r->bytes += g_sh->g[i].bytes;
        /* gather this getter's latencies (compacted) */
        float *src = g_sh->lat_us + (size_t)i * c->npackets;
        for (uint64_t k = 0; k < g_sh->g[i].gets; k++) {
            g_sh->lat_us[n] = src[k];
            sum += src[k];
            n++;
        }
    }
    if (!g_sh->owner.ok) {
        failed = 1;
    }
    r->seconds = g_sh->owner.seconds;
    snprintf(r->lanes, sizeof(r->lanes), "%s",
             g_sh->g[0].rma_lanes[0] ? g_sh->g[0].rma_lanes : "?");
    if (n > 0) {
        qsort(g_sh->lat_us, n, sizeof(float), cmp_float);
        r->mean = sum / (double)n;
        r->p50  = g_sh->lat_us[(size_t)((double)(n - 1) * 0.50)];
        r->p99  = g_sh->lat_us[(size_t)((double)(n - 1) * 0.99)];
    }
    if (r->seconds > 0) {
        r->gbps     = (double)r->bytes / r->seconds / 1e9;
        r->gbps_per = r->gbps / R;
    }
    r->ok = !failed;
    munmap(g_sh, shsz);
    g_sh = NULL;
    return failed ? -1 : 0;
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end != NULL) {
        switch (*end) {
        case 'k': case 'K': v *= 1024; break;
        case 'm': case 'M': v *= 1024 * 1024; break;
        case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
        default: break;
        }
    }
    return (size_t)v;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
        "usage: %s [-s SIZE | --sweep] [-r GETTERS] [-n PACKETS] [-b RINGBUFS]\n"
        "          [-w WINDOW] [--tls UCX_TLS] [--err-handling] [--ucx-alloc]\n"
        "          [--csv]\n"
        "          [--timeout SEC]\n"
        "  -s SIZE         packet size (default 64K; suffix K/M accepted)\n"
        "  --sweep         sizes 4K,16K,64K,256K,1M,4M\n"
        "  -r GETTERS      getter processes (default 1, max %d)\n"
        "  -n PACKETS      packets (default: 1 GiB per getter / SIZE, within 256..16384)\n"
        "  -b RINGBUFS     owner ring buffers (default 64)\n"
        "  -w WINDOW       gets in flight per getter (default 8)\n"
        "  --tls LIST      UCX_TLS for owner and getters (default: environment)\n"
        "  --err-handling  UCP_ERR_HANDLING_MODE_PEER on all endpoints\n"
        "  --ucx-alloc     the owner's ring is allocated by UCX (ucp_mem_map\n"
        "                  ALLOCATE), as hdfs-rdma's buffer pools are\n"
        "  --csv           CSV output\n"
        "  --timeout SEC   limit per run (default 60); children are killed after\n",
        argv0, MAX_GETTERS);
}

int main(int argc, char **argv)
{
    cfg_t c = {.size = 64 * 1024, .getters = 1, .npackets = 0, .nbuf = 64,
               .window = 8, .tls = NULL, .err_peer = 0, .timeout = 60};
    int sweep = 0, csv = 0;
    static const struct option lo[] = {
        {"sweep", no_argument, NULL, 'S'},
        {"tls", required_argument, NULL, 'T'},
        {"err-handling", no_argument, NULL, 'E'},
        {"ucx-alloc", no_argument, NULL, 'A'},
        {"csv", no_argument, NULL, 'C'},
        {"timeout", required_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "s:r:n:b:w:h", lo, NULL)) != -1) {
        switch (opt) {
        case 's': c.size = parse_size(optarg); break;
        case 'r': c.getters = atoi(optarg); break;
        case 'n': c.npackets = strtoull(optarg, NULL, 10); break;
        case 'b': c.nbuf = atoi(optarg); break;
        case 'w': c.window = atoi(optarg); break;
        case 'S': sweep = 1; break;
        case 'T': c.tls = optarg; break;
        case 'E': c.err_peer = 1; break;
        case 'A': c.ucx_alloc = 1; break;
        case 'C': csv = 1; break;
        case 'O': c.timeout = atof(optarg); break;
        case 'h': usage(argv[0]); return 0;
        default: usage(argv[0]); return 2;
        }
    }
    if (c.getters < 1 || c.getters > MAX_GETTERS || c.nbuf < 1 || c.window < 1 ||
        c.size < 8 || c.size % 8 != 0 || c.timeout <= 0) {
        fprintf(stderr, "invalid arguments (size must be a multiple of 8)\n");
        usage(argv[0]);
        return 2;
    }
    if (c.tls != NULL) {
        setenv("UCX_TLS", c.tls, 1); /* same value the children put in their config */
    }
    const char *tls_name = getenv("UCX_TLS") ? getenv("UCX_TLS") : "default";

    size_t sizes[6] = {4096, 16384, 65536, 262144, 1 << 20, 4 << 20};
    int nsizes = 6;
    if (!sweep) {
        sizes[0] = c.size;
        nsizes   = 1;
    }
    uint64_t n_given = c.npackets;
    int rc = 0;
    if (csv) {
        printf("size,getters,tls,err_handling,bytes,seconds,gbps_aggregate,"
               "gbps_per_getter,lat_mean_us,lat_p50_us,lat_p99_us\n");
    }
    for (int k = 0; k < nsizes; k++) {
        cfg_t cc = c;
        result_t r;
        cc.size = sizes[k];
        if (n_given == 0) {
            uint64_t n = (1ULL << 30) / cc.size;
            cc.npackets = n < 256 ? 256 : n > 16384 ? 16384 : n;
        }
        if (run_one(&cc, &r) != 0) {
            rc = 1;
        }
        if (csv) {
            printf("%zu,%d,\"%s\",%s,%llu,%.4f,%.3f,%.3f,%.1f,%.1f,%.1f%s\n", cc.size,
                   cc.getters, tls_name, cc.err_peer ? "peer" : "none",
                   (unsigned long long)r.bytes, r.seconds, r.gbps, r.gbps_per,
                   r.mean, r.p50, r.p99, r.ok ? "" : ",FAILED");
        } else {
            printf("size=%zu getters=%d tls=%s err_handling=%s packets=%llu: "
                   "%s %llu bytes in %.3f s = %.3f GB/s aggregate, %.3f GB/s per getter; "
                   "get latency mean %.1f us p50 %.1f us p99 %.1f us; "
                   "RMA lanes (getter 0): %s\n",
                   cc.size, cc.getters, tls_name, cc.err_peer ? "peer" : "none",
                   (unsigned long long)cc.npackets, r.ok ? "OK" : "FAILED",
                   (unsigned long long)r.bytes, r.seconds, r.gbps, r.gbps_per,
                   r.mean, r.p50, r.p99, r.lanes);
        }
        fflush(stdout);
    }
    return rc;
}
