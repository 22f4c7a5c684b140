/*
 * ucx_probe: what can UCX do on this machine?
 *  - UCX version,
 *  - transports/devices UCX sees (uct components -> memory domains -> tl resources),
 *  - for each UCX_TLS setting, whether a one-sided get between two local
 *    processes works (owner exposes a 64 KiB registered buffer; getter connects
 *    through a listener on 127.0.0.1, receives address+rkey by tag send, does
 *    ucp_get_nbx and verifies the bytes), and which lanes the endpoint used.
 * The main process does not use UCP itself: each check runs in two forked
 * children, bounded by a timeout; children are killed and reaped on timeout.
 */
#define _GNU_SOURCE
#include "ux_common.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uct/api/uct.h>

#define PROBE_SIZE   (64 * 1024)
#define TAG_DESC     0x5052000000000001ULL
#define TAG_DONE     0x5052000000000002ULL
#define DESC_MAX     4096

typedef struct {
    uint64_t addr;
    uint64_t len;
    uint32_t rkey_len;
    char     rkey[DESC_MAX - 20];
} __attribute__((packed)) desc_msg_t;

typedef struct {
    int    ok;          /* 1: get verified */
    double get_us;      /* time of the one get */
    char   err[256];
    char   lanes[3400]; /* "lane[...]" lines of ucp_ep_print_info */
} probe_res_t;

static double g_timeout = 10.0;

static uint8_t pattern(size_t i)
{
    return (uint8_t)((i * 7u + 13u) ^ (i >> 8));
}

/* Pipe barrier between owner and getter, progressing UCX while waiting
 * (bounded). Used before and after closing: on UCX 1.13 a flush close that
 * starts after the peer has already closed (or exited) logs "error during
 * flush: Endpoint timeout"; closing both sides together is quiet. */
static void close_barrier(ux_t *u, int wfd, int rfd)
{
    double until = now_s() + 2.0;
    char b;
    (void)write_full(wfd, "c", 1);
    while (now_s() < until) {
        struct pollfd pfd = {rfd, POLLIN, 0};
        ux_idle(u, 5);
        if (poll(&pfd, 1, 0) == 1) {
            (void)read(rfd, &b, 1);
            return;
        }
    }
}

/* ---------- owner (exposes memory) ---------- */
static int owner_main(const char *tls, int port_wfd, int back_rfd)
{
    ux_t u;
    ux_connq_t q = {.n = 0};
    ucp_listener_h l = NULL;
    ucp_mem_h memh = NULL;
    void *rkey_buf = NULL;
    size_t rkey_len = 0;
    ucp_ep_h ep = NULL;
    uint16_t port = 0;
    int rc = 1;
    ucs_status_t st;
    double deadline = now_s() + g_timeout;
    uint8_t *buf = aligned_alloc(4096, PROBE_SIZE);
    desc_msg_t *msg = calloc(1, sizeof(*msg));
    uint64_t done_word = 0;

    if (buf == NULL || msg == NULL) {
        return 1;
    }
    for (size_t i = 0; i < PROBE_SIZE; i++) {
        buf[i] = pattern(i);
    }
    if (ux_init(&u, tls) != 0) {
        write_full(port_wfd, &port, sizeof(port)); /* port 0 = failed */
        return 1;
    }
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = buf;
    mp.length     = PROBE_SIZE;
    st = ucp_mem_map(u.ctx, &mp, &memh);
    if (st != UCS_OK) {
        fprintf(stderr, "owner: ucp_mem_map: %s\n", ucs_status_string(st));
        goto out;
    }
    st = ucp_rkey_pack(u.ctx, memh, &rkey_buf, &rkey_len);
    if (st != UCS_OK) {
        fprintf(stderr, "owner: ucp_rkey_pack: %s\n", ucs_status_string(st));
        goto out;
    }
    if (rkey_len > sizeof(msg->rkey)) {
        fprintf(stderr, "owner: rkey too large (%zu)\n", rkey_len);
        goto out;
    }
    if (ux_listen(&u, &q, &l, &port) != 0) {
        goto out;
    }
    if (write_full(port_wfd, &port, sizeof(port)) != 0) {
        goto out;
    }
    while (q.n == 0) {
        if (now_s() > deadline) {
            fprintf(stderr, "owner: no connection request\n");
            goto out;
        }
        ux_idle(&u, 20);
    }
    if (ux_accept(&u, q.req[0], 0, &ep) != 0) {
        goto out;
    }
    /* let wireup finish before the first send (see ux_flush_ep) */
    if (ux_flush_ep(&u, ep, deadline - now_s()) != 0) {
        goto out;
    }
    msg->addr     = (uint64_t)(uintptr_t)buf;
    msg->len      = PROBE_SIZE;
    msg->rkey_len = (uint32_t)rkey_len;
    memcpy(msg->rkey, rkey_buf, rkey_len);

    ucp_request_param_t rp;
    memset(&rp, 0, sizeof(rp));
    st = ux_wait(&u, ucp_tag_send_nbx(ep, msg, 20 + rkey_len, TAG_DESC, &rp),
                 deadline - now_s(), "owner: tag send descriptor");
    if (st != UCS_OK) {
        goto out;
    }
    /* Keep progressing until the getter says it is done: over tcp the get
     * is served by this process's progress. */
    memset(&rp, 0, sizeof(rp));
    st = ux_wait(&u, ucp_tag_recv_nbx(u.worker, &done_word, sizeof(done_word),
                                      TAG_DONE, (ucp_tag_t)-1, &rp),
                 deadline - now_s(), "owner: wait for done");
    rc = (st == UCS_OK) ? 0 : 1;
out:
    if (ep != NULL) {
        if (rc == 0) {
            close_barrier(&u, port_wfd, back_rfd);
        }
        ux_close_ep(&u, ep, 0, 2.0);
        if (rc == 0) {
            close_barrier(&u, port_wfd, back_rfd);
        }
    }
    if (l != NULL) {
        ucp_listener_destroy(l);
    }
    if (rkey_buf != NULL) {
        ucp_rkey_buffer_release(rkey_buf);
    }
    if (memh != NULL) {
        st = ucp_mem_unmap(u.ctx, memh);
        if (st != UCS_OK) {
            fprintf(stderr, "owner: ucp_mem_unmap: %s\n", ucs_status_string(st));
        }
    }
    ux_fini(&u);
    free(buf);
    free(msg);
    return rc;
}

