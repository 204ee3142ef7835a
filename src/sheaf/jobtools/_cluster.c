/* sheaf-cluster-c: the hot path of sheaf-cluster (seqexec.py) as a small C program.
 *
 * A clustered job's cost is mostly its runner's start-up, and this program starts its first task in
 * a small fraction of the Python sheaf-cluster's start-up.  It is the same program, not a variant:
 *
 * - It does exactly what seqexec.py and _seqexec_run.py do for the inputs it accepts: the options
 *   -d -e -f -S -s -n, an .in file (or stdin) in the grammar of sheaf.formats._seqexec_in, tasks
 *   started in file order with posix_spawn (argv[0] looked up in PATH as _which does, stdin from
 *   /dev/null, default dispositions for SIGPIPE SIGXFSZ SIGTERM SIGINT SIGHUP), reaped with wait4,
 *   one [cluster-task ...] line per reaped task and one [cluster-summary ...] line, each a single
 *   write() on fd 1; -f, -e and exit status 5 as there; SIGTERM/SIGINT/SIGHUP forwarded to the
 *   running tasks, nothing new started, and the runner dies of the same signal after its summary.
 * - Everything else it hands over, before anything has run, by exec'ing the Python sheaf-cluster
 *   with the same arguments: a usage error (so the message is Python's), -h, -R or
 *   SEQEXEC_PROGRESS_REPORT, SEQEXEC_SETUP/SEQEXEC_CLEANUP, an unreadable input, a malformed
 *   file, a NUL byte, and a byte whose meaning depends on Python's Unicode rules (non-ASCII, and
 *   the controls str.split() takes for white space) where it could change a line's reading: in a
 *   #@ record or on a line without a printable ASCII character (check_line).
 *   SHEAF_PURE_PYTHON=1 hands over at once.  A stdin already read is passed on in a temporary file.
 *   The original argv[0] travels in SHEAF_CLUSTER_ARGV0, so the summary's app= is the same.
 * - The Python program is found as: $SHEAF_CLUSTER_FALLBACK, else the console script of the
 *   installation this binary belongs to (<prefix>/lib/pythonX.Y/site-packages/sheaf/jobtools/
 *   _bin/ -> <prefix>/bin/sheaf-cluster), else sheaf-cluster on PATH; if none exists it says so
 *   and exits 2 -- never a silent difference.
 *
 * Options, input and hand-over are in _cluster_read.c; records and running here.
 */
#include "_cluster.h"

/* ---- records: _records.py, byte for byte ---------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void iso_time(double seconds, char *out, size_t size)
{
    time_t whole = (time_t)seconds;
    int millis = (int)((seconds - (double)whole) * 1000);
    struct tm local;
    localtime_r(&whole, &local);
    long offset = local.tm_gmtoff / 60;
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &local);
    snprintf(out, size, "%s.%03d%c%02ld:%02ld", stamp, millis, offset >= 0 ? '+' : '-',
             labs(offset) / 60, labs(offset) % 60);
}

static const char *application(char **argv)  /* past a leading pegasus-kickstart and its options */
{
    size_t len = strlen(argv[0]);
    if (len < 9 || strcmp(argv[0] + len - 9, "kickstart") != 0)
        return argv[0];
    for (size_t i = 1; argv[i] != NULL; ) {
        const char *arg = argv[i];
        if (arg[0] == '-' && arg[1] && strchr("ioelnNRBLTIwWSsKk", arg[1]))
            i += arg[2] == '\0' ? 2 : 1;
        else if (arg[0] == '-' && arg[1] && strchr("HVXFfqctzZ", arg[1]))
            i += 1;
        else
            return argv[i];
    }
    return argv[0];
}

static void emit(const char *text, size_t len)
{
    while (len > 0) {
        ssize_t put = write(1, text, len);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return;
        text += put;
        len -= (size_t)put;
    }
}

static void emit_task(const Child *c, int status, pid_t pid, double final)
{
    char when[64], line[64];
    iso_time(c->start, when, sizeof when);
    snprintf(line, sizeof line, "line=%ld, ", c->line);
    const char *app = application(c->argv);
    size_t size = strlen(app) + 256;
    char *text = malloc(size);
    int n = snprintf(text, size, "[cluster-task id=%ld, start=\"%s\", duration=%.3f, status=%d, "
                     "%spid=%d, app=\"%s\"]\n", c->count, when, final - c->start, status, line,
                     (int)pid, app);
    emit(text, (size_t)n);
    free(text);
}

