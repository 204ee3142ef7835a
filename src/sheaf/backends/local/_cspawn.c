/* sheaf.backends.local._cspawn: the local backend's job spawner and reapers, in POSIX threads that
 * never take the GIL.
 *
 * Why: posix_spawn suspends its caller until the child has exec'd, and os.posix_spawn holds the GIL
 * through that wait, so spawning from Python (sheaf.backends._spawn, the fallback without this
 * extension) stops the whole engine for every job.  Here the engine thread only copies the request
 * into C strings (submit) and later takes the results (results); the thread spawns on its own.
 *
 * Reaping (reap=True): a slot freed by an exit used to wait until the engine's single Python thread
 * -- busy about half the time with the state machine, the journal and the reports -- came back to its
 * epoll, reaped the job and asked for the next spawn, which made a short job's life from spawn
 * request to reap much longer than under xargs -P2.  So reaper threads own the children the spawner
 * thread started: each keeps the pidfds of its children in an epoll of its own (beside an eventfd
 * that tells them all to stop), and when one is readable it kills what is left of the job's process
 * group (as HTCondor's starter does), wait4s it and records the exit (wait status, ru_maxrss,
 * CLOCK_MONOTONIC and CLOCK_REALTIME at the reap).  A request may be bound to a running child as its
 * *successor* (follow): when that child is reaped, its reaper starts the successor itself, before the
 * engine even hears of the exit, with the CPUs of its own request (the engine binds only a launch
 * that would get the same claim), and watches it in turn.  A successor that fails to start hands the
 * turn to the next one bound.  kill() signals a child's group under the lock a reaper holds from
 * killpg to wait4, so it never reaches a reaped (possibly reused) process group.  Results keep their
 * order: a child's exit comes before its successor's start.
 *
 * Threads: the spawner thread spawns the submitted requests, in order (their results come back in
 * submission order), and gives each child to the reaper that watches the fewest.  A reaper per CPU
 * (MAX_REAPERS at most), not one: a spawn (vfork) blocks its caller until the child has exec'd, and on
 * a busy machine the child first waits for a CPU, so one reaper would spend much of a run of short
 * jobs blocked so while another slot's exit waited to be reaped.  A spawn can also block for good (a FIFO or a socket among the job's files blocks
 * its open before execve until a peer comes), and that must not hold up any reaping: a successor
 * with such a file goes to the spawner thread instead (a hand-off, slower than a spawn by the
 * reaper, so taken only then).
 *
 * The job guard (sheaf.backends._jobguard, whose docstring has the table's layout and the race
 * analysis): a reaped child's group is listed in the guard's table in shared memory (mapped by
 * guard()) by the child itself before its execve (spawn_child) -- a compare-and-swap on a free word,
 * no system call --
 * and its word cleared after the killpg of its leftovers and before the wait4 that frees its group
 * id.  Only a full table sends "+PGID"/"-PGID" down the guard's pipe, which costs two writes and a
 * wake-up of the guard a job.
 *
 * Wake-ups: each eventfd write wakes the engine's Python thread out of its epoll (a context switch,
 * then a pass of LocalBackend._collect and of the engine's batching loop: one of each per job when
 * the reaper wrote once or twice a job).  Most were not needed at once: while
 * a successor starts here in its claim, the engine loses nothing by hearing of the exit a little
 * later.  So the reaper wakes Python at once only when Python must act: a reaped child with no
 * successor started here (its claim is free, or its successor went to the spawner thread, which
 * may block), a spawn that failed, a successor left with fewer than LOW_CHAIN successors of its
 * own (the engine tops chains up; with CHAIN = 64 bound a job there is room to wait), the exit of
 * a child kill() signalled (a cancel, a memory or policy kill waits for it), and close.  Otherwise
 * it wakes Python once COALESCE_ROWS rows wait or the oldest has waited COALESCE_SECONDS (its
 * epoll_wait times out then).  The spawner thread always wakes Python at once: its starts are of
 * launches the engine submitted into a free claim, and successors can be bound to them only once
 * the engine knows they run.  Why COALESCE_SECONDS has its value is said at its
 * definition.
 *
 * Contract, the same as sheaf.backends._spawn.spawn's (tests/backends/test_spawn_paths.py compares
 * them): the child is started with vfork and takes posix_spawn's steps itself (spawn_child): argv and
 * the complete environment as given, argv[0] looked up in PATH (as posix_spawnp does) when it
 * has no slash; the working directory a file action run before the opens; stdin opened read-only;
 * stdout and stderr created and truncated, mode 0644 (stderr a dup of stdout when the paths are
 * equal); the child leads a new process group (setpgid(0, 0)); the signal mask the spawning thread
 * has (it is created with the creating thread's mask); SIGPIPE, SIGXFSZ and every caught signal
 * back to its default action, other ignored signals still ignored.
 * With CPU ids, the thread pins itself to them around the call (the child inherits the mask) and
 * restores its own after.  A pidfd (pidfd_open) is opened for each child before it is reported.
 *
 * Python API:
 *   s = Spawner(reap=False, coalesce=COALESCE_SECONDS)
 *                                     starts the spawner thread, and with reap the reaper threads,
 *                                     which wake Python at most `coalesce` s late ("Wake-ups")
 *   s.fileno()                        an eventfd, readable while results wait
 *   s.submit(tag, argv, env, cwd, stdout, stderr, stdin, cpus)
 *                                     tag an int; argv a list of str; env a dict of str; cpus None
 *                                     or a list of ints.  Raises ValueError for an embedded NUL or
 *                                     an illegal variable name (as os.posix_spawn does), before
 *                                     anything is queued.
 *   s.follow(after, tag, argv, ...)   (reap) the same request, bound as the last successor of the
 *                                     child `after`: of its chain, which its successor took over if
 *                                     it was reaped and its exit is not yet in results(); False
 *                                     (nothing queued) when that chain is gone or `after` unknown
 *   s.unfollow(tag)                   (reap) unbind a successor not yet taken for spawning; False
 *                                     when it was (its start is or will be in the results)
 *   s.kill(tag, signal)               (reap) signal the running child's process group; False when
 *                                     it is not running
 *   s.guard(table, pipe)              (reap) the job guard's table (a memfd, mapped here) and its
 *                                     pipe (for "+PGID\n" / "-PGID\n" when the table is full)
 *   s.results()                       [(kind, tag, pid, pidfd, errno, status, maxrss, mono, real)],
 *                                     in order.  kind 0, a start: errno 0 when the child started,
 *                                     else pid and pidfd are -1; pidfd -1 too with reap.
 *                                     kind 1, an exit (reap): the wait status and ru_maxrss (KiB).
 *                                     mono and real: CLOCK_MONOTONIC and CLOCK_REALTIME of the spawn
 *                                     or the reap
 *   s.close()                         spawns what was submitted, stops the threads, kills and reaps
 *                                     its running children (reap), returns the results not yet
 *                                     taken, closes its descriptors (the eventfd, and the
 *                                     reaper threads' epolls and wake-up eventfd)
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef struct request {
    struct request *next;  /* in the todo list, or the next successor in a chain */
    long long tag;
    char **argv, **envp;  /* NULL-terminated, each string malloc'd */
    char *cwd, *out, *err, *in;
    int pin;
    cpu_set_t cpus;
    /* the outcome */
    int pid, pidfd, error;
    int listed;  /* its word in the job guard's table, GUARD_TOLD when told down the pipe, else -1 */
    int urgent;  /* kill() signalled it: its exit is announced at once */
    double since, real;
    /* a running child (reap): its successors, and its place in the list of running children */
    struct request *chain, *prev_live, *next_live;
    int home;  /* the reaper thread whose epoll watches it */
} request;

