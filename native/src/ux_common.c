#define _GNU_SOURCE
#include "ux_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ux_init(ux_t *u, const char *tls)
{
    ucp_config_t *cfg = NULL;
    ucp_params_t params;
    ucp_worker_params_t wp;
    ucs_status_t st;

    memset(u, 0, sizeof(*u));
    u->efd = -1;
    st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_config_read: %s\n", ucs_status_string(st));
        return -1;
    }
    if (tls != NULL && tls[0] != '\0') {
        st = ucp_config_modify(cfg, "TLS", tls);
        if (st != UCS_OK) {
            fprintf(stderr, "ucp_config_modify(TLS=%s): %s\n", tls,
                    ucs_status_string(st));
            ucp_config_release(cfg);
            return -1;
        }
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    st = ucp_init(&params, cfg, &u->ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_init: %s\n", ucs_status_string(st));
        return -1;
    }
    memset(&wp, 0, sizeof(wp));
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(u->ctx, &wp, &u->worker);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(st));
        ucp_cleanup(u->ctx);
        u->ctx = NULL;
        return -1;
    }
    st = ucp_worker_get_efd(u->worker, &u->efd);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_get_efd: %s\n", ucs_status_string(st));
        u->efd = -1; /* ux_idle falls back to short sleeps */
    }
    return 0;
}

void ux_fini(ux_t *u)
{
    if (u->worker != NULL) {
        ucp_worker_destroy(u->worker);
        u->worker = NULL;
    }
    if (u->ctx != NULL) {
        ucp_cleanup(u->ctx);
        u->ctx = NULL;
    }
}

void ux_idle(ux_t *u, int max_ms)
{
    ucs_status_t st;
    struct pollfd pfd;
    int i;

    for (i = 0; i < 32; i++) {
        if (ucp_worker_progress(u->worker) != 0) {
            return;
        }
    }
    if (u->efd < 0) {
        struct timespec ts = {0, 200000}; /* 0.2 ms */
        nanosleep(&ts, NULL);
        return;
    }
    st = ucp_worker_arm(u->worker);
    if (st == UCS_ERR_BUSY) {
        return; /* events pending: caller progresses again */
    }
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_arm: %s\n", ucs_status_string(st));
        return;
    }
    pfd.fd      = u->efd;
    pfd.events  = POLLIN;
    pfd.revents = 0;
    (void)poll(&pfd, 1, max_ms);
}

ucs_status_t ux_wait(ux_t *u, ucs_status_ptr_t req, double timeout_s,
                     const char *what)
{
    double deadline = now_s() + timeout_s;
    ucs_status_t st;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
        fprintf(stderr, "%s: %s\n", what, ucs_status_string(st));
        return st;
    }
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (now_s() > deadline) {
            fprintf(stderr, "%s: timed out after %.1f s\n", what, timeout_s);
            ucp_request_cancel(u->worker, req);
            /* let the cancel complete so the request can be freed */
            for (int i = 0; i < 1000 &&
                 ucp_request_check_status(req) == UCS_INPROGRESS; i++) {
                ucp_worker_progress(u->worker);
            }
            if (ucp_request_check_status(req) != UCS_INPROGRESS) {
                ucp_request_free(req);
            }
            return UCS_ERR_TIMED_OUT;
        }
        ux_idle(u, 10);
    }
    ucp_request_free(req);
    if (st != UCS_OK) {
        fprintf(stderr, "%s: %s\n", what, ucs_status_string(st));
    }
    return st;
}

static void on_conn_request(ucp_conn_request_h cr, void *arg)
{
    ux_connq_t *q = arg;
    if (q->n < UX_MAX_CONN) {
        q->req[q->n++] = cr;
    } else {
        fprintf(stderr, "too many connection requests, ignoring one\n");
    }
}

int ux_listen(ux_t *u, ux_connq_t *q, ucp_listener_h *l, uint16_t *port)
{
    struct sockaddr_in sin;
    ucp_listener_params_t lp;
    ucp_listener_attr_t la;
    ucs_status_t st;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = 0;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    memset(&lp, 0, sizeof(lp));
    lp.field_mask         = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                            UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr      = (const struct sockaddr *)&sin;
    lp.sockaddr.addrlen   = sizeof(sin);
    lp.conn_handler.cb    = on_conn_request;
    lp.conn_handler.arg   = q;
    st = ucp_listener_create(u->worker, &lp, l);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_listener_create: %s\n", ucs_status_string(st));
        return -1;
    }
    memset(&la, 0, sizeof(la));
    la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    st = ucp_listener_query(*l, &la);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_listener_query: %s\n", ucs_status_string(st));
        ucp_listener_destroy(*l);
        return -1;
    }
    *port = ntohs(((const struct sockaddr_in *)&la.sockaddr)->sin_port);
    return 0;
}

static int g_expect_disconnect;
static const char *g_role = "";

void ux_set_role(const char *role)
{
    g_role = role;
}

