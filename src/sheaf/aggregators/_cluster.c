/* sheaf-cluster-c: the hot path of sheaf-cluster (seqexec.py) as a small C program.
 *
 * A clustered job's cost is mostly its runner's start-up: the Python sheaf-cluster needs ~13 ms
 * before its first task, this program well under 1 ms.  It is the same program, not a variant:
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
 *   installation this binary belongs to (<prefix>/lib/pythonX.Y/site-packages/sheaf/aggregators/
 *   _bin/ -> <prefix>/bin/sheaf-cluster), else sheaf-cluster on PATH; if none exists it says so
 *   and exits 2 -- never a silent difference.
 */
#define _GNU_SOURCE
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

static char **g_argv;                 /* our own argv, for the hand-over */
static char *g_data;                  /* the input text (kept to pass a consumed stdin on) */
static size_t g_size;
static int g_from_stdin;

/* ---- hand-over to the Python implementation ---------------------------------------------- */

static int executable(const char *path)
{
    struct stat st;
    return access(path, X_OK) == 0 && stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static void stdin_from_data(void)
{
    FILE *tmp = tmpfile();
    if (tmp == NULL || fwrite(g_data, 1, g_size, tmp) != g_size || fflush(tmp) != 0
        || lseek(fileno(tmp), 0, SEEK_SET) != 0 || dup2(fileno(tmp), 0) < 0) {
        fprintf(stderr, "%s: cannot pass the input on to the Python sheaf-cluster: %s\n", PROG,
                strerror(errno));
        exit(2);
    }
}

static void exec_python(const char *path)
{
    char *saved = g_argv[0];
    g_argv[0] = (char *)path;
    execv(path, g_argv);
    g_argv[0] = saved;
}

static void hand_over(void)
{
    char self[PATH_MAX], guess[PATH_MAX + 64];
    const char *given = getenv("SHEAF_CLUSTER_FALLBACK");
    if (getenv("SHEAF_CLUSTER_ARGV0") != NULL) { /* the fallback led back here: never loop */
        fprintf(stderr, "%s: SHEAF_CLUSTER_FALLBACK names the compiled sheaf-cluster, not the Python one\n",
                PROG);
        exit(2);
    }
    if (g_from_stdin)
        stdin_from_data();
    setenv("SHEAF_CLUSTER_ARGV0", g_argv[0], 1);
    if (given != NULL && *given)
        exec_python(given);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';  /* .../site-packages/sheaf/aggregators/_bin -> up six: the prefix */
            snprintf(guess, sizeof guess, "%s/../../../../../../bin/" PROG, self);
            if (executable(guess))
                exec_python(guess);
        }
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/bin:/usr/bin");
    for (char *dir = strtok(copy, ":"); dir != NULL; dir = strtok(NULL, ":")) {
        snprintf(guess, sizeof guess, "%s/" PROG, dir);
        if (executable(guess))
            exec_python(guess);
    }
    fprintf(stderr, "%s: this input needs the Python sheaf-cluster, which was not found "
            "(set SHEAF_CLUSTER_FALLBACK to its path)\n", PROG);
    exit(2);
}

/* ---- options: seqexec.py's _getopt and _parse, handing over on anything unusual --------- */

static int all_digits(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static long long number(const char *s)  /* all_digits(s); saturates instead of overflowing */
{
    long long v = 0;
    for (; *s; s++)
        v = v > 100000000000LL ? v : v * 10 + (*s - '0');
    return v;
}

static long long cpus_of(const char *text)
{
    if (text == NULL)
        return 1;
    if (strcasecmp(text, "auto") == 0) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) != 0)
            hand_over();
        int n = CPU_COUNT(&set);
        return n > 0 ? n : 1;
    }
    if (!all_digits(text) || number(text) < 1)
        hand_over();
    return number(text);
}

static void option(Options *o, char flag, const char *value, const char **cpus)
{
    switch (flag) {
    case 'd': o->debug++; break;
    case 'e': case 'f':
        if ((flag == 'e' && o->fail_hard) || (flag == 'f' && o->always_succeed))
            hand_over();  /* -e and -f together: Python's usage error */
        if (flag == 'e') o->always_succeed = 1; else o->fail_hard = 1;
        break;
    case 'S':
        if (!all_digits(value) || number(value) < 1 || number(value) > 255)
            hand_over();
        o->success[number(value)] = 1;
        break;
    case 's': o->status_file = value; break;
    case 'n': *cpus = value; break;
    default: hand_over();  /* -h, -R and unknown options */
    }
}