typedef struct row {
    struct row *next;
    int kind;  /* 0 a start, 1 an exit */
    long long tag;
    int pid, pidfd, error, status;
    long maxrss;
    double mono, real;
    long long heir;  /* an exit, or a failed start: the successor that took over its chain, or -1 */
} row;

#define MAX_REAPERS 8

struct Spawner;
typedef struct {
    struct Spawner *s;
    int who;  /* 0 the spawner thread, 1.. the reapers: its index in spawning[] */
} worker;

typedef struct Spawner {
    PyObject_HEAD
    pthread_t thread, reapers[MAX_REAPERS];
    worker workers[1 + MAX_REAPERS];
    int running, reap;
    int nreapers;  /* reaper threads started */
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* to the spawner thread: requests wait, or close */
    request *todo, *todo_tail, *live;
    request *spawning[1 + MAX_REAPERS];  /* being spawned by the spawner [0] or a reaper: their chains still count */
    int homed[MAX_REAPERS];  /* running children each reaper watches */
    int reserved[MAX_REAPERS];  /* successors each reaper is starting (see least_homed) */
    sigset_t defaults;  /* signals a child gets with their default action: SIGPIPE, SIGXFSZ */
    row *done, *done_tail;
    int closing;
    int wakeup;  /* to Python: results wait */
    int kick;    /* to the reaper threads: close (level-triggered in each epoll) */
    int epfd[MAX_REAPERS];
    int guard;                  /* the job guard's pipe (the table's overflow), -1 until guard() */
    uint64_t *table;            /* the job guard's table (mapped by guard()), NULL until then */
    double coalesce;            /* COALESCE_SECONDS, unless the constructor says otherwise (tests) */
    int unannounced;            /* rows added since the last notify() or results() */
    double oldest;              /* CLOCK_MONOTONIC of the first of them */
} Spawner;

/* The job guard's table (sheaf.backends._jobguard: its layout and race analysis; the constants
 * there must match these): 64-bit words, those in [GUARD_C_BASE, GUARD_PY_BASE) claimed by the C
 * threads of every spawner of the process with a compare-and-swap; an entry is pid | ticks << 24. */
#define GUARD_WORDS (1 << 16)
#define GUARD_C_BASE 8
#define GUARD_PY_BASE (1 << 15)
#define GUARD_TOLD (-2)
static long clock_ticks = 100;  /* sysconf(_SC_CLK_TCK), read at import */

/* Wake-ups (see the header): the reaper wakes Python at once only when it must act, else after at
 * most COALESCE_SECONDS or COALESCE_ROWS rows: each wake-up costs the engine a pass whatever it
 * carries, and a few short jobs a slot fit well inside the CHAIN successors the engine keeps bound
 * (the runs behind the value are in docs/performance.md, "Tuned constants").
 * LOW_CHAIN: the engine hears at once of a chain with a few successors left, before it runs dry
 * even when its thread is slow to turn (a dry chain costs a slot a trip through the engine). */
#define COALESCE_SECONDS 0.006
#define COALESCE_ROWS 64
#define LOW_CHAIN 4

static void free_strings(char **list) {
    if (list == NULL)
        return;
    for (char **p = list; *p != NULL; p++)
        free(*p);
    free(list);
}

static void free_request(request *r) {
    free_strings(r->argv);
    free_strings(r->envp);
    free(r->cwd);
    free(r->out);
    free(r->err);
    free(r->in);
    free(r);
}

static void free_chain(request *r) {
    while (r != NULL) {
        request *next = r->next;
        free_request(r);
        r = next;
    }
}

