/*
 * Small helpers shared by ucx_probe and ucx_fanout_bench: context/worker
 * setup with a chosen UCX_TLS, bounded request waits, a listener on
 * 127.0.0.1:0, connect/accept, and pipe I/O with timeouts.
 * Every UCX failure is reported with ucs_status_string().
 */
#ifndef UX_COMMON_H
#define UX_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

#define UX_MAX_CONN 64

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    int           efd;      /* worker event fd (UCP_FEATURE_WAKEUP) */
} ux_t;

typedef struct {
    ucp_conn_request_h req[UX_MAX_CONN];
    int                n;
} ux_connq_t;

double now_s(void);

/* tls: value for UCX_TLS for this context, or NULL to keep the environment. */
int  ux_init(ux_t *u, const char *tls);
void ux_fini(ux_t *u);

/* Progress a little; if nothing happens, arm the worker and sleep on its
 * event fd for at most max_ms. Use while waiting for something slow. */
void ux_idle(ux_t *u, int max_ms);

/* Wait for a request returned by a *_nbx call (NULL, error ptr or request).
 * Frees the request. Returns UCS_OK, the error, or UCS_ERR_TIMED_OUT. */
ucs_status_t ux_wait(ux_t *u, ucs_status_ptr_t req, double timeout_s,
                     const char *what);

int  ux_listen(ux_t *u, ux_connq_t *q, ucp_listener_h *l, uint16_t *port);
int  ux_accept(ux_t *u, ucp_conn_request_h cr, int err_peer, ucp_ep_h *ep);
int  ux_connect(ux_t *u, uint16_t port, int err_peer, ucp_ep_h *ep);
/* ucp_ep_flush_nbx, bounded. Call it on an endpoint accepted from a listener
 * before its first tag send: UCX 1.13 with a posix/sysv AM lane rejects an
 * early send over ~92 bytes ("Invalid am_short length", UCS_ERR_INVALID_PARAM)
 * while wireup is still under way; the flush waits for wireup to finish. */
int  ux_flush_ep(ux_t *u, ucp_ep_h ep, double timeout_s);
/* Close an endpoint (flush, or force), bounded by timeout_s. */
void ux_close_ep(ux_t *u, ucp_ep_h ep, int force, double timeout_s);
/* Same for n endpoints at once (closes run in parallel). Force needs
 * UCP_ERR_HANDLING_MODE_PEER on the endpoints (UCX rejects it otherwise). */
void ux_close_eps(ux_t *u, ucp_ep_h *eps, int n, int force, double timeout_s);

/* Label (e.g. "owner", "getter") for this process's endpoint error messages. */
void ux_set_role(const char *role);

/* From now on, endpoint errors (peer closed) are expected: do not log them. */
void ux_expect_disconnect(void);

/* Returns malloc'd text printed by ucp_ep_print_info (caller frees). */
char *ux_ep_info(ucp_ep_h ep);

/* In a forked child: UCX logs to stdout by default; keep the parent's
 * stdout (human/CSV/JSON report) clean by sending the child's to stderr. */
void child_stdout_to_stderr(void);

int write_full(int fd, const void *buf, size_t n);
/* 0 on success, -1 on error/EOF/timeout. */
int read_full_timeout(int fd, void *buf, size_t n, int timeout_ms);

#endif