void ux_expect_disconnect(void)
{
    g_expect_disconnect = 1;
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    if (g_expect_disconnect) {
        return;
    }
    fprintf(stderr, "[pid %d%s%s] endpoint error: %s\n", (int)getpid(),
            g_role[0] ? " " : "", g_role, ucs_status_string(status));
}

static void fill_err(ucp_ep_params_t *ep, int err_peer)
{
    if (err_peer) {
        ep->field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep->err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        ep->err_handler.cb  = on_ep_error;
        ep->err_handler.arg = NULL;
    }
}

int ux_accept(ux_t *u, ucp_conn_request_h cr, int err_peer, ucp_ep_h *ep)
{
    ucp_ep_params_t p;
    ucs_status_t st;

    memset(&p, 0, sizeof(p));
    p.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    p.conn_request = cr;
    fill_err(&p, err_peer);
    st = ucp_ep_create(u->worker, &p, ep);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_ep_create(accept): %s\n", ucs_status_string(st));
        return -1;
    }
    return 0;
}

int ux_connect(ux_t *u, uint16_t port, int err_peer, ucp_ep_h *ep)
{
    struct sockaddr_in sin;
    ucp_ep_params_t p;
    ucs_status_t st;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    memset(&p, 0, sizeof(p));
    p.field_mask       = UCP_EP_PARAM_FIELD_FLAGS |
                         UCP_EP_PARAM_FIELD_SOCK_ADDR;
    p.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr    = (const struct sockaddr *)&sin;
    p.sockaddr.addrlen = sizeof(sin);
    fill_err(&p, err_peer);
    st = ucp_ep_create(u->worker, &p, ep);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_ep_create(connect 127.0.0.1:%u): %s\n",
                (unsigned)port, ucs_status_string(st));
        return -1;
    }
    return 0;
}

int ux_flush_ep(ux_t *u, ucp_ep_h ep, double timeout_s)
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    return ux_wait(u, ucp_ep_flush_nbx(ep, &p), timeout_s, "ucp_ep_flush_nbx") ==
           UCS_OK ? 0 : -1;
}

/* Close outcomes that only mean the peer closed or left first: the normal
 * end of a connection, not worth a message. */
static int peer_gone(ucs_status_t st)
{
    return st == UCS_ERR_CONNECTION_RESET || st == UCS_ERR_ENDPOINT_TIMEOUT ||
           st == UCS_ERR_NOT_CONNECTED;
}

void ux_close_eps(ux_t *u, ucp_ep_h *eps, int n, int force, double timeout_s)
{
    ucp_request_param_t p;
    void **reqs = calloc((size_t)(n > 0 ? n : 1), sizeof(void *));
    double deadline = now_s() + timeout_s;
    int left = 0;

    if (reqs == NULL) {
        return;
    }
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    for (int i = 0; i < n; i++) {
        if (eps[i] == NULL) {
            continue;
        }
        void *r = ucp_ep_close_nbx(eps[i], &p);
        if (UCS_PTR_IS_ERR(r)) {
            ucs_status_t st = UCS_PTR_STATUS(r);
            /* the peer closing first is the normal end of a run */
            if (!peer_gone(st)) {
                fprintf(stderr, "ucp_ep_close_nbx: %s\n", ucs_status_string(st));
            }
        } else if (r != NULL) {
            reqs[i] = r;
            left++;
        }
    }
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (reqs[i] == NULL) {
                continue;
            }
            ucs_status_t st = ucp_request_check_status(reqs[i]);
            if (st == UCS_INPROGRESS) {
                continue;
            }
            if (st != UCS_OK && !peer_gone(st)) {
                fprintf(stderr, "ucp_ep_close_nbx: %s\n", ucs_status_string(st));
            }
            ucp_request_free(reqs[i]);
            reqs[i] = NULL;
            left--;
        }
        if (left == 0) {
            break;
        }
        if (now_s() > deadline) {
            /* The requests stay owned by UCX; ucp_worker_destroy, which
             * follows, releases them. */
            fprintf(stderr, "ucp_ep_close_nbx: %d endpoint(s) not closed after %.1f s\n",
                    left, timeout_s);
            break;
        }
        ux_idle(u, 10);
    }
    free(reqs);
}

void ux_close_ep(ux_t *u, ucp_ep_h ep, int force, double timeout_s)
{
    ux_close_eps(u, &ep, 1, force, timeout_s);
}

char *ux_ep_info(ucp_ep_h ep)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) {
        return NULL;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    return buf;
}

void child_stdout_to_stderr(void)
{
    fflush(stdout);
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        perror("dup2");
    }
}

int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int read_full_timeout(int fd, void *buf, size_t n, int timeout_ms)
{
    char *p = buf;
    double deadline = now_s() + timeout_ms / 1000.0;
    while (n > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left = (int)((deadline - now_s()) * 1000.0);
        if (left <= 0) {
            return -1;
        }
        int r = poll(&pfd, 1, left);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return -1;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}