static double clock_now(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int guard_list(Spawner *s, int pid);
static void guard_unlist(Spawner *s, request *r, int pid);

/* The child's steps between vfork and execve (see spawn_child); it shares the parent's memory, so
 * it calls nothing that allocates or locks, and reports a failure in *failed before _exit(127).
 * Order as the C library's posix_spawn takes them: signal dispositions, the process group, the
 * file actions, the signal mask, the exec. */
__attribute__((noinline, noreturn))
static void child_steps(Spawner *s, request *r, const sigset_t *mask, char *buf, volatile int *failed,
                        volatile int *listed) {
    for (int sig = 1; sig < _NSIG; sig++) {  /* no handler of the parent's may run in this child */
        struct sigaction sa;
        if (sig >= 32 && sig < SIGRTMIN) {
            /* the C library's own two (thread cancellation and set*id), which its sigaction refuses:
             * ignored, as its posix_spawn leaves them (an ignored signal stays so across execve) */
            struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } ignore = {0};
            ignore.handler = (void *)SIG_IGN;
            syscall(SYS_rt_sigaction, sig, &ignore, NULL, sizeof ignore.mask);
            continue;
        }
        if (sigaction(sig, NULL, &sa) != 0)
            continue;
        if (sigismember(&s->defaults, sig) || (sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL)) {
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigaction(sig, &sa, NULL);
        }
    }
    if (setpgid(0, 0) != 0)
        goto fail;
    if (s->reap)  /* listed by the child itself: the guard's end of file waits for this exec (below) */
        *listed = guard_list(s, (int)syscall(SYS_getpid));
    if (chdir(r->cwd) != 0)
        goto fail;
    const char *files[3] = {r->in, r->out, r->err};
    for (int target = 0; target < 3; target++) {
        int fd;
        if (target == 2 && strcmp(r->out, r->err) == 0)
            fd = dup2(1, 2);
        else
            fd = open(files[target], target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            goto fail;
        if (fd != target) {
            if (dup2(fd, target) < 0)
                goto fail;
            close(fd);
        }
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    const char *name = r->argv[0];
    if (strchr(name, '/') != NULL) {
        execve(name, r->argv, r->envp);
        goto fail;
    }
    const char *path = getenv("PATH");  /* the spawning process's, as posix_spawnp reads it */
    if (path == NULL)
        path = "/bin:/usr/bin";
    size_t path_len = strlen(path);
    /* posix_spawnp's search: each PATH entry in turn (an empty one is the working directory); EACCES
     * from any of them wins over not found; another error ends the search; no shell for ENOEXEC */
    size_t name_len = strlen(name);
    int eacces = 0;
    const char *p = path, *end = path + path_len;
    if (name_len == 0) {
        errno = ENOENT;
        goto fail;
    }
    for (;;) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        const char *stop = colon != NULL ? colon : end;
        size_t dir_len = (size_t)(stop - p);
        if (dir_len + 1 + name_len + 1 > PATH_MAX) {
            errno = ENAMETOOLONG;  /* as the kernel says of a longer one, which ends the search */
        } else {
            memcpy(buf, p, dir_len);
            size_t at = dir_len;
            if (dir_len > 0)
                buf[at++] = '/';
            memcpy(buf + at, name, name_len + 1);
            execve(buf, r->argv, r->envp);
        }
        switch (errno) {
        case EACCES:
            eacces = 1;
            break;
        case ENOENT: case ESTALE: case ENOTDIR: case ENODEV: case ETIMEDOUT:
            break;
        default:
            goto fail;
        }
        if (colon == NULL)
            break;
        p = colon + 1;
    }
    if (eacces)
        errno = EACCES;
fail:
    *failed = errno != 0 ? errno : ENOEXEC;
    _exit(127);
}

/* Start r's child with vfork, as posix_spawn(p) would (the contract in the header) but for one step:
 * the child lists its own group in the job guard's table before its execve.  The guard's pipe stays
 * open in the child until that execve closes it, so the guard, which reads the table at end of file,
 * sees every child that may still exec -- where a parent listing the child after posix_spawn
 * returned left a window (the child's file actions and execve) in which a SIGKILL of the parent
 * let the job run on unguarded.  Returns 0 and the pid, or an errno. */
static int spawn_child(Spawner *s, request *r, pid_t *out) {
    char buf[PATH_MAX];
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &mask);  /* nothing is delivered to the child before its reset */
    volatile int failed = 0;
    volatile int listed = -1;
    pid_t pid = vfork();
    if (pid == 0)
        child_steps(s, r, &mask, buf, &failed, &listed);
    int err = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (err != 0)
        return err;
    r->listed = listed;
    if (failed != 0) {
        guard_unlist(s, r, pid);  /* before the reap: the group id cannot have been reused */
        waitpid(pid, NULL, 0);
        return failed;
    }
    *out = pid;
    return 0;
}

static void spawn_one(Spawner *s, request *r) {
    cpu_set_t saved;
    int pinned = 0, err = 0;
    if (r->pin) {
        if (sched_getaffinity(0, sizeof saved, &saved) != 0 || sched_setaffinity(0, sizeof r->cpus, &r->cpus) != 0)
            err = errno;
        else
            pinned = 1;
    }
    pid_t pid = -1;
    r->since = clock_now(CLOCK_MONOTONIC);
    r->real = clock_now(CLOCK_REALTIME);
    if (err == 0)
        err = spawn_child(s, r, &pid);
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    r->pid = r->pidfd = -1;
    r->error = err;
    if (err != 0)
        return;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {  /* no way to watch it: it must not run unwatched */
        r->error = errno;
        kill(pid, SIGKILL);
        guard_unlist(s, r, pid);
        waitpid(pid, NULL, 0);
        return;
    }
    r->pid = pid;  /* (a pidfd is close-on-exec from pidfd_open: no fcntl) */
    r->pidfd = fd;
    /* the strings are done with: only the outcome travels on */
    free_strings(r->argv);
    free_strings(r->envp);
    r->argv = r->envp = NULL;
}

/* Append a result row; the caller holds the lock.  Out of memory, a row is lost: its tag then
 * stays pending on the Python side (which is what malloc failing in this thread can do at worst). */
static row *add_row(Spawner *s, int kind, request *r, int status, long maxrss, double mono, double real) {
    row *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->heir = -1;
    w->kind = kind;
    w->tag = r->tag;
    w->pid = r->pid;
    w->pidfd = s->reap ? -1 : r->pidfd;
    w->error = r->error;
    w->status = status;
    w->maxrss = maxrss;
    w->mono = mono;
    w->real = real;
    if (s->unannounced++ == 0)
        s->oldest = clock_now(CLOCK_MONOTONIC);
    if (s->done_tail != NULL)
        s->done_tail->next = w;
    else
        s->done = w;
    s->done_tail = w;
    return w;
}

