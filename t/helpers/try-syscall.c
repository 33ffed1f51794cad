/* SPDX-License-Identifier: Apache-2.0 */
/* try-syscall: call one syscall by name and print what happened, for the
 * escape tests (SECURITY.md: EFAULT/EBADF means the call reached the
 * kernel, EPERM/ENOSYS means a filter stopped it).
 *
 *   try-syscall [--abi native|i386|x32] NAME [ARG]...
 *       NAME may be a number (syscalls newer than libseccomp's table).
 *       ARGs are numbers (0x.. accepted) or "bad" (an invalid pointer/fd,
 *       the default for every argument not given). Prints the errno name
 *       (EPERM, EFAULT, ...) or "OK" and exits 0; a filter that kills the
 *       process shows as death by SIGSYS.
 *
 *   try-syscall --enosys NAME[,NAME]... -- COMMAND [ARG]...
 *       Install a seccomp filter that makes the named syscalls fail with
 *       ENOSYS, then execute COMMAND: the way the tests make Landlock or
 *       openat2 look absent to sbx-launch (SECURITY.md item 21).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>

static void usage(void) {
        fprintf(stderr, "usage: try-syscall [--abi native|i386|x32] NAME [ARG]...\n"
                        "       try-syscall --enosys NAME[,NAME]... -- COMMAND [ARG]...\n");
        exit(2);
}

static unsigned long parse_arg(const char *s) {
        char *end;
        unsigned long v;

        if (strcmp(s, "bad") == 0)
                return (unsigned long) -1;
        errno = 0;
        if (s[0] == '-')
                v = (unsigned long) strtol(s, &end, 0);
        else
                v = strtoul(s, &end, 0);
        if (errno || *end || end == s) {
                fprintf(stderr, "try-syscall: bad argument '%s'\n", s);
                exit(2);
        }
        return v;
}

static long call_i386(long nr, const unsigned long *a) {
#ifdef __x86_64__
        long ret;
        /* int 0x80 enters the kernel's 32-bit compat table whatever the
         * process's own ABI is: the classic seccomp bypass when a filter
         * only checks syscall numbers. */
        __asm__ volatile("int $0x80"
                         : "=a"(ret)
                         : "a"(nr), "b"(a[0]), "c"(a[1]), "d"(a[2]), "S"(a[3]), "D"(a[4])
                         : "memory");
        ret = (int) ret; /* the compat return value is 32 bits */
        if (ret < 0 && ret > -4096) {
                errno = (int) -ret;
                return -1;
        }
        return ret;
#else
        (void) nr;
        (void) a;
        errno = ENOSYS;
        return -1;
#endif
}

static int enosys_then_exec(const char *names, char **argv) {
        struct sock_filter prog[256];
        size_t n = 0;
        char *list = strdup(names), *save = NULL;

        prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int nr = seccomp_syscall_resolve_name(tok);
                if (nr < 0 || n > 250) {
                        fprintf(stderr, "try-syscall: unknown syscall '%s'\n", tok);
                        return 2;
                }
                prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) nr, 0, 1);
                prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
        }
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        free(list);

        struct sock_fprog fprog = { .len = (unsigned short) n, .filter = prog };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0) {
                perror("try-syscall: loading the filter");
                return 1;
        }
        execvp(argv[0], argv);
        fprintf(stderr, "try-syscall: %s: %s\n", argv[0], strerror(errno));
        return 127;
}

int main(int argc, char **argv) {
        const char *abi = "native";
        unsigned long a[6];
        long nr, r;
        int i = 1;

        if (argc > 3 && strcmp(argv[1], "--enosys") == 0) {
                if (strcmp(argv[3], "--") != 0 || argc < 5)
                        usage();
                return enosys_then_exec(argv[2], argv + 4);
        }
        if (argc > 2 && strcmp(argv[1], "--abi") == 0) {
                abi = argv[2];
                i = 3;
        }
        if (i >= argc || argc - i - 1 > 6)
                usage();

        if (argv[i][0] >= '0' && argv[i][0] <= '9')
                /* A bare number: syscalls newer than libseccomp's table. */
                nr = (long) parse_arg(argv[i]) | (strcmp(abi, "x32") == 0 ? 0x40000000L : 0);
        else if (strcmp(abi, "native") == 0)
                nr = seccomp_syscall_resolve_name(argv[i]);
        else if (strcmp(abi, "i386") == 0)
                nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, argv[i]);
        else if (strcmp(abi, "x32") == 0)
                /* libseccomp's x32 numbers carry __X32_SYSCALL_BIT. */
                nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X32, argv[i]);
        else
                usage();
        if (nr < 0) {
                fprintf(stderr, "try-syscall: no syscall '%s' in the %s ABI\n", argv[i], abi);
                return 2;
        }

        for (int k = 0; k < 6; k++)
                a[k] = i + 1 + k < argc ? parse_arg(argv[i + 1 + k]) : (unsigned long) -1;

        errno = 0;
        if (strcmp(abi, "i386") == 0)
                r = call_i386(nr, a);
        else
                r = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (r == -1 && errno) {
                const char *name = strerrorname_np(errno);
                printf("%s\n", name ? name : "UNKNOWN");
        } else {
                printf("OK\n");
        }
        return 0;
}