static void parse_options(int argc, char **argv, Options *o)
{
    const char *cpus = getenv("SEQEXEC_CPUS"), *progress = getenv("SEQEXEC_PROGRESS_REPORT");
    int i = 1;
    memset(o, 0, sizeof *o);
    o->success[0] = 1;
    while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
        if (strcmp(argv[i], "--") == 0) { i++; break; }
        const char *word = argv[i];
        for (size_t j = 1; word[j]; j++) {
            char flag = word[j];
            if (strchr("def", flag) != NULL) { option(o, flag, NULL, &cpus); continue; }
            if (strchr("RSns", flag) == NULL || flag == '\0')
                hand_over();
            if (word[j + 1]) option(o, flag, word + j + 1, &cpus);
            else if (i + 1 < argc) option(o, flag, argv[++i], &cpus);
            else hand_over();
            break;
        }
        i++;
    }
    if (argc - i > 1 || (progress != NULL && *progress) || getenv("SEQEXEC_SETUP") != NULL
        || getenv("SEQEXEC_CLEANUP") != NULL)
        hand_over();
    o->input = i < argc ? argv[i] : NULL;
    o->cpus = cpus_of(cpus);
}

/* ---- input --------------------------------------------------------------------------------- */

static int read_all(int fd)
{
    size_t cap = 1 << 16;
    g_data = malloc(cap + 1);
    for (;;) {
        if (g_size == cap && (g_data = realloc(g_data, (cap *= 2) + 1)) == NULL)
            return -1;
        ssize_t got = read(fd, g_data + g_size, cap - g_size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        g_size += (size_t)got;
    }
    g_data[g_size] = '\0';
    return 0;
}

static void read_input(const char *path)
{
    g_from_stdin = path == NULL;
    int fd = path == NULL ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_all(fd) != 0)
        hand_over();  /* Python reports it (exit 3) */
    if (fd > 0)
        close(fd);
    if (memchr(g_data, '\0', g_size) != NULL)
        hand_over();  /* no C string holds it; Python reports the task as one that cannot start */
}

/* Bytes whose meaning to Python's str.strip()/str.split() (the blank-line test and the #@ fields)
 * differs from the shell-word rules: non-ASCII (decoded as UTF-8 there: NBSP, NEL, ... are white
 * space) and the ASCII controls str.split() splits on.  Inside a command's words they are literal in
 * both programs. */
static int exotic(unsigned char c) { return c >= 0x80 || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1f); }

static void check_line(const char *line, size_t len)
{
    int odd = 0, printable = 0;
    for (size_t i = 0; i < len; i++) {
        odd |= exotic((unsigned char)line[i]);
        printable |= line[i] > ' ' && line[i] < 0x7f;
    }
    /* a #@ record is read with str.split(); a line of nothing printable may be blank to Python */
    if (odd && ((len >= 2 && line[0] == '#' && line[1] == '@') || !printable))
        hand_over();
}

