/* sheaf.backends._cspawn: the local backend's job spawner, in a POSIX thread that never takes the GIL.
 *
 * Why: the Python spawner thread (sheaf.backends._spawn.Spawner) lets the engine loop run while a
 * posix_spawn waits for the child's execve, but every spawn still costs the engine's interpreter
 * the thread's Python work (ctypes set-up of argv, environment and file actions) and two GIL
 * hand-offs; with two slots of /bin/true that was about a quarter of the engine's GIL time
 * (benchmarks/engine_throughput.py, py-spy --gil).  Here the engine thread only copies the request
 * into C strings (submit) and later takes the results (results); the thread spawns on its own.
 *
 * Contract, the same as sheaf.backends._libcspawn (tests/backends/test_spawn_paths.py compares them):
 * argv and the complete environment as given, argv[0] looked up in PATH (posix_spawnp) when it has
 * no slash; the working directory a file action run before the opens; stdin opened read-only;
 * stdout and stderr created and truncated, mode 0644 (stderr a dup of stdout when the paths are
 * equal); the child leads a new process group (POSIX_SPAWN_SETPGROUP, group 0); signal mask and
 * dispositions as the spawning thread has them (it is created with the creating thread's mask).
 * With CPU ids, the thread pins itself to them around the call (the child inherits the mask) and
 * restores its own after.  A pidfd (pidfd_open) is opened for each child before it is reported.
 *
 * Python API:
 *   s = Spawner()                     starts the thread
 *   s.fileno()                        an eventfd, readable while results wait
 *   s.submit(tag, argv, env, cwd, stdout, stderr, stdin, cpus)
 *                                     tag an int; argv a list of str; env a dict of str; cpus None
 *                                     or a list of ints.  Raises ValueError for an embedded NUL or
 *                                     an illegal variable name (as os.posix_spawn does), before
 *                                     anything is queued.
 *   s.results()                       [(tag, pid, pidfd, errno, since)], in order; errno 0 when the
 *                                     child started, else pid and pidfd are -1; since is
 *                                     CLOCK_MONOTONIC (time.monotonic()) at the spawn
 *   s.close()                         spawns what was submitted, stops the thread, returns the
 *                                     results not yet taken, closes the eventfd
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef struct request {
    struct request *next;
    long long tag;
    char **argv, **envp;  /* NULL-terminated, each string malloc'd */
    char *cwd, *out, *err, *in;
    int pin;
    cpu_set_t cpus;
    /* the outcome */
    int pid, pidfd, error;
    double since;
} request;

typedef struct {
    PyObject_HEAD
    pthread_t thread;
    int running;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    request *todo, *todo_tail, *done, *done_tail;
    int closing;
    int wakeup;
} Spawner;

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