/* Tell the job guard "+PGID" or "-PGID" down its pipe (one write: atomic below PIPE_BUF) -- only
 * when its table is full. */
static void tell_guard(Spawner *s, char sign, int pid) {
    if (s->guard < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "%c%d\n", sign, pid);
    ssize_t ignored = write(s->guard, line, (size_t)n);  /* a guard gone: the orphan scan remains */
    (void)ignored;
}

/* List the group of pid, spawned just now, in the job guard's table: its word, or GUARD_TOLD, or -1
 * (no guard).  Plain memory: no system call, no other process woken (the vDSO reads the clock). */
static int guard_list(Spawner *s, int pid) {
    uint64_t *table = __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);  /* set once, by guard() */
    if (table == NULL)
        return -1;
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);  /* rounded up: at or after the child's start time */
    uint64_t ticks = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) * (uint64_t)clock_ticks;
    ticks = (ticks + 999999999u) / 1000000000u;
    uint64_t entry = (uint64_t)pid | ticks << 24;
    for (int i = GUARD_C_BASE; i < GUARD_PY_BASE; i++) {
        uint64_t free_word = 0;
        if (__atomic_load_n(&table[i], __ATOMIC_RELAXED) == 0
            && __atomic_compare_exchange_n(&table[i], &free_word, entry, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            return i;
    }
    tell_guard(s, '+', pid);
    return GUARD_TOLD;
}

/* Unlist r's group: called after its leftovers were killed and before its leader is reaped (the
 * zombie keeps the group id from reuse until then). */
static void guard_unlist(Spawner *s, request *r, int pid) {
    if (r->listed >= 0)
        __atomic_store_n(&s->table[r->listed], 0, __ATOMIC_SEQ_CST);
    else if (r->listed == GUARD_TOLD)
        tell_guard(s, '-', pid);
    r->listed = -1;
}

/* The reaper watching the fewest running children, a successor it is starting counted as running;
 * the lock is held.  Without that count a slot's chain goes missing from its reaper for the whole
 * of its successor's spawn (most of a short job's life), and the spawner thread gives the other
 * slot's new chain to the same reaper, where both chains stay: one reaper then spawns every job and
 * each slot's exit waits for the other's spawn. */
static int least_homed(const Spawner *s) {
    int best = 0;
    for (int k = 1; k < s->nreapers; k++)
        if (s->homed[k] + s->reserved[k] < s->homed[best] + s->reserved[best])
            best = k;
    return best;
}

/* Spawn r (its successors in r->chain); a child that runs joins the running children (reap) with
 * its successors, a failed successor hands its turn to the next one.  The lock is not held.
 * Returns whether Python must hear of it at once (see "Wake-ups"): a spawn failed, or what runs
 * now has fewer than LOW_CHAIN successors left for the engine to top up. */
static int launch(Spawner *s, request *r, int who) {
    int urgent = 0;
    for (;;) {
        spawn_one(s, r);
        request *next = NULL;
        pthread_mutex_lock(&s->lock);
        row *w = add_row(s, 0, r, 0, 0, r->since, r->real);
        int keep = r->error == 0 && s->reap;
        urgent |= r->error != 0;
        if (keep) {
            int left = 0;
            for (request *c = r->chain; c != NULL && left < LOW_CHAIN; c = c->next)
                left++;
            urgent |= left < LOW_CHAIN;
            r->prev_live = NULL;
            r->next_live = s->live;
            if (s->live != NULL)
                s->live->prev_live = r;
            s->live = r;
            r->home = who > 0 ? who - 1 : least_homed(s);  /* a successor stays with its reaper */
            s->homed[r->home]++;
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = r};
            epoll_ctl(s->epfd[r->home], EPOLL_CTL_ADD, r->pidfd, &ev);
        } else if (r->chain != NULL) {
            next = r->chain;
            if (w != NULL)
                w->heir = next->tag;
            r->chain = NULL;
            next->chain = next->next;
            next->next = NULL;
        }
        s->spawning[who] = next;  /* unfollow still finds the rest of the chain */
        pthread_mutex_unlock(&s->lock);
        if (!keep)
            free_request(r);
        if (next == NULL)
            return urgent;
        r = next;
    }
}

/* Take r off the running children (it has exited, or is being killed at close); the lock is held.
 * Returns its successors. */
static request *reap_locked(Spawner *s, request *r) {
    killpg(r->pid, SIGKILL);  /* leftovers of the job; the zombie leader keeps the group id reserved */
    guard_unlist(s, r, r->pid);  /* before wait4: the group id cannot have been reused yet */
    int status = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    while (wait4(r->pid, &status, 0, &usage) < 0 && errno == EINTR)
        ;
    double mono = clock_now(CLOCK_MONOTONIC), real = clock_now(CLOCK_REALTIME);
    epoll_ctl(s->epfd[r->home], EPOLL_CTL_DEL, r->pidfd, NULL);
    s->homed[r->home]--;
    close(r->pidfd);
    if (r->prev_live != NULL)
        r->prev_live->next_live = r->next_live;
    else
        s->live = r->next_live;
    if (r->next_live != NULL)
        r->next_live->prev_live = r->prev_live;
    row *w = add_row(s, 1, r, status, usage.ru_maxrss, mono, real);
    request *chain = r->chain;
    if (w != NULL && chain != NULL)
        w->heir = chain->tag;
    r->chain = NULL;
    return chain;
}

/* Whether spawning r may block: a FIFO or a socket among its files blocks its open until a peer
 * comes (a missing file is created, a regular one or a device opens at once).  A stat a file, on
 * the slot's critical path between a reap and its successor's spawn; none for the default stdin,
 * /dev/null (a character device), or for stderr when it is stdout (the spawn dups it): 3 -> 1-2
 * system calls a job as sheaf plan writes them (stdin /dev/null, .out and .err apart). */