/* ---- running -------------------------------------------------------------------------------- */

typedef struct {
    Options *opts;
    Child *running;
    size_t slots, nrunning;
    long started, failed;
    char **resolved_names, **resolved_paths;
    size_t nresolved;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t forwarded;
} Run;

static volatile sig_atomic_t g_stop;
static Run *g_run;

static void on_signal(int signum)
{
    g_stop = signum;
    for (size_t i = 0; i < g_run->slots; i++)
        if (g_run->running[i].pid > 0)
            kill(g_run->running[i].pid, signum);
}

static char *which(const char *name)  /* _seqexec_run._which, path joined as os.path.join does */
{
    const char *path = getenv("PATH");
    const char *dirs = path ? path : "/bin:/usr/bin";
    size_t nlen = strlen(name);
    for (const char *dir = dirs;; ) {
        const char *colon = strchr(dir, ':');
        size_t dlen = colon ? (size_t)(colon - dir) : strlen(dir);
        char *full = malloc(dlen + nlen + 3);
        if (dlen == 0)
            sprintf(full, "./%s", name);
        else
            sprintf(full, "%.*s%s%s", (int)dlen, dir, dir[dlen - 1] == '/' ? "" : "/", name);
        if (cluster_executable(full))
            return full;
        free(full);
        if (colon == NULL)
            return NULL;
        dir = colon + 1;
    }
}

static char *resolve(Run *r, const char *name)
{
    if (name[0] == '\0' || strchr(name, '/') != NULL)
        return (char *)name;
    for (size_t i = 0; i < r->nresolved; i++)
        if (strcmp(r->resolved_names[i], name) == 0)
            return r->resolved_paths[i];
    char *found = which(name);
    r->resolved_names = realloc(r->resolved_names, (r->nresolved + 1) * sizeof(char *));
    r->resolved_paths = realloc(r->resolved_paths, (r->nresolved + 1) * sizeof(char *));
    r->resolved_names[r->nresolved] = (char *)name;
    r->resolved_paths[r->nresolved++] = found ? found : (char *)name;
    return found ? found : (char *)name;
}

static int is_failure(const Options *o, int status)
{
    return !(WIFEXITED(status) && o->success[WEXITSTATUS(status)]);
}

static void report(Run *r, const Child *c, int status, pid_t pid)
{
    double final = now();
    r->failed += is_failure(r->opts, status);
    emit_task(c, status, pid, final);
}

static void start_task(Run *r, const Task *t)
{
    size_t argc = 0;
    while (t->argv[argc]) argc++;
    char **argv = malloc((argc + 1) * sizeof *argv);
    memcpy(argv, t->argv, (argc + 1) * sizeof *argv);
    argv[0] = resolve(r, t->argv[0]);
    Child c = {0, ++r->started, t->line, argv, now()};
    pid_t pid;
    sigprocmask(SIG_BLOCK, &r->forwarded, NULL);  /* the handler sees the table whole */
    int err = posix_spawn(&pid, argv[0], &r->actions, &r->attr, argv, environ);
    if (err != 0) {
        sigprocmask(SIG_UNBLOCK, &r->forwarded, NULL);
        const char *slash = strrchr(cluster_argv[0], '/');
        fprintf(stderr, "%s: exec %s: %d: %s\n", slash ? slash + 1 : cluster_argv[0], argv[0], err,
                strerror(err));
        report(r, &c, EXEC_FAILED, -1);
        free(argv);
        return;
    }
    c.pid = pid;
    for (size_t i = 0; i < r->slots; i++)
        if (r->running[i].pid == 0) { r->running[i] = c; break; }
    r->nrunning++;
    if (g_stop)  /* the signal came after run_tasks looked and before the spawn */
        kill(pid, g_stop);
    sigprocmask(SIG_UNBLOCK, &r->forwarded, NULL);
}

static int take(Run *r, pid_t pid, Child *out)  /* remove pid's entry from the table, if there */
{
    int found = 0;
    sigprocmask(SIG_BLOCK, &r->forwarded, NULL);  /* the handler walks the table */
    for (size_t i = 0; i < r->slots && !found; i++) {
        if (r->running[i].pid == pid) {
            *out = r->running[i];
            r->running[i].pid = 0;
            r->nrunning--;
            found = 1;
        }
    }
    sigprocmask(SIG_UNBLOCK, &r->forwarded, NULL);
    return found;
}

