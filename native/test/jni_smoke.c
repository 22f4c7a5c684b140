/*
 * Calls the JNI entry points of libhdfsrdma.so without a JVM: a
 * minimal JNIEnv whose string and exception functions are stubs (a jstring
 * is a plain C string here), a real UCP worker and a real endpoint (to the
 * worker's own address).
 * Usage: jni_smoke path/to/libhdfsrdma.so
 */
#define _GNU_SOURCE
#include "ux_common.h"

#include <dlfcn.h>
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jstring stub_new_string_utf(JNIEnv *env, const char *s)
{
    (void)env;
    return (jstring)strdup(s);
}

static jclass stub_find_class(JNIEnv *env, const char *name)
{
    (void)env;
    return (jclass)name;
}

static const char *stub_get_string_utf_chars(JNIEnv *env, jstring s,
                                             jboolean *is_copy)
{
    (void)env;
    if (is_copy != NULL) {
        *is_copy = JNI_FALSE;
    }
    return (const char *)s;
}

static void stub_release_string_utf_chars(JNIEnv *env, jstring s,
                                          const char *chars)
{
    (void)env;
    (void)s;
    (void)chars;
}

static jint stub_throw_new(JNIEnv *env, jclass cls, const char *msg)
{
    (void)env;
    fprintf(stderr, "exception %s: %s\n", (const char *)cls, msg);
    return 0;
}

typedef jstring (*ver_fn)(JNIEnv *, jclass);
typedef jstring (*info_fn)(JNIEnv *, jclass, jlong);
typedef jboolean (*setenv_fn)(JNIEnv *, jclass, jstring, jstring);
typedef jboolean (*loaded_fn)(JNIEnv *, jclass);

/* True when the environment turns UCX's memory events, hence its rewriting
 * of libc's code, off. */
static int memory_events_off(void)
{
    const char *v = getenv("UCX_MEM_EVENTS");

    return v != NULL && (strcmp(v, "n") == 0 || strcmp(v, "no") == 0);
}

int main(int argc, char **argv)
{
    struct JNINativeInterface_ fns;
    JNIEnv env;
    ux_t u;
    ucp_ep_h ep = NULL;
    ucp_address_t *addr = NULL;
    size_t addr_len = 0;
    ucs_status_t st;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s libhdfsrdma.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    ver_fn version = (ver_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_ucxVersion");
    info_fn ep_info = (info_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_endpointInfo");
    info_fn wk_info = (info_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_workerInfo");
    setenv_fn set_env = (setenv_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_setenvIfUnset");
    loaded_fn loaded = (loaded_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_isUcxLoaded");
    ver_fn patched = (ver_fn)dlsym(lib, "Java_org_hdfsrdma_ucx_NativeIntrospection_patchedLibc");
    if (version == NULL || ep_info == NULL || wk_info == NULL ||
        set_env == NULL || loaded == NULL || patched == NULL) {
        fprintf(stderr, "missing JNI symbol\n");
        return 1;
    }
    memset(&fns, 0, sizeof(fns));
    fns.NewStringUTF = stub_new_string_utf;
    fns.FindClass    = stub_find_class;
    fns.ThrowNew     = stub_throw_new;
    fns.GetStringUTFChars     = stub_get_string_utf_chars;
    fns.ReleaseStringUTFChars = stub_release_string_utf_chars;
    env = &fns;

    unsetenv("HDFSRDMA_SMOKE");
    if (!set_env(&env, NULL, (jstring)"HDFSRDMA_SMOKE", (jstring)"first") ||
        set_env(&env, NULL, (jstring)"HDFSRDMA_SMOKE", (jstring)"second") ||
        strcmp(getenv("HDFSRDMA_SMOKE"), "first") != 0) {
        fprintf(stderr, "setenvIfUnset must set once and never override\n");
        return 1;
    }
    printf("setenvIfUnset sets once, never overrides\n");
    /* This program links UCX, so the library must see it loaded. */
    if (!loaded(&env, NULL)) {
        fprintf(stderr, "isUcxLoaded() is false in a process linking UCX\n");
        return 1;
    }

    char *v = (char *)version(&env, NULL);
    printf("ucxVersion() = %s\n", v);
    if (v == NULL || strcmp(v, ucp_get_version_string()) != 0) {
        fprintf(stderr, "version mismatch\n");
        return 1;
    }
    free(v);
    /* libucs's constructor ran when this program started: with memory
     * events on (UCX's default) it rewrote libc's mmap in place. */
    char *hooked = (char *)patched(&env, NULL);
    printf("patchedLibc() = \"%s\"\n", hooked ? hooked : "(null)");
    if (hooked == NULL || (memory_events_off() ? strcmp(hooked, "") != 0
                             : strstr(hooked, "mmap") == NULL)) {
        fprintf(stderr, "patchedLibc() must name mmap with UCX's memory"
                " events on and nothing with them off\n");
        return 1;
    }
    free(hooked);
    if (ep_info(&env, NULL, 0) != NULL || wk_info(&env, NULL, 0) != NULL) {
        fprintf(stderr, "handle 0 must give null\n");
        return 1;
    }
    printf("endpointInfo(0) = null, workerInfo(0) = null\n");

    if (ux_init(&u, NULL) != 0) {
        return 1;
    }
    st = ucp_worker_get_address(u.worker, &addr, &addr_len);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_get_address: %s\n", ucs_status_string(st));
        goto out;
    }
    ucp_ep_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.address    = addr;
    st = ucp_ep_create(u.worker, &p, &ep);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_ep_create: %s\n", ucs_status_string(st));
        ep = NULL;
        goto out;
    }
    char *w = (char *)wk_info(&env, NULL, (jlong)(intptr_t)u.worker);
    char *e = (char *)ep_info(&env, NULL, (jlong)(intptr_t)ep);
    printf("workerInfo(worker) = %zu chars, endpointInfo(ep) =\n%s",
           w ? strlen(w) : 0, e ? e : "(null)\n");
    if (w != NULL && e != NULL && strstr(w, "UCP worker") != NULL &&
        strstr(e, "lane[") != NULL) {
        printf("OK\n");
        rc = 0;
    } else {
        fprintf(stderr, "unexpected print_info text\n");
    }
    free(w);
    free(e);
out:
    if (ep != NULL) {
        ux_close_ep(&u, ep, 0, 2.0);
    }
    if (addr != NULL) {
        ucp_worker_release_address(u.worker, addr);
    }
    ux_fini(&u);
    dlclose(lib);
    return rc;
}