static int may_block(const request *r) {
    const char *paths[] = {r->in, r->out, r->err};
    for (int i = 0; i < 3; i++) {
        char full[4096];
        const char *path = paths[i];
        if ((i == 0 && strcmp(path, "/dev/null") == 0) || (i == 2 && strcmp(path, r->out) == 0))
            continue;
        if (path[0] != '/') {  /* relative to the job's directory, as the spawn opens it */
            if (snprintf(full, sizeof full, "%s/%s", r->cwd, path) >= (int)sizeof full)
                return 1;
            path = full;
        }
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
            return 1;
    }
    return 0;
}

/* Queue r first for the spawner thread; the lock is held. */
static void push_front(Spawner *s, request *r) {
    r->next = s->todo;
    s->todo = r;
    if (s->todo_tail == NULL)
        s->todo_tail = r;
    pthread_cond_signal(&s->wake);
}

/* Wake Python: results wait (the eventfd is readable until results() reads it). */
static void notify(Spawner *s) {
    pthread_mutex_lock(&s->lock);
    s->unannounced = 0;
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    ssize_t ignored = write(s->wakeup, &one, sizeof one);
    (void)ignored;  /* a full counter is still readable: nothing is lost */
}

/* The reaper's wake-up of Python after a batch of reaps whose urgent ones were told at once (see
 * "Wake-ups"): now when COALESCE_ROWS rows wait or the oldest has waited COALESCE_SECONDS; else the
 * epoll_wait timeout (ms) until it must, -1 when nothing waits. */
static int announce(Spawner *s) {
    pthread_mutex_lock(&s->lock);
    int rows = s->unannounced;
    double waited = rows ? clock_now(CLOCK_MONOTONIC) - s->oldest : 0.0;
    pthread_mutex_unlock(&s->lock);
    if (rows == 0)
        return -1;
    if (rows >= COALESCE_ROWS || waited >= s->coalesce) {
        notify(s);
        return -1;
    }
    int ms = (int)((s->coalesce - waited) * 1000.0 + 0.999);
    return ms > 0 ? ms : 1;
}

/* A reaper thread: reaps each of its children whose pidfd is readable and starts its first successor
 * (one that may block -- a FIFO as output -- goes to the spawner thread: no reaping waits for it). */
static void *reap_loop(void *arg) {
    Spawner *s = ((worker *)arg)->s;
    int who = ((worker *)arg)->who;
    char name[16];
    snprintf(name, sizeof name, "sheaf-reaper%d", who - 1);
    pthread_setname_np(pthread_self(), name);  /* for top -H, perf and py-spy */
    struct epoll_event events[64];
    int timeout = -1;
    for (;;) {
        int n = epoll_wait(s->epfd[who - 1], events, 64, timeout);
        for (int i = 0; i < n; i++) {
            request *r = events[i].data.ptr;
            if (r == NULL) {  /* kicked: closing */
                notify(s);
                return NULL;
            }
            pthread_mutex_lock(&s->lock);
            int urgent = r->urgent;  /* kill()'s answer */
            request *next = reap_locked(s, r);
            if (next != NULL) {  /* its own successors go with it */
                next->chain = next->next;
                next->next = NULL;
                s->spawning[who] = next;
                s->reserved[who - 1]++;  /* the chain stays this reaper's while its successor starts */
            }
            pthread_mutex_unlock(&s->lock);
            free_request(r);
            if (next == NULL) {
                urgent = 1;  /* its claim is free: the engine refills the slot */
            } else if (may_block(next)) {  /* the spawner thread's, as a submitted one */
                pthread_mutex_lock(&s->lock);
                s->spawning[who] = NULL;
                push_front(s, next);
                pthread_mutex_unlock(&s->lock);
                urgent = 1;  /* that spawn may block a while: the exit is not kept waiting for it */
            } else {
                urgent |= launch(s, next, who);
            }
            if (next != NULL) {
                pthread_mutex_lock(&s->lock);
                s->reserved[who - 1]--;
                pthread_mutex_unlock(&s->lock);
            }
            if (urgent)  /* now, not after the rest of the batch's reaps and spawns */
                notify(s);
        }
        timeout = announce(s);
    }
}

/* The spawner thread: spawns the requests in order (successors first). */
static void *spawn_loop(void *arg) {
    Spawner *s = arg;
    pthread_setname_np(pthread_self(), "sheaf-spawner");
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->todo == NULL && !s->closing)
            pthread_cond_wait(&s->wake, &s->lock);
        request *r = s->todo;
        if (r == NULL) {  /* closing, and everything submitted is spawned */
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        s->todo = r->next;
        if (s->todo == NULL)
            s->todo_tail = NULL;
        r->next = NULL;
        s->spawning[0] = r;
        pthread_mutex_unlock(&s->lock);
        launch(s, r, 0);
        notify(s);
    }
}

/* Take the lock on Python's side: at once when it is free, else with the GIL released while waiting
 * (a reaper holds the lock through a reap's system calls; the threads here never take the GIL, so
 * nothing can wait on it in turn, and the engine's other Python threads -- the journal's -- run). */
static void lock_from_python(Spawner *s) {
    if (pthread_mutex_trylock(&s->lock) == 0)
        return;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&s->lock);
    Py_END_ALLOW_THREADS
}

/* str's text when it is ASCII (its file-system encoding, whatever the encoding: no bytes object is
 * made), with its length; NULL when it is not (no exception set).  Every string of a job sheaf
 * plans is ASCII: this skips an encoded copy, made and freed, of each of a request's ~10 strings. */
static const char *ascii_text(PyObject *str, Py_ssize_t *size) {
    if (!PyUnicode_Check(str) || !PyUnicode_IS_READY(str) || !PyUnicode_IS_ASCII(str))
        return NULL;
    *size = PyUnicode_GET_LENGTH(str);
    return (const char *)PyUnicode_1BYTE_DATA(str);
}

/* A malloc'd copy of size bytes at data, NUL-terminated; NULL with an exception set (ValueError on
 * an embedded NUL). */