/* Keep only the lines that describe lanes. */
static void extract_lanes(const char *info, char *out, size_t outsz)
{
    size_t used = 0;
    const char *p = info;
    out[0] = '\0';
    while (p != NULL && *p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (memmem(p, n, "lane[", 5) != NULL) {
            while (n > 0 && (*p == '#' || *p == ' ')) {
                p++;
                n--;
            }
            if (used + n + 2 < outsz) {
                memcpy(out + used, p, n);
                used += n;
                out[used++] = '\n';
                out[used]   = '\0';
            }
        }
        p = nl ? nl + 1 : NULL;
    }
}

/* ---------- getter ---------- */
static int getter_main(const char *tls, int port_rfd, int res_wfd, int back_wfd)
{
    probe_res_t *res = calloc(1, sizeof(*res));
    desc_msg_t *msg = calloc(1, sizeof(*msg));
    uint8_t *dst = aligned_alloc(4096, PROBE_SIZE);
    ux_t u;
    int have_u = 0;
    ucp_ep_h ep = NULL;
    ucp_rkey_h rkey = NULL;
    uint16_t port = 0;
    ucs_status_t st;
    double deadline = now_s() + g_timeout;
    uint64_t done_word = 1;
    ucp_request_param_t rp;

    if (res == NULL || msg == NULL || dst == NULL) {
        return 1;
    }
    if (read_full_timeout(port_rfd, &port, sizeof(port),
                          (int)(g_timeout * 1000)) != 0 || port == 0) {
        snprintf(res->err, sizeof(res->err), "owner did not start listening");
        goto out;
    }
    if (ux_init(&u, tls) != 0) {
        snprintf(res->err, sizeof(res->err), "ucp init failed (TLS=%s)", tls);
        goto out;
    }
    have_u = 1;
    if (ux_connect(&u, port, 0, &ep) != 0) {
        snprintf(res->err, sizeof(res->err), "ucp_ep_create failed");
        goto out;
    }
    memset(&rp, 0, sizeof(rp));
    st = ux_wait(&u, ucp_tag_recv_nbx(u.worker, msg, sizeof(*msg), TAG_DESC,
                                      (ucp_tag_t)-1, &rp),
                 deadline - now_s(), "getter: receive descriptor");
    if (st != UCS_OK) {
        snprintf(res->err, sizeof(res->err), "receive descriptor: %s",
                 ucs_status_string(st));
        goto out;
    }
    st = ucp_ep_rkey_unpack(ep, msg->rkey, &rkey);
    if (st != UCS_OK) {
        snprintf(res->err, sizeof(res->err), "ucp_ep_rkey_unpack: %s",
                 ucs_status_string(st));
        goto out;
    }
    memset(dst, 0, PROBE_SIZE);
    memset(&rp, 0, sizeof(rp));
    double t0 = now_s();
    st = ux_wait(&u, ucp_get_nbx(ep, dst, msg->len, msg->addr, rkey, &rp),
                 deadline - now_s(), "getter: ucp_get_nbx");
    res->get_us = (now_s() - t0) * 1e6;
    if (st != UCS_OK) {
        snprintf(res->err, sizeof(res->err), "get: %s", ucs_status_string(st));
        goto lanes;
    }
    res->ok = 1;
    for (size_t i = 0; i < PROBE_SIZE; i++) {
        if (dst[i] != pattern(i)) {
            snprintf(res->err, sizeof(res->err),
                     "data mismatch at byte %zu: got 0x%02x want 0x%02x", i,
                     dst[i], pattern(i));
            res->ok = 0;
            break;
        }
    }
lanes:
    {
        char *info = ux_ep_info(ep);
        if (info != NULL) {
            extract_lanes(info, res->lanes, sizeof(res->lanes));
            free(info);
        }
    }
    memset(&rp, 0, sizeof(rp));
    (void)ux_wait(&u, ucp_tag_send_nbx(ep, &done_word, sizeof(done_word),
                                       TAG_DONE, &rp),
                  2.0, "getter: tag send done");
out:
    if (rkey != NULL) {
        ucp_rkey_destroy(rkey);
    }
    if (ep != NULL) {
        int sync = res->ok;
        if (sync) {
            close_barrier(&u, back_wfd, port_rfd);
        }
        ux_close_ep(&u, ep, 0, 2.0);
        if (sync) {
            close_barrier(&u, back_wfd, port_rfd);
        }
    }
    if (have_u) {
        ux_fini(&u);
    }
    int rc = write_full(res_wfd, res, sizeof(*res)) == 0 && res->ok ? 0 : 1;
    free(res);
    free(msg);
    free(dst);
    return rc;
}

