/* sheaf-cluster-c, reading: its options and its .in file as seqexec.py reads them, and the hand-over
 * to the Python sheaf-cluster of everything it does not run itself (policy: _cluster.c). */
#include "_cluster.h"

char **cluster_argv;
static char *g_data;                  /* the input text (kept to pass a consumed stdin on) */
static size_t g_size;
static int g_from_stdin;

/* ---- hand-over to the Python implementation ---------------------------------------------- */

int cluster_executable(const char *path)
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
    char *saved = cluster_argv[0];
    cluster_argv[0] = (char *)path;
    execv(path, cluster_argv);
    cluster_argv[0] = saved;
}

void cluster_hand_over(void)
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
    setenv("SHEAF_CLUSTER_ARGV0", cluster_argv[0], 1);
    if (given != NULL && *given)
        exec_python(given);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';  /* .../site-packages/sheaf/jobtools/_bin -> up six: the prefix */
            snprintf(guess, sizeof guess, "%s/../../../../../../bin/" PROG, self);
            if (cluster_executable(guess))
                exec_python(guess);
        }
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/bin:/usr/bin");
    for (char *dir = strtok(copy, ":"); dir != NULL; dir = strtok(NULL, ":")) {
        snprintf(guess, sizeof guess, "%s/" PROG, dir);
        if (cluster_executable(guess))
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
            cluster_hand_over();
        int n = CPU_COUNT(&set);
        return n > 0 ? n : 1;
    }
    if (!all_digits(text) || number(text) < 1)
        cluster_hand_over();
    return number(text);
}

static void option(Options *o, char flag, const char *value, const char **cpus)
{
    switch (flag) {
    case 'd': o->debug++; break;
    case 'e': case 'f':
        if ((flag == 'e' && o->fail_hard) || (flag == 'f' && o->always_succeed))
            cluster_hand_over();  /* -e and -f together: Python's usage error */
        if (flag == 'e') o->always_succeed = 1; else o->fail_hard = 1;
        break;
    case 'S':
        if (!all_digits(value) || number(value) < 1 || number(value) > 255)
            cluster_hand_over();
        o->success[number(value)] = 1;
        break;
    case 's': o->status_file = value; break;
    case 'n': *cpus = value; break;
    default: cluster_hand_over();  /* -h, -R and unknown options */
    }
}

void cluster_parse_options(int argc, char **argv, Options *o)
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
                cluster_hand_over();
            if (word[j + 1]) option(o, flag, word + j + 1, &cpus);
            else if (i + 1 < argc) option(o, flag, argv[++i], &cpus);
            else cluster_hand_over();
            break;
        }
        i++;
    }
    if (argc - i > 1 || (progress != NULL && *progress) || getenv("SEQEXEC_SETUP") != NULL
        || getenv("SEQEXEC_CLEANUP") != NULL)
        cluster_hand_over();
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

void cluster_read_input(const char *path)
{
    g_from_stdin = path == NULL;
    int fd = path == NULL ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_all(fd) != 0)
        cluster_hand_over();  /* Python reports it (exit 3) */
    if (fd > 0)
        close(fd);
    if (memchr(g_data, '\0', g_size) != NULL)
        cluster_hand_over();  /* no C string holds it; Python reports the task as one that cannot start */
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
        cluster_hand_over();
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

Task *cluster_parse_tasks(size_t *count, long *lines)
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
                cluster_hand_over();
            pending = 1;
        } else if (line[0] != '#') {
            char *words = malloc(len + 1);
            size_t nwords;
            if (split_words(line, len, words, &nwords) != 0)
                cluster_hand_over();
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
        cluster_hand_over();
    *count = n;
    return tasks;
}