static char *c_copy(const char *data, Py_ssize_t size) {
    if (memchr(data, '\0', (size_t)size) != NULL) {
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return NULL;
    }
    char *copy = malloc((size_t)size + 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, data, (size_t)size);
    copy[size] = '\0';
    return copy;
}

/* A malloc'd copy of str's file-system encoding; NULL with an exception set (ValueError on a NUL). */
static char *c_string(PyObject *str) {
    Py_ssize_t size;
    const char *text = ascii_text(str, &size);
    if (text != NULL)
        return c_copy(text, size);
    PyObject *bytes = PyUnicode_EncodeFSDefault(str);
    if (bytes == NULL)
        return NULL;
    char *data;
    if (PyBytes_AsStringAndSize(bytes, &data, &size) < 0) {
        Py_DECREF(bytes);
        return NULL;
    }
    char *copy = c_copy(data, size);
    Py_DECREF(bytes);
    return copy;
}

static char **c_argv(PyObject *argv) {
    PyObject *seq = PySequence_Fast(argv, "argv must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char **out = calloc((size_t)n + 1, sizeof *out);
    if (out == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((out[i] = c_string(PySequence_Fast_GET_ITEM(seq, i))) == NULL) {
            Py_DECREF(seq);
            free_strings(out);
            return NULL;
        }
    }
    Py_DECREF(seq);
    return out;
}

static char **c_env(PyObject *env) {
    if (!PyDict_Check(env)) {
        PyErr_SetString(PyExc_TypeError, "env must be a dict");
        return NULL;
    }
    char **out = calloc((size_t)PyDict_Size(env) + 1, sizeof *out);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(env, &pos, &key, &value)) {
        char *name = c_string(key), *text = name ? c_string(value) : NULL;
        if (text == NULL) {
            free(name);
            free_strings(out);
            return NULL;
        }
        if (*name == '\0' || strchr(name, '=') != NULL) {
            free(name);
            free(text);
            free_strings(out);
            PyErr_SetString(PyExc_ValueError, "illegal environment variable name");  /* as os.posix_spawn */
            return NULL;
        }
        size_t a = strlen(name), b = strlen(text);
        char *entry = malloc(a + b + 2);
        if (entry != NULL) {
            memcpy(entry, name, a);
            entry[a] = '=';
            memcpy(entry + a + 1, text, b + 1);
        }
        free(name);
        free(text);
        if (entry == NULL) {
            free_strings(out);
            PyErr_NoMemory();
            return NULL;
        }
        out[i++] = entry;
    }
    return out;
}

static int c_cpus(PyObject *cpus, request *r) {
    CPU_ZERO(&r->cpus);
    if (cpus == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(cpus, "cpus must be None or a sequence of ints");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        long cpu = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (cpu == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "CPU id out of range");
            return -1;
        }
        CPU_SET((int)cpu, &r->cpus);
        r->pin = 1;
    }
    Py_DECREF(seq);
    return 0;
}

/* A request from (tag, argv, env, cwd, stdout, stderr, stdin, cpus); NULL with an exception set. */
static request *make_request(Spawner *s, PyObject *args) {
    long long tag;
    PyObject *argv, *env, *cwd, *out, *err, *in, *cpus;
    if (!PyArg_ParseTuple(args, "LOOUUUUO", &tag, &argv, &env, &cwd, &out, &err, &in, &cpus))
        return NULL;
    if (!s->running) {
        PyErr_SetString(PyExc_RuntimeError, "the spawner is closed");
        return NULL;
    }
    request *r = calloc(1, sizeof *r);
    if (r == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    r->tag = tag;
    r->listed = -1;
    if ((r->argv = c_argv(argv)) == NULL || (r->envp = c_env(env)) == NULL || (r->cwd = c_string(cwd)) == NULL
        || (r->out = c_string(out)) == NULL || (r->err = c_string(err)) == NULL || (r->in = c_string(in)) == NULL
        || c_cpus(cpus, r) < 0) {
        free_request(r);
        return NULL;
    }
    if (r->argv[0] == NULL) {
        free_request(r);
        PyErr_SetString(PyExc_ValueError, "argv must not be empty");
        return NULL;
    }
    return r;
}

static PyObject *spawner_submit(Spawner *s, PyObject *args) {
    request *r = make_request(s, args);
    if (r == NULL)
        return NULL;
    lock_from_python(s);
    r->next = NULL;
    if (s->todo_tail != NULL)
        s->todo_tail->next = r;
    else
        s->todo = r;
    s->todo_tail = r;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    Py_RETURN_NONE;
}

/* The running child with this tag, or NULL; the caller holds the lock. */
static request *find_live(Spawner *s, long long tag) {
    for (request *r = s->live; r != NULL; r = r->next_live)
        if (r->tag == tag)
            return r;
    return NULL;
}

/* The request that holds the chain the child `tag` had: the child itself while it runs, else
 * (reaped, its exit not yet taken by results()) its heir's holder -- running, being spawned or
 * queued for the spawner thread; NULL when the chain is gone (its claim went back).  The engine
 * binds to the child it last heard of, which may have been reaped since (all the more as exits
 * are told a little late: "Wake-ups"); its successor takes the chain's end either way.  The lock
 * is held. */
static request *chain_holder(Spawner *s, long long tag) {
    for (;;) {
        request *j = find_live(s, tag);
        for (int who = 0; who <= s->nreapers && j == NULL; who++)
            if (s->spawning[who] != NULL && s->spawning[who]->tag == tag)
                j = s->spawning[who];
        for (request *q = s->todo; q != NULL && j == NULL; q = q->next)
            if (q->tag == tag)
                j = q;
        if (j != NULL)
            return j;
        row *w = s->done;
        while (w != NULL && !(w->tag == tag && (w->kind == 1 || w->error != 0)))
            w = w->next;
        if (w == NULL || w->heir < 0)
            return NULL;
        tag = w->heir;  /* rows come in order: a heir's own row is later, the walk ends */
    }
}

static PyObject *spawner_follow(Spawner *s, PyObject *args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1 || !s->reap) {
        PyErr_SetString(PyExc_TypeError, "follow(after, tag, argv, env, cwd, stdout, stderr, stdin, cpus) "
                                         "on a reaping spawner");
        return NULL;
    }
    long long after = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 0));
    if (after == -1 && PyErr_Occurred())
        return NULL;
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    if (rest == NULL)
        return NULL;
    request *r = make_request(s, rest);
    Py_DECREF(rest);
    if (r == NULL)
        return NULL;
    lock_from_python(s);
    request *j = chain_holder(s, after);
    if (j != NULL) {
        request **end = &j->chain;
        while (*end != NULL)
            end = &(*end)->next;
        r->next = NULL;
        *end = r;
    }
    pthread_mutex_unlock(&s->lock);
    if (j == NULL)
        free_request(r);
    return PyBool_FromLong(j != NULL);
}

