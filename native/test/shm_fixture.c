/*
 * Test fixture of jucx-bridge's TestRemoteRegionChecks: a SysV shared
 * memory segment that belongs to another process, and optionally to
 * another user, for a getter to be pointed at.
 *
 *   shm_fixture SIZE [UID]
 *
 * Creates a SIZE-byte segment (mode 0600), fills it with 0xA5, gives it to
 * owner UID when one is given (IPC_SET: the owner of a SysV object may hand
 * it to any user), prints "SHMID <id>" and waits until its standard input
 * closes. The segment is attached here and marked for removal at once, so
 * it disappears with this process however it ends (the test JVM closing
 * the pipe, or dying).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct shmid_ds ds;
    char buf[256];
    size_t size;
    void *p;
    int shmid;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s SIZE [UID]\n", argv[0]);
        return 2;
    }
    size  = strtoull(argv[1], NULL, 0);
    shmid = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
    if (shmid < 0) {
        fprintf(stderr, "shmget(%zu): %s\n", size, strerror(errno));
        return 1;
    }
    p = shmat(shmid, NULL, 0);
    if (p == (void *)-1) {
        fprintf(stderr, "shmat(%d): %s\n", shmid, strerror(errno));
        shmctl(shmid, IPC_RMID, NULL);
        return 1;
    }
    memset(p, 0xA5, size);
    if (argc == 3) {
        if (shmctl(shmid, IPC_STAT, &ds) != 0) {
            fprintf(stderr, "IPC_STAT: %s\n", strerror(errno));
            shmctl(shmid, IPC_RMID, NULL);
            return 1;
        }
        ds.shm_perm.uid = (uid_t)strtoul(argv[2], NULL, 0);
        if (shmctl(shmid, IPC_SET, &ds) != 0) {
            fprintf(stderr, "IPC_SET uid %s: %s\n", argv[2], strerror(errno));
            shmctl(shmid, IPC_RMID, NULL);
            return 1;
        }
    }
    /* Gone with the last detach: this process's exit. */
    if (shmctl(shmid, IPC_RMID, NULL) != 0) {
        fprintf(stderr, "IPC_RMID: %s\n", strerror(errno));
        return 1;
    }
    printf("SHMID %d %p\n", shmid, p);
    fflush(stdout);
    while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
        /* The test closes our standard input when it is done. */
    }
    return 0;
}