static int white(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* _shellwords.split_words over line[0, len): words written NUL-terminated into out, counted in
 * *words; returns -1 on an unclosed quote or a trailing backslash. */
static int split_words(const char *s, size_t len, char *out, size_t *words)
{
    size_t pos = 0;
    int in_word = 0;
    *words = 0;
    while (pos < len) {
        char c = s[pos];
        if (white(c)) {
            if (in_word) { *out++ = '\0'; (*words)++; in_word = 0; }
            pos++;
            continue;
        }
        in_word = 1;
        if (c == '\'') {
            const char *end = memchr(s + pos + 1, '\'', len - pos - 1);
            if (end == NULL)
                return -1;
            size_t n = (size_t)(end - (s + pos + 1));
            memcpy(out, s + pos + 1, n);
            out += n;
            pos += n + 2;
        } else if (c == '"') {
            for (pos++; pos < len && s[pos] != '"'; pos++) {
                if (s[pos] == '\\') {
                    if (pos + 1 >= len)
                        return -1;
                    if (s[pos + 1] != '"' && s[pos + 1] != '\\')
                        *out++ = '\\';
                    pos++;
                }
                *out++ = s[pos];
            }
            if (pos >= len)
                return -1;
            pos++;
        } else if (c == '\\') {
            if (pos + 1 >= len)
                return -1;
            *out++ = s[pos + 1];
            pos += 2;
        } else {
            *out++ = c;
            pos++;
        }
    }
    if (in_word) { *out++ = '\0'; (*words)++; }
    return 0;
}

static int meta_ok(const char *s, size_t len)  /* "#@ n transformation job-id", n >= 1 */
{
    size_t fields = 0, pos = 2;
    int positive = 0, digits = 1;
    while (pos < len) {
        while (pos < len && white(s[pos])) pos++;
        if (pos == len) break;
        for (; pos < len && !white(s[pos]); pos++)
            if (fields == 0) {
                digits &= s[pos] >= '0' && s[pos] <= '9';
                positive |= s[pos] > '0' && s[pos] <= '9';
            }
        fields++;
    }
    return fields >= 3 && digits && positive;
}

static Task *parse_tasks(size_t *count, long *lines)
{
    size_t cap = 64, n = 0;
    Task *tasks = malloc(cap * sizeof *tasks);
    int pending = 0;
    long lineno = 0;
    const char *s = g_data, *end = g_data + g_size;
    *lines = 0;
    for (const char *p = s; p < end; p++) *lines += *p == '\n';
    *lines += g_size > 0 && end[-1] != '\n';
    for (const char *line = s; line <= end; ) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = (size_t)((nl ? nl : end) - line), blank = 1;
        lineno++;
        while (len > 0 && line[len - 1] == '\r') len--;
        check_line(line, len);
        for (size_t i = 0; i < len && blank; i++) blank = white(line[i]);
        if (blank) {
        } else if (len >= 2 && line[0] == '#' && line[1] == '@') {
            if (pending || !meta_ok(line, len))
                hand_over();
            pending = 1;
        } else if (line[0] != '#') {
            char *words = malloc(len + 1);
            size_t nwords;
            if (split_words(line, len, words, &nwords) != 0)
                hand_over();
            if (nwords > 0) {
                char **argv = malloc((nwords + 1) * sizeof *argv);
                for (size_t w = 0; w < nwords; w++) { argv[w] = words; words += strlen(words) + 1; }
                argv[nwords] = NULL;
                if (n == cap) tasks = realloc(tasks, (cap *= 2) * sizeof *tasks);
                tasks[n].argv = argv;
                tasks[n++].line = lineno;
                pending = 0;
            } else {
                free(words);
            }
        }
        if (nl == NULL) break;
        line = nl + 1;
    }
    if (pending)
        hand_over();
    *count = n;
    return tasks;
}

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
        if (executable(full))
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
        const char *slash = strrchr(g_argv[0], '/');
        fprintf(stderr, "%s: exec %s: %d: %s\n", slash ? slash + 1 : g_argv[0], argv[0], err,
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

static void drain(Run *r, size_t keep)  /* reap children until at most keep are running */
{
    while (r->nrunning > keep) {
        int status;
        struct rusage use;
        pid_t pid = wait4(-1, &status, 0, &use);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            return;
        sigprocmask(SIG_BLOCK, &r->forwarded, NULL);
        for (size_t i = 0; i < r->slots; i++) {
            if (r->running[i].pid != pid)
                continue;
            Child c = r->running[i];
            r->running[i].pid = 0;
            r->nrunning--;
            sigprocmask(SIG_UNBLOCK, &r->forwarded, NULL);
            report(r, &c, status, pid);
            free(c.argv);
            break;
        }
        sigprocmask(SIG_UNBLOCK, &r->forwarded, NULL);
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
    size_t size = strlen(g_argv[0]) + 512;
    char *text = malloc(size);
    int n = snprintf(text, size, "[cluster-summary stat=\"%s\", lines=%ld, tasks=%ld, succeeded=%ld, "
                     "failed=%ld, extra=0, duration=%.3f, start=\"%s\", pid=%d, app=\"%s\"]\n",
                     code != 0 || stopped ? "fail" : "ok", lines, r->started, r->started - r->failed,
                     r->failed, now() - start, when, (int)getpid(), g_argv[0]);
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
    g_argv = argv;
    const char *pure = getenv("SHEAF_PURE_PYTHON");
    if (argc < 1 || (pure != NULL && strcmp(pure, "1") == 0))
        hand_over();
    parse_options(argc, argv, &opts);
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
    read_input(opts.input);
    size_t count;
    long lines;
    Task *tasks = parse_tasks(&count, &lines);
    signal(SIGPIPE, SIG_IGN);  /* as the Python interpreter: a closed stdout is an error, not death */
    if (opts.debug)
        fprintf(stderr, "%s: %zu tasks, %lld at once\n", PROG, count, opts.cpus);
    return run(&opts, tasks, count, lines);
}