/* Unlink the request with this tag from the chain at *link; 1 if it was there. */
static int unlink_from(request **link, long long tag) {
    for (; *link != NULL; link = &(*link)->next) {
        if ((*link)->tag == tag) {
            request *r = *link;
            *link = r->next;
            free_request(r);
            return 1;
        }
    }
    return 0;
}

static PyObject *spawner_unfollow(Spawner *s, PyObject *arg) {
    long long tag = PyLong_AsLongLong(arg);
    if (tag == -1 && PyErr_Occurred())
        return NULL;
    lock_from_python(s);
    int found = 0;
    for (int who = 0; who <= s->nreapers && !found; who++)
        found = s->spawning[who] != NULL && unlink_from(&s->spawning[who]->chain, tag);
    for (request *r = s->live; r != NULL && !found; r = r->next_live)
        found = unlink_from(&r->chain, tag);
    for (request *r = s->todo; r != NULL && !found; r = r->next)  /* a successor's own, queued */
        found = unlink_from(&r->chain, tag);
    pthread_mutex_unlock(&s->lock);
    return PyBool_FromLong(found);
}

static PyObject *spawner_kill(Spawner *s, PyObject *args) {
    long long tag;
    int sig;
    if (!PyArg_ParseTuple(args, "Li", &tag, &sig))
        return NULL;
    lock_from_python(s);  /* a reaper holds it from killpg to wait4: no reaped group is hit */
    request *r = find_live(s, tag);
    if (r != NULL) {
        killpg(r->pid, sig);
        r->urgent = 1;
    }
    pthread_mutex_unlock(&s->lock);
    return PyBool_FromLong(r != NULL);
}