static double monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spawn_one(request *r) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addchdir_np(&actions, r->cwd);
    posix_spawn_file_actions_addopen(&actions, 0, r->in, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (strcmp(r->out, r->err) == 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    else
        posix_spawn_file_actions_addopen(&actions, 2, r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  /* group 0: the child's own pid */
    cpu_set_t saved;
    int pinned = 0, err = 0;
    if (r->pin) {
        if (sched_getaffinity(0, sizeof saved, &saved) != 0 || sched_setaffinity(0, sizeof r->cpus, &r->cpus) != 0)
            err = errno;
        else
            pinned = 1;
    }
    pid_t pid = -1;
    r->since = monotonic_now();
    if (err == 0)
        err = (strchr(r->argv[0], '/') != NULL ? posix_spawn : posix_spawnp)(&pid, r->argv[0], &actions, &attr,
                                                                              r->argv, r->envp);
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    r->pid = r->pidfd = -1;
    r->error = err;
    if (err != 0)
        return;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {  /* no way to watch it: it must not run unwatched */
        r->error = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    r->pid = pid;
    r->pidfd = fd;
}

/* Append r to the list (head, tail); the caller holds the lock. */
static void append(request **head, request **tail, request *r) {
    r->next = NULL;
    if (*tail != NULL)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

static void *run(void *arg) {
    Spawner *s = arg;
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
        pthread_mutex_unlock(&s->lock);
        spawn_one(r);
        /* the strings are done with: only the outcome travels back */
        free_strings(r->argv);
        free_strings(r->envp);
        r->argv = r->envp = NULL;
        pthread_mutex_lock(&s->lock);
        append(&s->done, &s->done_tail, r);
        pthread_mutex_unlock(&s->lock);
        uint64_t one = 1;
        ssize_t ignored = write(s->wakeup, &one, sizeof one);
        (void)ignored;  /* a full counter is still readable: nothing is lost */
    }
}

/* A malloc'd copy of str's file-system encoding; NULL with an exception set (ValueError on a NUL). */
static char *c_string(PyObject *str) {
    PyObject *bytes = PyUnicode_EncodeFSDefault(str);
    if (bytes == NULL)
        return NULL;
    char *data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(bytes, &data, &size) < 0) {
        Py_DECREF(bytes);
        return NULL;
    }
    if ((size_t)size != strlen(data)) {
        Py_DECREF(bytes);
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return NULL;
    }
    char *copy = strdup(data);
    Py_DECREF(bytes);
    if (copy == NULL)
        PyErr_NoMemory();
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

static PyObject *spawner_submit(Spawner *s, PyObject *args) {
    long long tag;
    PyObject *argv, *env, *cwd, *out, *err, *in, *cpus;
    if (!PyArg_ParseTuple(args, "LOOUUUUO", &tag, &argv, &env, &cwd, &out, &err, &in, &cpus))
        return NULL;
    if (!s->running) {
        PyErr_SetString(PyExc_RuntimeError, "the spawner is closed");
        return NULL;
    }
    request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return PyErr_NoMemory();
    r->tag = tag;
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
    pthread_mutex_lock(&s->lock);
    append(&s->todo, &s->todo_tail, r);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    Py_RETURN_NONE;
}

static PyObject *take_results(Spawner *s) {
    uint64_t count;
    if (s->wakeup >= 0) {
        ssize_t ignored = read(s->wakeup, &count, sizeof count);  /* EAGAIN: nothing written since */
        (void)ignored;
    }
    pthread_mutex_lock(&s->lock);
    request *r = s->done;
    s->done = s->done_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    PyObject *list = PyList_New(0);
    while (r != NULL) {
        request *next = r->next;
        PyObject *item = list ? Py_BuildValue("(Liiid)", r->tag, r->pid, r->pidfd, r->error, r->since) : NULL;
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_CLEAR(list);  /* out of memory: the pidfds of what is left are closed, not leaked */
            if (r->pidfd >= 0)
                close(r->pidfd);
        }
        Py_XDECREF(item);
        free_request(r);
        r = next;
    }
    return list;
}

static PyObject *spawner_results(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    return take_results(s);
}

static void stop(Spawner *s) {
    if (!s->running)
        return;
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(s->thread, NULL);
    Py_END_ALLOW_THREADS
    s->running = 0;
}

static PyObject *spawner_close(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    stop(s);
    PyObject *left = take_results(s);
    if (s->wakeup >= 0) {
        close(s->wakeup);
        s->wakeup = -1;
    }
    return left;
}

static PyObject *spawner_fileno(Spawner *s, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromLong(s->wakeup);
}

static int spawner_init(Spawner *s, PyObject *args, PyObject *kwds) {
    static char *names[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", names))
        return -1;
    if (s->running) {
        PyErr_SetString(PyExc_RuntimeError, "the spawner is already started");
        return -1;
    }
    s->wakeup = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wakeup < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    int err = pthread_create(&s->thread, NULL, run, s);
    if (err != 0) {
        close(s->wakeup);
        s->wakeup = -1;
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    s->running = 1;
    return 0;
}

static PyObject *spawner_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds)) {
    Spawner *s = (Spawner *)type->tp_alloc(type, 0);
    if (s != NULL)
        s->wakeup = -1;
    return (PyObject *)s;
}

static void spawner_dealloc(Spawner *s) {
    if (s->running || s->wakeup >= 0) {
        PyObject *left = spawner_close(s, NULL);
        if (left != NULL) {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(left); i++) {
                int fd = (int)PyLong_AsLong(PyTuple_GET_ITEM(PyList_GET_ITEM(left, i), 2));
                if (fd >= 0)
                    close(fd);
            }
            Py_DECREF(left);
        }
        PyErr_Clear();
    }
    request *r = s->todo;
    while (r != NULL) {
        request *next = r->next;
        free_request(r);
        r = next;
    }
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef spawner_methods[] = {
    {"submit", (PyCFunction)spawner_submit, METH_VARARGS, "queue a spawn (see the module comment)"},
    {"results", (PyCFunction)spawner_results, METH_NOARGS, "the spawns done since the last call"},
    {"close", (PyCFunction)spawner_close, METH_NOARGS, "finish, stop the thread, return what is left"},
    {"fileno", (PyCFunction)spawner_fileno, METH_NOARGS, "the eventfd that is readable while results wait"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SpawnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sheaf.backends._cspawn.Spawner",
    .tp_basicsize = sizeof(Spawner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = spawner_new,
    .tp_init = (initproc)spawner_init,
    .tp_dealloc = (destructor)spawner_dealloc,
    .tp_methods = spawner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sheaf.backends._cspawn", "The local backend's spawner thread, in C.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cspawn(void) {
    if (PyType_Ready(&SpawnerType) < 0)
        return NULL;
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