static void drain(Run *r, size_t keep)  /* reap children until at most keep are running */
{
    while (r->nrunning > keep) {
        int status;
        Child c;
        pid_t pid = wait4(-1, &status, 0, NULL);
        if (pid < 0 && errno == EINTR)
            continue;  /* a forwarded signal: its handler has run; keep reaping */
        if (pid < 0)
            return;
        if (take(r, pid, &c)) {
            report(r, &c, status, pid);
            free(c.argv);
        }
    }
}

static void setup_spawn(Run *r)
{
    sigset_t defaults, empty;
    sigemptyset(&defaults);
    sigemptyset(&empty);
    int sigs[] = {SIGPIPE, SIGXFSZ, SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaddset(&defaults, sigs[i]);
    posix_spawn_file_actions_init(&r->actions);
    posix_spawn_file_actions_addopen(&r->actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_init(&r->attr);
    posix_spawnattr_setsigdefault(&r->attr, &defaults);
    posix_spawnattr_setsigmask(&r->attr, &empty);
    posix_spawnattr_setflags(&r->attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
}

static long run_tasks(Run *r, const Task *tasks, size_t count, long lines)
{
    for (size_t i = 0; i < count; i++) {
        drain(r, r->slots - 1);
        if (g_stop || (r->opts->fail_hard && r->failed))
            return tasks[i].line;
        start_task(r, &tasks[i]);
    }
    return lines;
}

static int finish(Run *r, double start, long lines)
{
    Options *o = r->opts;
    int code = r->failed && !o->always_succeed ? FAILURE_EXIT : 0;
    int stopped = g_stop != 0;
    char when[64];
    iso_time(start, when, sizeof when);
    size_t size = strlen(cluster_argv[0]) + 512;
    char *text = malloc(size);
    int n = snprintf(text, size, "[cluster-summary stat=\"%s\", lines=%ld, tasks=%ld, succeeded=%ld, "
                     "failed=%ld, extra=0, duration=%.3f, start=\"%s\", pid=%d, app=\"%s\"]\n",
                     code != 0 || stopped ? "fail" : "ok", lines, r->started, r->started - r->failed,
                     r->failed, now() - start, when, (int)getpid(), cluster_argv[0]);
    emit(text, (size_t)n);
    if (stopped) {
        signal(g_stop, SIG_DFL);
        kill(getpid(), g_stop);
    }
    return code;
}

static int run(Options *o, const Task *tasks, size_t count, long lines)
{
    Run r = {0};
    r.opts = o;
    r.slots = (size_t)(o->cpus < (long long)count ? o->cpus : (long long)count);
    r.slots = r.slots ? r.slots : 1;
    r.running = calloc(r.slots, sizeof *r.running);
    g_run = &r;
    setup_spawn(&r);
    sigemptyset(&r.forwarded);
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_signal;
    int forwarded[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < 3; i++) {
        sigaddset(&r.forwarded, forwarded[i]);
        sigaction(forwarded[i], &act, NULL);
    }
    double start = now();
    long at = run_tasks(&r, tasks, count, lines);
    drain(&r, 0);
    return finish(&r, start, at);
}

int main(int argc, char **argv)
{
    Options opts;
    cluster_argv = argv;
    const char *pure = getenv("SHEAF_PURE_PYTHON");
    if (argc < 1 || (pure != NULL && strcmp(pure, "1") == 0))
        cluster_hand_over();
    cluster_parse_options(argc, argv, &opts);
    if (opts.status_file != NULL) {
        int fd = open(opts.status_file, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0) {
            fprintf(stderr, "%s: open status %s: %d: %s\n", PROG, opts.status_file, errno,
                    strerror(errno));
            return 2;
        }
        dup2(fd, 1);
        close(fd);
    }
    cluster_read_input(opts.input);
    size_t count;
    long lines;
    Task *tasks = cluster_parse_tasks(&count, &lines);
    signal(SIGPIPE, SIG_IGN);  /* as the Python interpreter: a closed stdout is an error, not death */
    if (opts.debug)
        fprintf(stderr, "%s: %zu tasks, %lld at once\n", PROG, count, opts.cpus);
    return run(&opts, tasks, count, lines);
}