static PyObject *spawner_guard(Spawner *s, PyObject *args) {
    int table_fd, pipe_fd;
    if (!PyArg_ParseTuple(args, "ii", &table_fd, &pipe_fd))
        return NULL;
    struct stat st;
    if (fstat(table_fd, &st) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (st.st_size < (off_t)(GUARD_WORDS * sizeof(uint64_t))) {  /* a store past its end: SIGBUS */
        PyErr_SetString(PyExc_ValueError, "the job guard's table is smaller than its layout");
        return NULL;
    }
    void *table = mmap(NULL, GUARD_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, table_fd, 0);
    if (table == MAP_FAILED)
        return PyErr_SetFromErrno(PyExc_OSError);
    lock_from_python(s);
    void *old = s->table;
    if (old == NULL) {  /* once: entries made already point into it */
        s->guard = pipe_fd;
        __atomic_store_n(&s->table, (uint64_t *)table, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&s->lock);
    if (old != NULL)
        munmap(table, GUARD_WORDS * sizeof(uint64_t));
    Py_RETURN_NONE;
}

/* A result row as Python's tuple (see the header); NULL with an exception set.  Made field by field,
 * not with Py_BuildValue, which parses its format string again for every row. */
static PyObject *row_tuple(const row *w) {
    PyObject *items[9] = {
        PyLong_FromLong(w->kind), PyLong_FromLongLong(w->tag), PyLong_FromLong(w->pid),
        PyLong_FromLong(w->pidfd), PyLong_FromLong(w->error), PyLong_FromLong(w->status),
        PyLong_FromLong(w->maxrss), PyFloat_FromDouble(w->mono), PyFloat_FromDouble(w->real),
    };
    PyObject *tuple = NULL;
    int made = 1;
    for (int i = 0; i < 9; i++)
        made &= items[i] != NULL;
    if (made)
        tuple = PyTuple_New(9);
    if (tuple == NULL) {
        for (int i = 0; i < 9; i++)
            Py_XDECREF(items[i]);
        return NULL;
    }
    for (int i = 0; i < 9; i++)
        PyTuple_SET_ITEM(tuple, i, items[i]);
    return tuple;
}

static PyObject *take_results(Spawner *s) {
    uint64_t count;
    if (s->wakeup >= 0) {
        ssize_t ignored = read(s->wakeup, &count, sizeof count);  /* EAGAIN: nothing written since */
        (void)ignored;
    }
    lock_from_python(s);
    row *w = s->done;
    s->done = s->done_tail = NULL;
    s->unannounced = 0;
    pthread_mutex_unlock(&s->lock);
    Py_ssize_t n = 0;
    for (const row *r = w; r != NULL; r = r->next)
        n++;
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; w != NULL; i++) {
        row *next = w->next;
        PyObject *item = list ? row_tuple(w) : NULL;
        if (item != NULL) {
            PyList_SET_ITEM(list, i, item);
        } else {
            Py_CLEAR(list);  /* out of memory: the pidfds of what is left are closed, not leaked */
            if (w->pidfd >= 0)
                close(w->pidfd);
        }
        free(w);
        w = next;
    }
    return list;
}

static PyObject *spawner_results(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    return take_results(s);
}

/* Tell the spawner and reaper threads to end, and wait until they have. */
static void end_threads(Spawner *s) {
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    ssize_t ignored = write(s->kick, &one, sizeof one);
    (void)ignored;
    for (int k = 0; k < s->nreapers; k++)
        pthread_join(s->reapers[k], NULL);
    pthread_join(s->thread, NULL);
}

static void stop(Spawner *s) {
    if (!s->running)
        return;
    Py_BEGIN_ALLOW_THREADS
    end_threads(s);
    pthread_mutex_lock(&s->lock);  /* the thread is gone: what still runs is killed and reaped */
    while (s->live != NULL) {
        request *r = s->live;
        free_chain(reap_locked(s, r));
        free_request(r);
    }
    pthread_mutex_unlock(&s->lock);
    Py_END_ALLOW_THREADS
    s->running = 0;
}

/* Close the descriptors the threads waited on (they are gone: stop() joined them, or none started). */
static void close_descriptors(Spawner *s) {
    if (s->wakeup >= 0)
        close(s->wakeup);
    if (s->kick >= 0)
        close(s->kick);
    for (int k = 0; k < MAX_REAPERS; k++) {
        if (s->epfd[k] >= 0)
            close(s->epfd[k]);
        s->epfd[k] = -1;
    }
    s->wakeup = s->kick = -1;
}

static PyObject *spawner_close(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    stop(s);
    PyObject *left = take_results(s);
    close_descriptors(s);
    return left;
}

static PyObject *spawner_fileno(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLong(s->wakeup);
}

static int spawner_init(Spawner *s, PyObject *args, PyObject *kwds) {
    static char *names[] = {"reap", "coalesce", NULL};
    int reap = 0;
    double coalesce = COALESCE_SECONDS;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd", names, &reap, &coalesce))
        return -1;
    if (!(coalesce >= 0.0 && coalesce <= 3600.0)) {
        PyErr_SetString(PyExc_ValueError, "coalesce must be between 0 and 3600 seconds");
        return -1;
    }
    s->coalesce = coalesce;
    if (s->running || s->wakeup >= 0) {
        PyErr_SetString(PyExc_RuntimeError, "the spawner is already started");
        return -1;
    }
    s->reap = reap;
    sigemptyset(&s->defaults);
    sigaddset(&s->defaults, SIGPIPE);
    sigaddset(&s->defaults, SIGXFSZ);
    s->wakeup = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wakeup < 0 || s->kick < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;  /* the descriptors are closed by dealloc */
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int reapers = !reap ? 0 : cpus < 2 ? 1 : cpus > MAX_REAPERS ? MAX_REAPERS : (int)cpus;
    for (int k = 0; k < reapers; k++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        s->epfd[k] = epoll_create1(EPOLL_CLOEXEC);
        if (s->epfd[k] < 0 || epoll_ctl(s->epfd[k], EPOLL_CTL_ADD, s->kick, &ev) < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
    }
    int err = pthread_create(&s->thread, NULL, spawn_loop, s);
    int spawner = err == 0;
    while (err == 0 && s->nreapers < reapers) {
        int k = s->nreapers;
        s->workers[k + 1] = (worker){s, k + 1};
        err = pthread_create(&s->reapers[k], NULL, reap_loop, &s->workers[k + 1]);
        if (err == 0)
            s->nreapers++;
    }
    if (err != 0 && spawner) {  /* a reaper did not start: stop the threads that did */
        end_threads(s);
        s->nreapers = 0;
    }
    if (err != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    s->running = 1;
    return 0;
}

static PyObject *spawner_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds)) {
    Spawner *s = (Spawner *)type->tp_alloc(type, 0);
    if (s != NULL) {
        s->wakeup = s->kick = s->guard = -1;
        for (int k = 0; k < MAX_REAPERS; k++)
            s->epfd[k] = -1;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->wake, NULL);
    }
    return (PyObject *)s;
}

static void spawner_dealloc(Spawner *s) {
    if (s->running || s->wakeup >= 0) {
        PyObject *left = spawner_close(s, NULL);
        if (left != NULL) {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(left); i++) {
                int fd = (int)PyLong_AsLong(PyTuple_GET_ITEM(PyList_GET_ITEM(left, i), 3));
                if (fd >= 0)
                    close(fd);
            }
            Py_DECREF(left);
        }
        PyErr_Clear();
    }
    close_descriptors(s);  /* a spawner whose start failed: never running, its descriptors still open */
    if (s->table != NULL)
        munmap(s->table, GUARD_WORDS * sizeof(uint64_t));
    free_chain(s->todo);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef spawner_methods[] = {
    {"submit", (PyCFunction)spawner_submit, METH_VARARGS, "queue a spawn (see the module comment)"},
    {"follow", (PyCFunction)spawner_follow, METH_VARARGS, "bind a successor to a running child"},
    {"unfollow", (PyCFunction)spawner_unfollow, METH_O, "unbind a successor not yet taken"},
    {"kill", (PyCFunction)spawner_kill, METH_VARARGS, "signal a running child's process group"},
    {"guard", (PyCFunction)spawner_guard, METH_VARARGS, "the job guard's table and pipe"},
    {"results", (PyCFunction)spawner_results, METH_NOARGS, "the starts and exits since the last call"},
    {"close", (PyCFunction)spawner_close, METH_NOARGS, "finish, stop the thread, return what is left"},
    {"fileno", (PyCFunction)spawner_fileno, METH_NOARGS, "the eventfd that is readable while results wait"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SpawnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sheaf.backends.local._cspawn.Spawner",
    .tp_basicsize = sizeof(Spawner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = spawner_new,
    .tp_init = (initproc)spawner_init,
    .tp_dealloc = (destructor)spawner_dealloc,
    .tp_methods = spawner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sheaf.backends.local._cspawn",
    "The local backend's spawner and reaper threads, in C.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cspawn(void) {
    if (PyType_Ready(&SpawnerType) < 0)
        return NULL;
    long tick = sysconf(_SC_CLK_TCK);
    if (tick > 0)
        clock_ticks = tick;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SpawnerType);
    if (PyModule_AddObject(m, "Spawner", (PyObject *)&SpawnerType) < 0) {
        Py_DECREF(&SpawnerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
