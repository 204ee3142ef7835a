/* Shared by the two halves of sheaf-cluster-c (see _cluster.c): what is read, and the hand-over. */
#ifndef SHEAF_CLUSTER_H
#define SHEAF_CLUSTER_H
#define _GNU_SOURCE  /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PROG "sheaf-cluster"
#define FAILURE_EXIT 5
#define EXEC_FAILED (127 << 8)

typedef struct { char **argv; long line; } Task;
typedef struct { pid_t pid; long count, line; char **argv; double start; } Child;

typedef struct {
    int debug, fail_hard, always_succeed;
    unsigned char success[256];
    const char *status_file, *input;
    long long cpus;
} Options;

extern char **cluster_argv;  /* our own argv: the hand-over passes it on, the records name argv[0] */

int cluster_executable(const char *path);
void cluster_hand_over(void);  /* exec the Python sheaf-cluster with our argv; never returns */
void cluster_parse_options(int argc, char **argv, Options *o);
void cluster_read_input(const char *path);
Task *cluster_parse_tasks(size_t *count, long *lines);

#endif