/* Wait for a child until deadline; SIGKILL it after. Returns exit status or -1. */
static int reap(pid_t pid, double deadline)
{
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        if (r < 0 && errno != EINTR) {
            return -1;
        }
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(10000);
    }
}

static void run_check(const char *tls, probe_res_t *res)
{
    int port_pipe[2], res_pipe[2], back_pipe[2];
    pid_t owner, getter;

    memset(res, 0, sizeof(*res));
    if (pipe(port_pipe) != 0 || pipe(res_pipe) != 0 || pipe(back_pipe) != 0) {
        snprintf(res->err, sizeof(res->err), "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    fflush(stderr);
    owner = fork();
    if (owner == 0) {
        child_stdout_to_stderr();
        close(port_pipe[0]);
        close(res_pipe[0]);
        close(res_pipe[1]);
        close(back_pipe[1]);
        _exit(owner_main(tls, port_pipe[1], back_pipe[0]));
    }
    getter = fork();
    if (getter == 0) {
        child_stdout_to_stderr();
        close(port_pipe[1]);
        close(res_pipe[0]);
        close(back_pipe[0]);
        _exit(getter_main(tls, port_pipe[0], res_pipe[1], back_pipe[1]));
    }
    close(port_pipe[0]);
    close(port_pipe[1]);
    close(back_pipe[0]);
    close(back_pipe[1]);
    close(res_pipe[1]);
    double deadline = now_s() + g_timeout + 2.0;
    if (owner < 0 || getter < 0) {
        snprintf(res->err, sizeof(res->err), "fork: %s", strerror(errno));
    } else if (read_full_timeout(res_pipe[0], res, sizeof(*res),
                                 (int)((g_timeout + 2.0) * 1000)) != 0) {
        memset(res, 0, sizeof(*res));
        snprintf(res->err, sizeof(res->err),
                 "no result within %.0f s (getter crashed or hung)", g_timeout);
    }
    close(res_pipe[0]);
    if (getter > 0 && reap(getter, deadline + 1.0) < 0 && res->ok) {
        snprintf(res->err, sizeof(res->err), "getter did not exit cleanly");
    }
    if (owner > 0 && reap(owner, deadline + 3.0) != 0 && res->err[0] == '\0') {
        snprintf(res->err, sizeof(res->err), "owner did not exit cleanly");
    }
}

/* ---------- transport listing ---------- */
typedef struct {
    char comp[32], md[32], tl[32], dev[32];
    const char *type;
} tl_entry_t;

static const char *dev_type_name(uct_device_type_t t)
{
    switch (t) {
    case UCT_DEVICE_TYPE_NET:  return "net";
    case UCT_DEVICE_TYPE_SHM:  return "shm";
    case UCT_DEVICE_TYPE_ACC:  return "acc";
    case UCT_DEVICE_TYPE_SELF: return "self";
    default:                   return "?";
    }
}

static int list_transports(tl_entry_t *out, int max)
{
    uct_component_h *comps = NULL;
    unsigned ncomp = 0;
    int n = 0;
    ucs_status_t st = uct_query_components(&comps, &ncomp);
    if (st != UCS_OK) {
        fprintf(stderr, "uct_query_components: %s\n", ucs_status_string(st));
        return 0;
    }
    for (unsigned c = 0; c < ncomp; c++) {
        uct_component_attr_t ca;
        memset(&ca, 0, sizeof(ca));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                        UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        st = uct_component_query(comps[c], &ca);
        if (st != UCS_OK) {
            fprintf(stderr, "uct_component_query: %s\n", ucs_status_string(st));
            continue;
        }
        ca.md_resources = calloc(ca.md_resource_count + 1,
                                 sizeof(*ca.md_resources));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        st = uct_component_query(comps[c], &ca);
        if (st != UCS_OK) {
            fprintf(stderr, "uct_component_query: %s\n", ucs_status_string(st));
            free(ca.md_resources);
            continue;
        }
        for (unsigned m = 0; m < ca.md_resource_count; m++) {
            uct_md_config_t *mdc = NULL;
            uct_md_h md = NULL;
            uct_tl_resource_desc_t *tls = NULL;
            unsigned ntl = 0;
            const char *mdname = ca.md_resources[m].md_name;
            st = uct_md_config_read(comps[c], NULL, NULL, &mdc);
            if (st != UCS_OK) {
                fprintf(stderr, "uct_md_config_read(%s): %s\n", mdname,
                        ucs_status_string(st));
                continue;
            }
            st = uct_md_open(comps[c], mdname, mdc, &md);
            uct_config_release(mdc);
            if (st != UCS_OK) {
                fprintf(stderr, "uct_md_open(%s): %s\n", mdname,
                        ucs_status_string(st));
                continue;
            }
            st = uct_md_query_tl_resources(md, &tls, &ntl);
            if (st != UCS_OK) {
                fprintf(stderr, "uct_md_query_tl_resources(%s): %s\n", mdname,
                        ucs_status_string(st));
                uct_md_close(md);
                continue;
            }
            for (unsigned t = 0; t < ntl && n < max; t++, n++) {
                snprintf(out[n].comp, sizeof(out[n].comp), "%s", ca.name);
                snprintf(out[n].md, sizeof(out[n].md), "%s", mdname);
                snprintf(out[n].tl, sizeof(out[n].tl), "%s", tls[t].tl_name);
                snprintf(out[n].dev, sizeof(out[n].dev), "%s", tls[t].dev_name);
                out[n].type = dev_type_name(tls[t].dev_type);
            }
            uct_release_tl_resource_list(tls);
            uct_md_close(md);
        }
        free(ca.md_resources);
    }
    uct_release_component_list(comps);
    return n;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

/* Print lane lines as a JSON array; rma_only keeps lanes used for RMA. */
static void json_lanes(FILE *f, const char *lanes, int rma_only)
{
    const char *p = lanes;
    int first = 1;
    fputc('[', f);
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        if (!rma_only || strstr(line, "rma") != NULL) {
            if (!first) {
                fputc(',', f);
            }
            json_str(f, line);
            first = 0;
        }
        p = nl ? nl + 1 : p + n;
    }
    fputc(']', f);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--json] [--timeout SEC] [--tls 'LIST;LIST;...']\n"
            "  --tls      UCX_TLS values to check, separated by ';'\n"
            "             (default: tcp;posix,tcp;sysv,tcp;cma,tcp;sm,tcp)\n"
            "  --timeout  seconds per check (default 10)\n"
            "  --json     machine-readable output on stdout\n"
            "Exit 0 if the tcp check (or, without tcp in the list, any check)"
            " works.\n",
            argv0);
}

