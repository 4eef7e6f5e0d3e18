/* Each system call a sandbox refuses, tried once: one line per call, "NAME refused" where it
 * failed with EPERM or ENOSYS (the sandbox's answers), else "NAME ALLOWED" or what the
 * kernel said. Run as the sandbox's unprivileged user, so a call that reaches the kernel
 * often fails anyway: a failure other than the filter's answer is printed as such.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static void tried(const char *name, long result) {
    if (result >= 0)
        printf("%s ALLOWED\n", name);
    else if (errno == EPERM || errno == ENOSYS)
        printf("%s refused\n", name);
    else
        printf("%s failed: %s\n", name, strerror(errno));
}

int main(void) {
    tried("unshare-user", unshare(CLONE_NEWUSER));
    tried("unshare-mount", unshare(CLONE_NEWNS));
    long child = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (child == 0)
        _exit(0);
    tried("clone-user", child);
    tried("chroot", chroot("/"));
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    tried("io_uring_setup", syscall(SYS_io_uring_setup, 1, &params));
    tried("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
    tried("socket-netlink", socket(AF_NETLINK, SOCK_RAW, 0));
    tried("socket-raw", socket(AF_PACKET, SOCK_RAW, 0));
    tried("mknod-char", mknod("/tmp/refused-null", S_IFCHR | 0666, makedev(1, 3)));
    tried("ptrace", syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
    tried("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    tried("bpf", syscall(SYS_bpf, 0, NULL, 0));
    tried("setsid", setsid());
    return 0;
}
