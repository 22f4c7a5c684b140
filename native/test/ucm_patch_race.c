/*
 * UCX loading into a process whose threads are busy, as it does in a JVM
 * (JIT, GC and application threads run when JUCX loads UCX): each child
 * process starts threads that call mmap, munmap, madvise, sbrk and malloc in
 * a loop, then dlopens libucp. With UCX's memory events on (UCX's default),
 * libucs's load-time constructor overwrites the first bytes of those libc
 * functions with a jump while the threads run inside them; a thread resumed
 * in the middle of the rewritten bytes crashes the process (SIGSEGV, SIGILL)
 * and readers of UCX's event lock can starve the loader (a hang).
 *
 * Usage: ucm_patch_race [CHILDREN [THREADS]]
 * Prints how many children crashed or hung; exits 1 when any did. The
 * ctest runs it with UCX_MEM_EVENTS=no, hdfs-rdma's default; run it without
 * to see UCX's default crash (measured here: 12 of 80 children with 16
 * threads on 2 cores, and 5 hung).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Children run at once: more than the cores, so threads get preempted. */
#define PARALLEL 4
/* A child still loading UCX after this long is hung. */
#define HANG_SECONDS 20

static volatile int stop;

static void *call_memory_functions(void *arg)
{
    long kind = (long)arg % 4;
    long page = sysconf(_SC_PAGESIZE);

    while (!stop) {
        if (kind == 0) {
            (void)sbrk(0);
        } else if (kind == 1) {
            void *m = mmap(NULL, page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m != MAP_FAILED) {
                munmap(m, page);
            }
        } else if (kind == 2) {
            char *p = malloc(200000); /* above malloc's mmap threshold */
            if (p != NULL) {
                p[0] = 1;
            }
            free(p);
        } else {
            madvise((void *)((long)&stop & ~(page - 1)), page, MADV_NORMAL);
        }
    }
    return NULL;
}

static int child(int threads)
{
    pthread_t t[256];
    int i;

    alarm(HANG_SECONDS);
    for (i = 0; i < threads; i++) {
        pthread_create(&t[i], NULL, call_memory_functions, (void *)(long)i);
    }
    usleep(1000);
    if (dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen libucp.so.0: %s\n", dlerror());
        return 2;
    }
    stop = 1;
    for (i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int children = argc > 1 ? atoi(argv[1]) : 100;
    int threads  = argc > 2 ? atoi(argv[2]) : 16;
    int started = 0, running = 0, crashed = 0, hung = 0, failed = 0;
    int status;

    if (children < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "usage: %s [CHILDREN [THREADS<=256]]\n", argv[0]);
        return 2;
    }
    /* As in hdfs-rdma's JVMs: no libucs signal handler (nor its backtrace
     * per crashed child). */
    setenv("UCX_HANDLE_ERRORS", "none", 0);
    while (started < children || running > 0) {
        if (started < children && running < PARALLEL) {
            pid_t pid = fork();
            if (pid == 0) {
                _exit(child(threads));
            }
            if (pid < 0) {
                perror("fork");
                return 2;
            }
            started++;
            running++;
            continue;
        }
        if (wait(&status) < 0) {
            perror("wait");
            return 2;
        }
        running--;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            hung++;
        } else if (WIFSIGNALED(status)) {
            crashed++;
        } else if (WEXITSTATUS(status) != 0) {
            failed++;
        }
    }
    printf("UCX_MEM_EVENTS=%s: %d children loading UCX beside %d busy threads:"
           " %d crashed, %d hung, %d failed otherwise\n",
           getenv("UCX_MEM_EVENTS") ? getenv("UCX_MEM_EVENTS") : "(unset)",
           children, threads, crashed, hung, failed);
    return crashed + hung + failed == 0 ? 0 : 1;
}
