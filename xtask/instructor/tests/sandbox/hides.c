/* A check's process that hides from the grader that must end it, one way per MODE:
 *
 *   zombie-leader  its first thread exits alone (SYS_exit): /proc shows a zombie while its
 *                  other thread runs on, holding the memory;
 *   double-fork    forks twice, the middle process exiting: the last is re-parented;
 *   new-session    setsid (refused in the fallback, which finds a check by its session);
 *   clone-parent   clone(CLONE_PARENT): a sibling of the check's main process, a child of
 *                  what started it, re-parented without ptrace.
 *
 * The hidden process holds MIB mebibytes (every page written), names each of its threads
 * NAME (the comm /proc shows for every thread, a zombie leader's included), writes the file
 * DONE once hidden and sleeps a minute. The main process waits for DONE, sleeps LINGER
 * seconds and exits 0, leaving it behind.
 *
 * Usage: hides MODE MIB NAME DONE LINGER
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t mib;
static const char *name;
static const char *done;

static void *hold(void *unused) {
    (void)unused;
    char *memory = malloc(mib << 20);
    if (memory == NULL)
        return NULL;
    for (size_t i = 0; i < mib << 20; i += 4096)
        memory[i] = 1;
    prctl(PR_SET_NAME, name, 0, 0, 0);
    FILE *file = fopen(done, "w");
    if (file != NULL)
        fclose(file);
    sleep(60);
    return memory;
}

/* The last process of every mode: a thread holds the memory. */
static void hide(int zombie_leader) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
    if (!zombie_leader) {
        hold(NULL);
        _exit(0);
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, hold, NULL) != 0)
        _exit(1);
    /* The leader alone: the process lives on in its thread. */
    syscall(SYS_exit, 0);
}

int main(int argc, char **argv) {
    if (argc != 6)
        return 2;
    const char *mode = argv[1];
    mib = strtoul(argv[2], NULL, 10);
    name = argv[3];
    done = argv[4];
    if (strcmp(mode, "zombie-leader") == 0) {
        if (fork() == 0)
            hide(1);
    } else if (strcmp(mode, "double-fork") == 0) {
        if (fork() == 0) {
            if (fork() != 0)
                _exit(0);
            hide(0);
        }
    } else if (strcmp(mode, "new-session") == 0) {
        if (fork() == 0) {
            /* Refused in the fallback: it hides on in the session it has. */
            setsid();
            hide(0);
        }
    } else if (strcmp(mode, "clone-parent") == 0) {
        long child = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (child == 0)
            hide(0);
        if (child < 0)
            return 1;
    } else {
        return 2;
    }
    for (int tries = 0; access(done, F_OK) != 0; tries++) {
        if (tries == 2000)
            return 4;
        usleep(10000);
    }
    sleep((unsigned)strtoul(argv[5], NULL, 10));
    return 0;
}