int main(int argc, char **argv)
{
    int json = 0;
    char tls_list[1024] = "tcp;posix,tcp;sysv,tcp;cma,tcp;sm,tcp";
    char *checks[32];
    int nchecks = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--tls") == 0 && i + 1 < argc) {
            snprintf(tls_list, sizeof(tls_list), "%s", argv[++i]);
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            g_timeout = atof(argv[++i]);
            if (g_timeout <= 0) {
                g_timeout = 10.0;
            }
        } else {
            usage(argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    for (char *save = NULL, *t = strtok_r(tls_list, ";", &save);
         t != NULL && nchecks < 32; t = strtok_r(NULL, ";", &save)) {
        checks[nchecks++] = t;
    }

    static tl_entry_t tls[256];
    int ntl = list_transports(tls, 256);
    static probe_res_t res[32];
    for (int i = 0; i < nchecks; i++) {
        run_check(checks[i], &res[i]);
    }

    int tcp_ok = -1, any_ok = 0;
    for (int i = 0; i < nchecks; i++) {
        if (strcmp(checks[i], "tcp") == 0) {
            tcp_ok = res[i].ok;
        }
        any_ok |= res[i].ok;
    }
    int rc = (tcp_ok == 1 || (tcp_ok == -1 && any_ok)) ? 0 : 1;

    if (json) {
        printf("{\"ucx_version\":");
        json_str(stdout, ucp_get_version_string());
        printf(",\"transports\":[");
        for (int i = 0; i < ntl; i++) {
            printf("%s{\"component\":", i ? "," : "");
            json_str(stdout, tls[i].comp);
            printf(",\"md\":");
            json_str(stdout, tls[i].md);
            printf(",\"tl\":");
            json_str(stdout, tls[i].tl);
            printf(",\"device\":");
            json_str(stdout, tls[i].dev);
            printf(",\"type\":\"%s\"}", tls[i].type);
        }
        printf("],\"checks\":[");
        for (int i = 0; i < nchecks; i++) {
            printf("%s{\"tls\":", i ? "," : "");
            json_str(stdout, checks[i]);
            printf(",\"get_ok\":%s,\"get_us\":%.1f,\"error\":",
                   res[i].ok ? "true" : "false", res[i].get_us);
            if (res[i].err[0] != '\0') {
                json_str(stdout, res[i].err);
            } else {
                printf("null");
            }
            printf(",\"rma_lanes\":");
            json_lanes(stdout, res[i].lanes, 1);
            printf(",\"lanes\":");
            json_lanes(stdout, res[i].lanes, 0);
            printf("}");
        }
        printf("],\"tcp_ok\":%s}\n", tcp_ok == 1 ? "true" : "false");
    } else {
        printf("UCX version: %s\n", ucp_get_version_string());
        printf("Transports (component/md: tl device type):\n");
        for (int i = 0; i < ntl; i++) {
            printf("  %-8s %-10s %-8s %-12s %s\n", tls[i].comp, tls[i].md,
                   tls[i].tl, tls[i].dev, tls[i].type);
        }
        printf("Get checks (64 KiB, owner and getter in separate processes):\n");
        for (int i = 0; i < nchecks; i++) {
            printf("  UCX_TLS=%-12s get %s", checks[i],
                   res[i].ok ? "OK  " : "FAIL");
            if (res[i].ok) {
                printf(" (%.0f us)", res[i].get_us);
            }
            if (res[i].err[0] != '\0') {
                printf("  error: %s", res[i].err);
            }
            printf("\n");
            const char *p = res[i].lanes;
            while (*p != '\0') {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                int is_rma = memmem(p, n, "rma", 3) != NULL;
                printf("      %s %.*s\n", is_rma ? "RMA" : "   ", (int)n, p);
                p = nl ? nl + 1 : p + n;
            }
        }
        printf("Result: tcp get %s\n", tcp_ok == 1 ? "works" : "does NOT work");
    }
    return rc;
}
